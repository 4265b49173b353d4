"""flow-autodiff against torch.autograd: every op with a gradient rule.

Each case is a function of float inputs, all marked `flow.requires_grad`,
whose loss is `sum(op(inputs) * r)` for a random `r` (so every element of
the op's result gets a different upstream gradient). The compiled function
returns the loss and one gradient per input; torch computes the same loss
with autograd from the same inputs.

Tolerances: f32 throughout, compared to torch's f32 at rtol 1e-4 and atol
1e-5 (relative to the largest gradient element). A backward op sums at most a
few hundred products here: its rounding is a few hundred f32 ulps (1.2e-7
each) at worst, a few ulps in practice, and Flow and torch sum in different
orders. A rule that is wrong is off by O(1).
"""

import numpy as np
import pytest

from conftest import require
from flowtest import tensor_type

flow = require("flow")
torch = require("torch")

RNG = np.random.default_rng(20261204)


def rand(shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def differentiate(body, inputs, result_shape, extra=()):
    """Compiles `body` (ops on %x0.. producing %y of `result_shape`) inside
    a loss `sum(%y * %r)`, with every input of `inputs` marked
    requires_grad and the integer arrays of `extra` passed after them as
    %i0.. (no gradient); returns the compiled module, which takes the
    inputs, `extra` and `r`."""
    args = [f"%x{i}: {tensor_type(x.shape, x.dtype)} {{flow.requires_grad}}"
            for i, x in enumerate(inputs)]
    args += [f"%i{i}: {tensor_type(x.shape, x.dtype)}"
             for i, x in enumerate(extra)]
    rt = tensor_type(result_shape, np.float32)
    args.append(f"%r: {rt}")
    axes = ", ".join(str(a) for a in range(len(result_shape)))
    text = (f"func.func @main({', '.join(args)}) -> tensor<f32> {{\n"
            f"{body}\n"
            f"  %p = flow.mul %y, %r : ({rt}, {rt}) -> {rt}\n"
            f"  %l = flow.reduce_sum %p [{axes}] : {rt} -> tensor<f32>\n"
            f"  return %l : tensor<f32>\n}}\n")
    return flow.compile_mlir(text)


def check(body, inputs, fn, extra=(), rtol=1e-4, atol=1e-5):
    """Compares Flow's loss and gradients for `body` with torch's for `fn`
    (a function of torch tensors: the inputs, then `extra`)."""
    tensors = [torch.tensor(x, requires_grad=True) for x in inputs]
    y = fn(*tensors, *[torch.tensor(e) for e in extra])
    r = rand(tuple(y.shape))
    loss = (y * torch.tensor(r)).sum()
    loss.backward()
    module = differentiate(body, inputs, tuple(y.shape), extra)
    out = module(*inputs, *extra, r)
    assert len(out) == 1 + len(inputs)
    np.testing.assert_allclose(out[0], loss.detach().numpy(), rtol=rtol,
                               atol=atol)
    for i, (got, t) in enumerate(zip(out[1:], tensors)):
        want = t.grad.numpy() if t.grad is not None else np.zeros_like(
            inputs[i])
        assert got.shape == want.shape
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale,
                                   err_msg=f"gradient of input {i}")


def T(x):
    return tensor_type(x.shape, x.dtype)


# --- element-wise unary ops -------------------------------------------------

UNARY = {
    "neg": (lambda: rand((5, 7)), torch.neg),
    "abs": (lambda: rand((5, 7)), torch.abs),
    "exp": (lambda: rand((5, 7)), torch.exp),
    "log": (lambda: rand((5, 7), 0.1, 4), torch.log),
    "sqrt": (lambda: rand((5, 7), 0.1, 4), torch.sqrt),
    "rsqrt": (lambda: rand((5, 7), 0.1, 4), torch.rsqrt),
    "tanh": (lambda: rand((5, 7)), torch.tanh),
    "sin": (lambda: rand((5, 7)), torch.sin),
    "cos": (lambda: rand((5, 7)), torch.cos),
    "floor": (lambda: rand((5, 7)), torch.floor),
    "ceil": (lambda: rand((5, 7)), torch.ceil),
    "round": (lambda: rand((5, 7)), torch.round),
    "erf": (lambda: rand((5, 7)), torch.erf),
    "sigmoid": (lambda: rand((5, 7)), torch.sigmoid),
    "relu": (lambda: rand((5, 7)), torch.relu),
    "silu": (lambda: rand((5, 7)), torch.nn.functional.silu),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    make, fn = UNARY[op]
    x = make()
    check(f"  %y = flow.{op} %x0 : {T(x)}", [x], fn)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    x = rand((6, 9), -4, 4)
    attr = " approximate = tanh" if approximate == "tanh" else ""
    check(f"  %y = flow.gelu %x0{attr} : {T(x)}", [x],
          lambda t: torch.nn.functional.gelu(t, approximate=approximate))


def test_cast_through_f64():
    x = rand((4, 6))
    t64 = T(x).replace("f32", "f64")
    body = (f"  %d = flow.cast %x0 : {T(x)} to {t64}\n"
            f"  %e = flow.exp %d : {t64}\n"
            f"  %y = flow.cast %e : {t64} to {T(x)}")
    check(body, [x], lambda t: torch.exp(t.double()).float())


# --- element-wise binary ops, with broadcasting -----------------------------

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": torch.pow,
}

SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)),
          ((1,), (2, 3))]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(op, shapes):
    lo = 0.2 if op in ("pow", "div") else -2.0
    a, b = rand(shapes[0], lo, 2), rand(shapes[1], lo, 2)
    out = np.broadcast_shapes(a.shape, b.shape)
    body = (f"  %y = flow.{op} %x0, %x1 : ({T(a)}, {T(b)}) -> "
            f"{tensor_type(out, np.float32)}")
    check(body, [a, b], BINARY[op])


def test_maximum_ties_split_the_gradient():
    a = np.array([[1.0, 2.0, 3.0]], np.float32)
    b = np.array([[1.0, 5.0, 3.0]], np.float32)
    body = f"  %y = flow.maximum %x0, %x1 : ({T(a)}, {T(b)}) -> {T(a)}"
    check(body, [a, b], torch.maximum)


def test_select():
    c = RNG.integers(0, 2, size=(3, 4)).astype(np.bool_)
    a, b = rand((3, 4)), rand((4,))
    body = (f"  %c = flow.cast %i0 : {tensor_type(c.shape, np.int32)} to "
            f"{tensor_type(c.shape, np.bool_)}\n"
            f"  %y = flow.select %c, %x0, %x1 : ({tensor_type(c.shape, np.bool_)}"
            f", {T(a)}, {T(b)}) -> {T(a)}")
    check(body, [a, b], lambda x, y, m: torch.where(m.bool(), x, y),
          extra=[c.astype(np.int32)])


# --- matrix products --------------------------------------------------------

MATMULS = [
    # (lhs shape, rhs shape, attributes)
    ((4, 6), (6, 5), ""),
    ((6, 4), (6, 5), "transpose_lhs"),
    ((4, 6), (5, 6), "transpose_rhs"),
    ((6, 4), (5, 6), "transpose_lhs, transpose_rhs"),
    ((2, 3, 6), (6, 5), ""),                  # a batch against a weight
    ((2, 3, 6), (5, 6), "transpose_rhs"),     # nn.Linear's layout
    ((2, 3, 4, 6), (2, 1, 6, 5), ""),         # batch broadcast
    ((2, 6, 3), (2, 6, 5), "transpose_lhs"),
]


@pytest.mark.parametrize("lhs,rhs,attrs", MATMULS,
                         ids=[f"{l}x{r}-{a or 'plain'}" for l, r, a in MATMULS])
def test_matmul(lhs, rhs, attrs):
    a, b = rand(lhs), rand(rhs)
    ta, tb = "transpose_lhs" in attrs, "transpose_rhs" in attrs

    def fn(x, y):
        return torch.matmul(x.transpose(-1, -2) if ta else x,
                            y.transpose(-1, -2) if tb else y)
    out = tuple(fn(torch.tensor(a), torch.tensor(b)).shape)
    attr = f" {{{attrs}}}" if attrs else ""
    body = (f"  %y = flow.matmul %x0, %x1{attr} : ({T(a)}, {T(b)}) -> "
            f"{tensor_type(out, np.float32)}")
    check(body, [a, b], fn)


# --- reductions and normalizations ------------------------------------------

@pytest.mark.parametrize("op,axes,keepdims", [
    ("reduce_sum", [1], False), ("reduce_sum", [0, 2], True),
    ("reduce_mean", [2], False), ("reduce_mean", [0, 1], True),
    ("reduce_max", [1], False), ("reduce_max", [0, 2], True)])
def test_reductions(op, axes, keepdims):
    x = rand((3, 4, 5))
    ref = {"reduce_sum": torch.sum, "reduce_mean": torch.mean,
           "reduce_max": torch.amax}[op]
    fn = lambda t: ref(t, dim=axes, keepdim=keepdims)
    out = tuple(fn(torch.tensor(x)).shape)
    kd = " {keepdims}" if keepdims else ""
    body = (f"  %y = flow.{op} %x0 {axes}{kd} : {T(x)} -> "
            f"{tensor_type(out, np.float32)}")
    check(body, [x], fn)


def test_reduce_max_ties_share_the_gradient():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
    body = f"  %y = flow.reduce_max %x0 [1] : {T(x)} -> tensor<2xf32>"
    check(body, [x], lambda t: torch.amax(t, dim=1))


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False),
                                               (False, True), (True, True)])
def test_cumsum(exclusive, reverse):
    x = rand((3, 6))

    def fn(t):
        s = torch.flip(t, [1]) if reverse else t
        c = torch.cumsum(s, 1)
        if exclusive:
            c = c - s
        return torch.flip(c, [1]) if reverse else c
    flags = [f for f, on in (("exclusive", exclusive), ("reverse", reverse))
             if on]
    attr = f" {{{', '.join(flags)}}}" if flags else ""
    check(f"  %y = flow.cumsum %x0 axis = 1{attr} : {T(x)}", [x], fn)


@pytest.mark.parametrize("op,axis", [("softmax", 1), ("softmax", 0),
                                     ("log_softmax", 1), ("log_softmax", 0)])
def test_softmax(op, axis):
    x = rand((4, 7), -3, 3)
    ref = getattr(torch, op)
    check(f"  %y = flow.{op} %x0 axis = {axis} : {T(x)}", [x],
          lambda t: ref(t, axis))


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("axis", [1, 2])
def test_layer_norm(affine, axis):
    x = rand((2, 3, 8))
    shape = x.shape[axis:]
    w, b = rand(shape, 0.5, 1.5), rand(shape)
    inputs, operands, types = [x], "", [T(x)]
    if affine in ("weight", "both"):
        inputs.append(w)
        operands += " weight %x1"
        types.append(T(w))
    if affine == "both":
        inputs.append(b)
        operands += " bias %x2"
        types.append(T(b))
    body = (f"  %y = flow.layer_norm %x0{operands} axis = {axis} "
            f"epsilon = 1.0e-05 : ({', '.join(types)}) -> {T(x)}")

    def fn(t, *wb):
        return torch.nn.functional.layer_norm(
            t, shape, wb[0] if wb else None, wb[1] if len(wb) > 1 else None,
            1e-5)
    check(body, inputs, fn)


@pytest.mark.parametrize("weighted", [False, True])
def test_rms_norm(weighted):
    x, w = rand((3, 2, 8)), rand((8,), 0.5, 1.5)
    if weighted:
        body = (f"  %y = flow.rms_norm %x0 weight %x1 axis = 2 "
                f"epsilon = 1.0e-06 : ({T(x)}, {T(w)}) -> {T(x)}")
        inputs = [x, w]
    else:
        body = (f"  %y = flow.rms_norm %x0 axis = 2 epsilon = 1.0e-06 : "
                f"({T(x)}) -> {T(x)}")
        inputs = [x]

    def fn(t, *ws):
        r = torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)
        return t * r * ws[0] if ws else t * r
    check(body, inputs, fn)


def test_batch_norm_inference_form():
    x = rand((2, 3, 4, 5))
    scale, bias, mean = rand((3,)), rand((3,)), rand((3,))
    var = rand((3,), 0.5, 2)
    v = T(scale)
    body = (f"  %y = flow.batch_norm %x0, %x1, %x2, %x3, %x4 epsilon = 1.0e-05"
            f" : ({T(x)}, {v}, {v}, {v}, {v}) -> {T(x)}")
    col = lambda v: v.reshape(3, 1, 1)  # noqa: E731
    check(body, [x, scale, bias, mean, var],
          lambda t, s, b, m, va: (t - col(m)) * torch.rsqrt(col(va) + 1e-5)
          * col(s) + col(b))


# --- convolutions and pooling -------------------------------------------------

CONVS = [
    # (input shape, weight shape, strides, padding [t, l, b, r], dilations,
    #  groups, bias)
    ((2, 3, 7, 7), (4, 3, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True),
    ((2, 3, 8, 9), (4, 3, 3, 3), [2, 2], [1, 1, 1, 1], [1, 1], 1, False),
    ((1, 4, 9, 8), (6, 2, 3, 2), [2, 1], [0, 1, 2, 0], [1, 2], 2, True),
    ((2, 4, 6, 6), (4, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 4, False),
    ((1, 2, 11, 11), (3, 2, 2, 2), [3, 3], [0, 0, 0, 0], [2, 2], 1, True),
    ((1, 2, 5, 5), (2, 2, 1, 1), [1, 1], [3, 3, 3, 3], [1, 1], 1, False),
]


@pytest.mark.parametrize("case", CONVS, ids=[f"conv{i}" for i in
                                             range(len(CONVS))])
def test_conv2d(case):
    xs, ws, strides, pad, dil, groups, with_bias = case
    x, w, b = rand(xs), rand(ws, -0.5, 0.5), rand((ws[0],))

    def fn(t, wt, *bt):
        t = torch.nn.functional.pad(t, (pad[1], pad[3], pad[0], pad[2]))
        return torch.nn.functional.conv2d(t, wt, bt[0] if bt else None,
                                          strides, 0, dil, groups)
    inputs = [x, w, b] if with_bias else [x, w]
    out = tuple(fn(*[torch.tensor(v) for v in inputs]).shape)
    operands = "%x0, %x1, %x2" if with_bias else "%x0, %x1"
    types = ", ".join(T(v) for v in inputs)
    body = (f"  %y = flow.conv2d {operands} strides = {strides} padding = "
            f"{pad} dilations = {dil} groups = {groups} : ({types}) -> "
            f"{tensor_type(out, np.float32)}")
    check(body, inputs, fn)


POOLS = [
    # (kernel, strides, padding, ceil_mode, count_include_pad)
    ([2, 2], [2, 2], [0, 0, 0, 0], False, True),
    ([3, 3], [2, 2], [1, 1, 1, 1], False, True),
    ([3, 3], [2, 2], [1, 1, 1, 1], False, False),
    ([3, 2], [2, 2], [1, 0, 1, 0], True, False),
    ([3, 3], [1, 1], [1, 1, 1, 1], False, True),
]


@pytest.mark.parametrize("case", POOLS, ids=[f"pool{i}" for i in
                                             range(len(POOLS))])
def test_avg_pool2d(case):
    k, s, pad, ceil, include = case
    x = rand((2, 3, 7, 8))
    fn = lambda t: torch.nn.functional.avg_pool2d(  # noqa: E731
        t, k, s, [pad[0], pad[1]], ceil, include)
    out = tuple(fn(torch.tensor(x)).shape)
    flags = [f for f, on in (("ceil_mode", ceil),
                             ("count_include_pad", include)) if on]
    attr = f" {{{', '.join(flags)}}}" if flags else ""
    body = (f"  %y = flow.avg_pool2d %x0 kernel = {k} strides = {s} padding = "
            f"{pad}{attr} : {T(x)} -> {tensor_type(out, np.float32)}")
    check(body, [x], fn)


MAX_POOLS = [(case, 1) for case in POOLS] + [
    (case, 2) for case in POOLS if not case[3]]  # dilated, without ceil_mode


@pytest.mark.parametrize("case,dilation", MAX_POOLS,
                         ids=[f"pool{i}" for i in range(len(MAX_POOLS))])
def test_max_pool2d(case, dilation):
    k, s, pad, ceil, _ = case
    x = rand((2, 3, 9, 8))
    fn = lambda t: torch.nn.functional.max_pool2d(  # noqa: E731
        t, k, s, [pad[0], pad[1]], dilation, ceil)
    out = tuple(fn(torch.tensor(x)).shape)
    attr = " {ceil_mode}" if ceil else ""
    body = (f"  %y = flow.max_pool2d %x0 kernel = {k} strides = {s} padding = "
            f"{pad} dilations = [{dilation}, {dilation}]{attr} : {T(x)} -> "
            f"{tensor_type(out, np.float32)}")
    check(body, [x], fn)


def test_max_pool2d_ties_go_to_the_first_tap():
    # Overlapping windows over equal values: each window's gradient goes to
    # its first tap holding the maximum, as torch's recorded indices do.
    x = np.ones((1, 1, 5, 5), np.float32)
    x[0, 0, 2, 2] = 3.0
    fn = lambda t: torch.nn.functional.max_pool2d(t, 3, 1, 1)  # noqa: E731
    body = (f"  %y = flow.max_pool2d %x0 kernel = [3, 3] strides = [1, 1] "
            f"padding = [1, 1, 1, 1] dilations = [1, 1] : {T(x)} -> {T(x)}")
    check(body, [x], fn)


# --- data movement ------------------------------------------------------------

def test_reshape_transpose_broadcast():
    x = rand((2, 6))
    body = (f"  %a = flow.reshape %x0 : {T(x)} -> tensor<2x3x2xf32>\n"
            f"  %b = flow.transpose %a [2, 0, 1] : tensor<2x3x2xf32> -> "
            f"tensor<2x2x3xf32>\n"
            f"  %y = flow.broadcast_to %b : tensor<2x2x3xf32> -> "
            f"tensor<4x2x2x3xf32>")
    check(body, [x], lambda t: t.reshape(2, 3, 2).permute(2, 0, 1)
          .expand(4, 2, 2, 3))


def test_concat():
    a, b, c = rand((2, 3)), rand((2, 1)), rand((2, 4))
    body = (f"  %y = flow.concat %x0, %x1, %x2 axis = 1 : ({T(a)}, {T(b)}, "
            f"{T(c)}) -> tensor<2x8xf32>")
    check(body, [a, b, c], lambda x, y, z: torch.cat([x, y, z], 1))


@pytest.mark.parametrize("starts,limits,strides", [
    ([1, 0], [3, 5], [1, 1]),
    ([0, 1], [4, 7], [2, 3]),     # the last stride's zeros run past the end
    ([1, 2], [4, 6], [3, 2]),
])
def test_slice(starts, limits, strides):
    x = rand((4, 7))
    ref = lambda t: t[starts[0]:limits[0]:strides[0],
                      starts[1]:limits[1]:strides[1]]
    out = tuple(ref(torch.tensor(x)).shape)
    body = (f"  %y = flow.slice %x0 starts = {starts} limits = {limits} "
            f"strides = {strides} : {T(x)} -> {tensor_type(out, np.float32)}")
    check(body, [x], ref)


def test_pad_and_reverse():
    x = rand((3, 4))
    body = (f"  %a = flow.pad %x0 low = [1, 0] high = [2, 3] value = 0.5 : "
            f"{T(x)} -> tensor<6x7xf32>\n"
            f"  %y = flow.reverse %a axes = [0, 1] : tensor<6x7xf32>")
    check(body, [x], lambda t: torch.flip(
        torch.nn.functional.pad(t, (0, 3, 1, 2), value=0.5), [0, 1]))


@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis):
    table = rand((5, 6))
    ids = RNG.integers(0, table.shape[axis], size=(3, 4)).astype(np.int64)
    ids[0, :2] = ids[1, 0]  # repeated indices sum their gradients
    out = list(table.shape)
    out[axis:axis + 1] = ids.shape
    body = (f"  %y = flow.gather %x0[%i0] axis = {axis} : ({T(table)}, "
            f"{T(ids)}) -> {tensor_type(tuple(out), np.float32)}")

    def fn(t, i):
        return (t[i] if axis == 0 else t[:, i])
    check(body, [table], fn, extra=[ids])


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements(axis):
    x = rand((4, 5))
    ids = RNG.integers(0, x.shape[axis], size=(3, 4) if axis == 0 else (4, 3))
    ids = ids.astype(np.int64)
    body = (f"  %y = flow.gather_elements %x0[%i0] axis = {axis} : ({T(x)}, "
            f"{T(ids)}) -> {tensor_type(ids.shape, np.float32)}")
    check(body, [x], lambda t, i: torch.gather(t, axis, i), extra=[ids])


# --- whole functions ----------------------------------------------------------

def test_mlp_cross_entropy():
    """A two-layer MLP with softmax cross-entropy (labels as one-hot rows):
    the loss a training step differentiates, and every parameter's
    gradient."""
    x = rand((8, 12))
    w1, b1 = rand((12, 16), -0.5, 0.5), rand((16,), -0.1, 0.1)
    w2, b2 = rand((16, 5), -0.5, 0.5), rand((5,), -0.1, 0.1)
    labels = RNG.integers(0, 5, size=8)
    onehot = np.eye(5, dtype=np.float32)[labels]
    text = f"""
func.func @main(%x: {T(x)}, %w1: {T(w1)} {{flow.requires_grad}},
                %b1: {T(b1)} {{flow.requires_grad}},
                %w2: {T(w2)} {{flow.requires_grad}},
                %b2: {T(b2)} {{flow.requires_grad}},
                %t: {T(onehot)}) -> tensor<f32> {{
  %h0 = flow.matmul %x, %w1 : ({T(x)}, {T(w1)}) -> tensor<8x16xf32>
  %h1 = flow.add %h0, %b1 : (tensor<8x16xf32>, {T(b1)}) -> tensor<8x16xf32>
  %h = flow.relu %h1 : tensor<8x16xf32>
  %z0 = flow.matmul %h, %w2 : (tensor<8x16xf32>, {T(w2)}) -> tensor<8x5xf32>
  %z = flow.add %z0, %b2 : (tensor<8x5xf32>, {T(b2)}) -> tensor<8x5xf32>
  %lp = flow.log_softmax %z axis = 1 : tensor<8x5xf32>
  %picked = flow.mul %lp, %t : (tensor<8x5xf32>, {T(onehot)}) -> tensor<8x5xf32>
  %s = flow.reduce_mean %picked [0, 1] : tensor<8x5xf32> -> tensor<f32>
  %n = flow.constant dense<-5.0> : tensor<f32>
  %l = flow.mul %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}}
"""
    module = flow.compile_mlir(text)
    inputs, outputs = module.signature()
    assert len(outputs) == 5 and outputs[1][1] == (12, 16), outputs
    out = module(x, w1, b1, w2, b2, onehot)
    params = [torch.tensor(p, requires_grad=True) for p in (w1, b1, w2, b2)]
    logits = torch.relu(torch.tensor(x) @ params[0] + params[1]) @ params[2] \
        + params[3]
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(labels))
    loss.backward()
    np.testing.assert_allclose(out[0], loss.item(), rtol=1e-5)
    for got, p in zip(out[1:], params):
        np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_a_value_used_twice_sums_its_gradients():
    x = rand((3, 4))
    body = (f"  %a = flow.mul %x0, %x0 : ({T(x)}, {T(x)}) -> {T(x)}\n"
            f"  %b = flow.exp %x0 : {T(x)}\n"
            f"  %y = flow.add %a, %b : ({T(x)}, {T(x)}) -> {T(x)}")
    check(body, [x], lambda t: t * t + torch.exp(t))
