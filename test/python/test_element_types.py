"""Every element type Flow computes in: f64, signed (i8, i16) and unsigned
(ui8, ui16, ui32, ui64) integers, end to end and through both importers.

Integers are compared exactly against numpy (wrap-around arithmetic, and the
division rules flow.div documents: truncation, x / 0 = 0); f64 against
numpy's own f64 results to rtol 1e-13 (libm's exp and log are within an ulp
or two). The values include each type's extremes, where a signed reading of
an unsigned type (or negating the smallest signed value) would give a wrong
answer.
"""

import numpy as np
import pytest

from conftest import require

import flow  # noqa: E402

INT_TYPES = ["i8", "i16", "ui8", "ui16", "ui32", "ui64"]
NUMPY = {"i8": np.int8, "i16": np.int16, "ui8": np.uint8, "ui16": np.uint16,
         "ui32": np.uint32, "ui64": np.uint64, "f64": np.float64}


def extremes(dtype, n=12, seed=0):
    """`n` values of `dtype`: its smallest, largest, 0, 1 and random ones."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    rest = rng.integers(info.min, info.max, n - 4, dtype=dtype,
                        endpoint=True)
    return np.concatenate([np.array([info.min, info.max, 0, 1], dtype),
                           rest]).astype(dtype)


def binary_program(t, n):
    ty = f"tensor<{n}x{t}>"
    ops = [("add", ty), ("sub", ty), ("mul", ty), ("div", ty),
           ("maximum", ty), ("minimum", ty)]
    lines = [f"  %{op} = flow.{op} %a, %b : ({ty}, {ty}) -> {rt}"
             for op, rt in ops]
    lines.append(f"  %lt = flow.compare lt, %a, %b : ({ty}, {ty}) -> "
                 f"tensor<{n}xi1>")
    lines.append(f"  %ge = flow.compare ge, %a, %b : ({ty}, {ty}) -> "
                 f"tensor<{n}xi1>")
    names = [op for op, _ in ops] + ["lt", "ge"]
    types = [rt for _, rt in ops] + [f"tensor<{n}xi1>"] * 2
    return (f"func.func @main(%a: {ty}, %b: {ty}) -> ({', '.join(types)}) "
            "{\n" + "\n".join(lines) + "\n  return " +
            ", ".join(f"%{x}" for x in names) + " : " + ", ".join(types) +
            "\n}\n")


@pytest.mark.parametrize("t", INT_TYPES)
def test_integer_arithmetic_and_comparisons(t):
    dtype = NUMPY[t]
    a = extremes(dtype, 16, seed=1)
    b = np.roll(extremes(dtype, 16, seed=2), 3)
    got = flow.compile_mlir(binary_program(t, a.size))(a, b)
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, 1, b).astype(dtype)
        if np.issubdtype(dtype, np.signedinteger):
            # Truncating division; MIN / -1 wraps to MIN.
            q = np.where(b == -1, (0 - a.astype(np.int64)).astype(dtype),
                         np.trunc(a.astype(np.float64) /
                                  safe.astype(np.float64)).astype(dtype))
        else:
            q = a // safe
        want = [a + b, a - b, a * b, np.where(b == 0, 0, q).astype(dtype),
                np.maximum(a, b), np.minimum(a, b), a < b, a >= b]
    for name, g, w in zip(["add", "sub", "mul", "div", "max", "min", "lt",
                           "ge"], got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("t", INT_TYPES)
def test_integer_reductions_and_casts(t):
    dtype = NUMPY[t]
    x = extremes(dtype, 24, seed=3).reshape(4, 6)
    ty = f"tensor<4x6x{t}>"
    src = f"""
func.func @main(%x: {ty}) -> (tensor<4x{t}>, tensor<6xi64>, tensor<4x6xf32>,
                             tensor<4x6xi64>, tensor<4x6xf64>, {ty}) {{
  %m = flow.reduce_max %x [1] : {ty} -> tensor<4x{t}>
  %i = flow.argmin %x axis = 0 : {ty} -> tensor<6xi64>
  %f = flow.cast %x : {ty} to tensor<4x6xf32>
  %w = flow.cast %x : {ty} to tensor<4x6xi64>
  %d = flow.cast %x : {ty} to tensor<4x6xf64>
  %r = flow.relu %x : {ty}
  return %m, %i, %f, %w, %d, %r : tensor<4x{t}>, tensor<6xi64>,
      tensor<4x6xf32>, tensor<4x6xi64>, tensor<4x6xf64>, {ty}
}}
"""
    got = flow.compile_mlir(src)(x)
    want = [x.max(axis=1), np.argmin(x, axis=0), x.astype(np.float32),
            x.astype(np.int64) if x.dtype != np.uint64 else
            x.view(np.int64), x.astype(np.float64), np.maximum(x, 0)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_f64_math_and_narrowing():
    x = np.array([-745.2, -3.5, -1e-300, 0.0, 0.5, 1.0, 700.0, 1e300],
                 np.float64)
    src = """
func.func @main(%x: tensor<8xf64>) -> (tensor<8xf64>, tensor<8xf64>,
                                       tensor<8xf32>, tensor<8xi64>) {
  %e = flow.exp %x : tensor<8xf64>
  %t = flow.tanh %x : tensor<8xf64>
  %n = flow.cast %x : tensor<8xf64> to tensor<8xf32>
  %c = flow.constant dense<0.25> : tensor<f64>
  %s = flow.mul %x, %c : (tensor<8xf64>, tensor<f64>) -> tensor<8xf64>
  %i = flow.cast %s : tensor<8xf64> to tensor<8xi64>
  return %e, %t, %n, %i : tensor<8xf64>, tensor<8xf64>, tensor<8xf32>,
      tensor<8xi64>
}
"""
    e, t, n, i = flow.compile_mlir(src)(x)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(e, np.exp(x), rtol=1e-13)
        np.testing.assert_array_equal(n, x.astype(np.float32))
    np.testing.assert_allclose(t, np.tanh(x), rtol=1e-13)
    # f64 keeps what f32 would lose: 1e-300 is not flushed, 700 * 0.25 exact.
    assert e[2] == 1.0 and e[6] > 1e300
    np.testing.assert_array_equal(i[:7], np.trunc(x[:7] * 0.25))


def test_inputs_must_have_the_declared_type():
    src = """
func.func @main(%x: tensor<3xui8>) -> tensor<3xui8> {
  %y = flow.add %x, %x : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  return %y : tensor<3xui8>
}
"""
    m = flow.compile_mlir(src)
    np.testing.assert_array_equal(m(np.array([1, 200, 255], np.uint8))[0],
                                  np.array([2, 144, 254], np.uint8))
    with pytest.raises(flow.FlowError, match=r"expected ui8\[3\], got dtype int8"):
        m(np.array([1, 2, 3], np.int8))


def test_flow_run_reads_and_writes_every_type(tmp_path):
    """flow-compile and flow-run with .npy files of the new types (numpy
    writes int8 and uint8 as '|i1' and '|u1')."""
    from flowtest import compile_and_run
    src = """
func.func @main(%a: tensor<3xui8>, %b: tensor<2xf64>, %c: tensor<2xi8>,
                %d: tensor<2xui64>) -> (tensor<3xui8>, tensor<2xf64>,
                                        tensor<2xi8>, tensor<2xui64>) {
  %0 = flow.add %a, %a : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  %1 = flow.exp %b : tensor<2xf64>
  %2 = flow.neg %c : tensor<2xi8>
  %3 = flow.div %d, %d : (tensor<2xui64>, tensor<2xui64>) -> tensor<2xui64>
  return %0, %1, %2, %3 : tensor<3xui8>, tensor<2xf64>, tensor<2xi8>,
      tensor<2xui64>
}
"""
    a = np.array([1, 200, 255], np.uint8)
    b = np.array([0.0, 1.0])
    c = np.array([-128, 5], np.int8)
    d = np.array([2**64 - 1, 0], np.uint64)
    got = compile_and_run(src, [a, b, c, d], tmp_path)
    want = [a + a, np.exp(b), (-c.astype(np.int16)).astype(np.int8),
            np.array([1, 0], np.uint64)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


# ONNX -----------------------------------------------------------------------

def onnx_model(nodes, inputs, outputs, initializers=(), opset=17):
    onnx = require("onnx")
    from onnx import helper
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=list(initializers))
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", opset)])


def against_ort(model, feeds, exact=True):
    ort = require("onnxruntime")
    names = [i.name for i in model.graph.input]
    want = ort.InferenceSession(model.SerializeToString()).run(
        None, dict(zip(names, feeds)))
    got = flow.compile(model)(*feeds)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_onnx_uint8_image_preprocessing():
    """The usual front of an ONNX vision model: a uint8 image, cast to
    float and normalized; plus integer ops on the raw pixels."""
    onnx = require("onnx")
    from onnx import TensorProto, helper
    model = onnx_model(
        [helper.make_node("Cast", ["img"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Div", ["f", "scale"], ["y"]),
         helper.make_node("ReduceMax", ["img"], ["peak"], keepdims=0),
         helper.make_node("ReduceMin", ["img"], ["floor"], keepdims=0),
         helper.make_node("Sub", ["img", "img2"], ["wrap"]),
         helper.make_node("Greater", ["img", "img2"], ["brighter"])],
        [helper.make_tensor_value_info("img", TensorProto.UINT8, [2, 3, 4]),
         helper.make_tensor_value_info("img2", TensorProto.UINT8, [2, 3, 4])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         [("y", TensorProto.FLOAT), ("peak", TensorProto.UINT8),
          ("floor", TensorProto.UINT8), ("wrap", TensorProto.UINT8),
          ("brighter", TensorProto.BOOL)]],
        [onnx.numpy_helper.from_array(np.array(255, np.float32), "scale")])
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    img[0, 0, 0], img[1, 2, 3] = 0, 255
    img2 = rng.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    against_ort(model, [img, img2])


@pytest.mark.parametrize("elem,dtype", [(3, np.int8), (5, np.int16),
                                        (2, np.uint8), (13, np.uint64),
                                        (11, np.float64)])
def test_onnx_min_max_topk_at_the_extremes(elem, dtype):
    """ReduceMin, TopK (smallest) and ArgMin where the values include the
    type's smallest value (whose negation overflows) and, unsigned, 0;
    against numpy (onnxruntime lacks some of these kernels)."""
    onnx = require("onnx")
    from onnx import TensorProto, helper
    model = onnx_model(
        [helper.make_node("ReduceMin", ["x"], ["mn"], keepdims=0),
         helper.make_node("TopK", ["x", "k"], ["v", "i"], largest=0),
         helper.make_node("ArgMin", ["x"], ["am"], axis=1, keepdims=0)],
        [helper.make_tensor_value_info("x", elem, [3, 5])],
        [helper.make_tensor_value_info("mn", elem, None),
         helper.make_tensor_value_info("v", elem, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None),
         helper.make_tensor_value_info("am", TensorProto.INT64, None)],
        [onnx.numpy_helper.from_array(np.array([3], np.int64), "k")],
        opset=18)
    if np.issubdtype(dtype, np.integer):
        x = extremes(dtype, 15, seed=5).reshape(3, 5)
    else:
        x = np.array([[-np.inf, 3, -1e308, 0, 2], [5, 4, 3, 2, 1],
                      [1e-310, -0.5, 7, -7, 1]], dtype)
    mn, v, i, am = flow.compile(model)(x)
    order = np.argsort(x, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(mn, x.min())
    np.testing.assert_array_equal(i, order)
    np.testing.assert_array_equal(v, np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(am, np.argmin(x, axis=1))
    assert mn.dtype == v.dtype == dtype


def test_onnx_integer_pow():
    """Pow of integers, exact: wrap-around on overflow, negative exponents
    (0 unless the base is 1 or -1), and a float exponent (computed in f64
    and truncated, as ONNX's reference does)."""
    require("onnx")
    from onnx import TensorProto, helper
    model = onnx_model(
        [helper.make_node("Pow", ["a", "e"], ["p"]),
         helper.make_node("Pow", ["a", "f"], ["q"])],
        [helper.make_tensor_value_info("a", TensorProto.INT64, [10]),
         helper.make_tensor_value_info("e", TensorProto.INT64, [10]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [10])],
        [helper.make_tensor_value_info("p", TensorProto.INT64, None),
         helper.make_tensor_value_info("q", TensorProto.INT64, None)])
    a = np.array([2, 3, -3, 7, 1, -1, -1, 0, 5, 2], np.int64)
    e = np.array([10, 40, 3, 0, -5, -3, -4, 0, 27, 63], np.int64)
    f = np.array([0.5, 2, 3, 1.5, 2, 2, 3, 0, 4, 10], np.float32)
    want_p = []
    for base, exp in zip(a.tolist(), e.tolist()):
        if exp < 0:
            want_p.append(1 if base == 1 else (-1) ** (-exp) if base == -1
                          else 0)
        else:  # Python's exact power, wrapped to 64 bits
            r = (base ** exp) % (1 << 64)
            want_p.append(r - (1 << 64) if r >= 1 << 63 else r)
    got_p, got_q = flow.compile(model)(a, e, f)
    np.testing.assert_array_equal(got_p, np.array(want_p, np.int64))
    np.testing.assert_array_equal(
        got_q, np.power(a.astype(np.float64),
                        f.astype(np.float64)).astype(np.int64))


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_onnx_pad_modes(mode):
    onnx = require("onnx")
    from onnx import TensorProto, helper
    model = onnx_model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([0, 2, 1, 1, 0, 3]),
                                      "pads")], opset=19)
    x = np.random.default_rng(3).standard_normal((2, 3, 4), dtype=np.float32)
    got = flow.compile(model)(x)
    want = np.pad(x, [(0, 1), (2, 0), (1, 3)],
                  mode={"edge": "edge", "reflect": "reflect",
                        "wrap": "wrap"}[mode])
    np.testing.assert_array_equal(got, want)


def test_onnx_1d_pooling_and_integer_max_pool():
    require("onnx")
    from onnx import TensorProto, helper
    model = onnx_model(
        [helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3],
                          strides=[2], pads=[1, 1]),
         helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2],
                          ceil_mode=1, strides=[2]),
         helper.make_node("MaxPool", ["img"], ["im"], kernel_shape=[2, 2])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9]),
         helper.make_tensor_value_info("img", TensorProto.UINT8,
                                       [1, 2, 4, 4])],
        [helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("im", TensorProto.UINT8, None)])
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 9), dtype=np.float32)
    img = rng.integers(0, 256, (1, 2, 4, 4), dtype=np.uint8)
    img[0, 0, 0, 0] = 255  # would be the smallest read as signed
    against_ort(model, [x, img], exact=False)


# torch ----------------------------------------------------------------------

def test_torch_uint8_and_f64_inputs():
    torch = require("torch")

    class Model(torch.nn.Module):
        def forward(self, img, x, c):
            y = img.float() / 255.0
            return (y, torch.exp(x) * 2.0, img.amin(dim=1), img.max(),
                    c.to(torch.int16) * 300, torch.topk(c, 2, largest=False))

    img = torch.randint(0, 256, (2, 5, 3), dtype=torch.uint8)
    img[0, 0, 0] = 255
    img[1, 2, 1] = 0
    x = torch.randn(4, dtype=torch.float64) * 100
    c = torch.tensor([-128, 127, 0, -1, 5], dtype=torch.int8)
    model = Model()
    compiled = flow.compile(model, (img, x, c))
    got = compiled(img, x, c)
    want = model(img, x, c)
    got_leaves = torch.utils._pytree.tree_leaves(got)
    want_leaves = torch.utils._pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype == torch.float64:
            torch.testing.assert_close(g, w, rtol=1e-13, atol=0)
        else:
            torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("pad", ["reflect", "replicate", "circular"])
def test_torch_indexed_padding(pad):
    torch = require("torch")
    conv = torch.nn.Conv2d(2, 3, 3, padding=2, padding_mode=pad).eval()
    x = torch.randn(1, 2, 6, 7)
    compiled = flow.compile(conv, (x,))
    with torch.no_grad():
        want = conv(x)
    torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-5)
    pad1d = torch.nn.ReflectionPad1d((3, 1)) if pad == "reflect" else \
        torch.nn.ReplicationPad1d((3, 1)) if pad == "replicate" else \
        torch.nn.CircularPad1d((3, 1))
    y = torch.randn(2, 3, 5)
    torch.testing.assert_close(flow.compile(pad1d, (y,))(y), pad1d(y),
                               rtol=0, atol=0)
