"""Every compute op of the flow dialect, compiled for the CPU and run by
flow-run, against a numpy reference.

Tolerances: f32 results are checked to rtol 1e-5 (transcendentals and
reductions may round differently from numpy, by a few ulp); f16 to rtol 2e-3
and bf16 to rtol 2e-2 (one rounding of an f32 result is at most half an ulp:
4.9e-4 and 3.9e-3 relative; the rest covers inputs that round differently).
"""

import math

import numpy as np
import pytest

from flowtest import BF16, as_bf16, compile_and_run, tensor_type

RNG = np.random.default_rng(20261129)
erf = np.vectorize(math.erf, otypes=[np.float64])


def rand(shape, dtype=np.float32, lo=-2.0, hi=2.0):
    if np.issubdtype(np.dtype(dtype), np.integer):
        return RNG.integers(int(lo), int(hi), size=shape).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


def tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return dict(rtol=2e-3, atol=2e-3)
    if dtype == BF16:
        return dict(rtol=2e-2, atol=2e-2)
    if np.issubdtype(dtype, np.floating):
        return dict(rtol=1e-5, atol=1e-6)
    return dict(rtol=0, atol=0)


def function(body, inputs, result_types):
    args = ", ".join(f"%a{i}: {tensor_type(x.shape, x.dtype)}"
                     for i, x in enumerate(inputs))
    results = ", ".join(result_types)
    return f"func.func @main({args}) -> ({results}) {{\n{body}\n}}\n"


def check(tmp_path, body, inputs, expected, dtype=None):
    """Compiles `body` over inputs %a0.., runs it, compares to `expected`."""
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    types = [tensor_type(e.shape, dtype or e.dtype) for e in expected]
    text = function(body, inputs, types)
    results = compile_and_run(text, inputs, tmp_path)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        got = as_bf16(got)
        assert got.shape == want.shape, (got.shape, want.shape)
        tol = tolerance(dtype or want.dtype)
        np.testing.assert_allclose(got.astype(np.float64),
                                   want.astype(np.float64), **tol)


def unary(op, x, attrs=""):
    t = tensor_type(x.shape, x.dtype)
    return f"%r = flow.{op} %a0{attrs} : {t}\nreturn %r : {t}"


def gelu_ref(x, approximate):
    x = x.astype(np.float64)
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                      (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


UNARY = {
    "neg": (lambda: rand((37, 65)), lambda x: -x),
    "abs": (lambda: rand((37, 65)), np.abs),
    "exp": (lambda: rand((37, 65)), np.exp),
    "log": (lambda: rand((37, 65), lo=0.01, hi=10), np.log),
    "sqrt": (lambda: rand((37, 65), lo=0, hi=10), np.sqrt),
    "rsqrt": (lambda: rand((37, 65), lo=0.01, hi=10), lambda x: 1 / np.sqrt(x)),
    "tanh": (lambda: rand((37, 65)), np.tanh),
    "erf": (lambda: rand((37, 65), lo=-4, hi=4),
            np.vectorize(math.erf, otypes=[np.float64])),
    "sigmoid": (lambda: rand((37, 65), lo=-10, hi=10),
                lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
    "relu": (lambda: rand((37, 65)), lambda x: np.maximum(x, 0)),
    # Arguments as large as rotary position embeddings reach: the C
    # library's argument reduction keeps the error at f32 rounding.
    "sin": (lambda: rand((37, 65), lo=-3000, hi=3000), np.sin),
    "cos": (lambda: rand((37, 65), lo=-3000, hi=3000), np.cos),
    # Halves included: round goes to the even neighbour, as numpy does.
    "floor": (lambda: np.round(rand((37, 65), lo=-50, hi=50) * 2) / 2,
              np.floor),
    "ceil": (lambda: np.round(rand((37, 65), lo=-50, hi=50) * 2) / 2,
             np.ceil),
    "round": (lambda: np.round(rand((37, 65), lo=-50, hi=50) * 2) / 2,
              np.round),
    "silu": (lambda: rand((37, 65), lo=-8, hi=8),
             lambda x: x / (1 + np.exp(-x.astype(np.float64)))),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_f32(tmp_path, op):
    make, ref = UNARY[op]
    x = make()
    check(tmp_path, unary(op, x), [x], ref(x).astype(np.float32))


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(tmp_path, approximate):
    x = rand((16, 129), lo=-6, hi=6)
    attrs = " approximate = tanh" if approximate else ""
    check(tmp_path, unary("gelu", x, attrs), [x],
          gelu_ref(x, approximate).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "neg", "gelu"])
def test_unary_half(tmp_path, op, dtype):
    dtype = BF16 if dtype == "bf16" else np.dtype(dtype)
    x = rand((8, 33)).astype(dtype)
    xf = x.astype(np.float32)
    ref = gelu_ref(xf, False) if op == "gelu" else UNARY[op][1](xf)
    check(tmp_path, unary(op, x), [x], np.asarray(ref).astype(np.float32),
          dtype=dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_unary_int(tmp_path, dtype):
    x = rand((9, 7), dtype, lo=-100, hi=100)
    check(tmp_path, unary("abs", x), [x], np.abs(x))
    check(tmp_path, unary("neg", x), [x], -x)
    check(tmp_path, unary("relu", x), [x], np.maximum(x, 0))


CASTS = [
    (np.float32, np.float16), (np.float32, np.int32), (np.float32, np.int64),
    (np.int64, np.float32), (np.int32, np.int64), (np.int64, np.int32),
    (np.float32, np.bool_), (np.bool_, np.float32), (np.int32, np.bool_),
    (np.bool_, np.int64), (np.float16, np.float32), (np.float16, "bf16"),
    (np.float32, "bf16"),
]


@pytest.mark.parametrize("src,dst", CASTS, ids=lambda t: np.dtype(
    BF16 if t == "bf16" else t).name)
def test_cast(tmp_path, src, dst):
    dst = BF16 if dst == "bf16" else np.dtype(dst)
    if src == np.bool_:
        x = RNG.integers(0, 2, size=(5, 11)).astype(np.bool_)
    else:
        x = rand((5, 11), src, lo=-50, hi=50)
        if np.issubdtype(np.dtype(src), np.floating):
            x[0, :3] = [0.0, -0.0, 0.5]
    body = (f"%r = flow.cast %a0 : {tensor_type(x.shape, x.dtype)} to "
            f"{tensor_type(x.shape, dst)}\nreturn %r : {tensor_type(x.shape, dst)}")
    if np.issubdtype(np.dtype(dst), np.integer) and x.dtype.kind == "f":
        want = np.trunc(x.astype(np.float64)).astype(dst)
    else:
        want = x.astype(dst)
    check(tmp_path, body, [x], want, dtype=dst)


def binary(op, a, b, out_dtype=None):
    shape = np.broadcast_shapes(a.shape, b.shape)
    ta, tb = tensor_type(a.shape, a.dtype), tensor_type(b.shape, b.dtype)
    tr = tensor_type(shape, out_dtype or a.dtype)
    return f"%r = flow.{op} %a0, %a1 : ({ta}, {tb}) -> {tr}\nreturn %r : {tr}"


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": np.divide, "maximum": np.maximum, "minimum": np.minimum,
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcast_f32(tmp_path, op):
    a, b = rand((4, 1, 5)), rand((3, 1), lo=0.5, hi=3)
    check(tmp_path, binary(op, a, b), [a, b], BINARY[op](a, b))


def test_binary_large_multithreaded(tmp_path):
    # Large enough to be split over several workgroups.
    a, b = rand((300, 257)), rand((257,))
    check(tmp_path, binary("add", a, b), [a, b], a + b)


def test_pow(tmp_path):
    a, b = rand((6, 7), lo=0.1, hi=3), rand((7,), lo=-2, hi=2)
    check(tmp_path, binary("pow", a, b), [a, b],
          np.power(a.astype(np.float64), b).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_binary_int(tmp_path, dtype):
    a = rand((6, 5), dtype, lo=-1000, hi=1000)
    b = rand((5,), dtype, lo=1, hi=50) * np.where(RNG.random(5) < 0.5, -1, 1).astype(dtype)
    for op in ["add", "sub", "mul", "maximum", "minimum"]:
        check(tmp_path, binary(op, a, b), [a, b], BINARY[op](a, b).astype(dtype))
    # Integer division truncates toward zero.
    check(tmp_path, binary("div", a, b), [a, b],
          np.trunc(a.astype(np.float64) / b).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
def test_binary_half(tmp_path, dtype):
    dtype = BF16 if dtype == "bf16" else np.dtype(dtype)
    a, b = rand((8, 16)).astype(dtype), rand((16,)).astype(dtype)
    want = (a.astype(np.float32) * b.astype(np.float32))
    check(tmp_path, binary("mul", a, b), [a, b], want, dtype=dtype)


PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
              "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("pred", sorted(PREDICATES))
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_compare(tmp_path, pred, dtype):
    a = rand((6, 8), dtype, lo=-3, hi=3)
    b = rand((8,), dtype, lo=-3, hi=3)
    a[0, :] = b  # some equal elements
    if dtype == np.float32:
        a[1, 0] = np.nan  # NaN: ordered compares are false, ne is true
    ta, tb = tensor_type(a.shape, a.dtype), tensor_type(b.shape, b.dtype)
    tr = tensor_type(a.shape, np.bool_)
    body = (f"%r = flow.compare {pred}, %a0, %a1 : ({ta}, {tb}) -> {tr}\n"
            f"return %r : {tr}")
    check(tmp_path, body, [a, b], PREDICATES[pred](a, b))


def test_select(tmp_path):
    c = RNG.random((5, 6)) < 0.5
    a, b = rand((5, 6)), rand((6,))
    tc, ta, tb = (tensor_type(x.shape, x.dtype) for x in (c, a, b))
    tr = tensor_type((5, 6), np.float32)
    body = (f"%r = flow.select %a0, %a1, %a2 : ({tc}, {ta}, {tb}) -> {tr}\n"
            f"return %r : {tr}")
    check(tmp_path, body, [c, a, b], np.where(c, a, b))


def matmul_body(a, b, out_shape, dtype, attrs=""):
    ta, tb = tensor_type(a.shape, a.dtype), tensor_type(b.shape, b.dtype)
    tr = tensor_type(out_shape, dtype)
    return (f"%r = flow.matmul %a0, %a1{attrs} : ({ta}, {tb}) -> {tr}\n"
            f"return %r : {tr}")


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False),
                                   (False, True), (True, True)])
def test_matmul_f32_library(tmp_path, ta, tb):
    a = rand((2, 1, 8, 4) if ta else (2, 1, 4, 8))
    b = rand((3, 5, 8) if tb else (3, 8, 5))
    attrs = []
    if ta:
        attrs.append("transpose_lhs")
    if tb:
        attrs.append("transpose_rhs")
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    am = np.swapaxes(a, -1, -2) if ta else a
    bm = np.swapaxes(b, -1, -2) if tb else b
    want = np.matmul(am.astype(np.float64), bm).astype(np.float32)
    check(tmp_path, matmul_body(a, b, want.shape, np.float32, attr), [a, b],
          want)


def test_matmul_f32_generated(tmp_path):
    a, b = rand((3, 17, 9)), rand((9, 6))
    want = np.matmul(a.astype(np.float64), b).astype(np.float32)
    text = function(matmul_body(a, b, want.shape, np.float32), [a, b],
                    [tensor_type(want.shape, np.float32)])
    from flowtest import compile_mlir, run_fbin
    fbin = compile_mlir(text, tmp_path, "--library-matmul=false")
    got = run_fbin(fbin, [a, b], tmp_path)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, "bf16", np.int32])
def test_matmul_other_types(tmp_path, dtype):
    dtype = BF16 if dtype == "bf16" else np.dtype(dtype)
    a = rand((5, 12), dtype, lo=-4, hi=4).astype(dtype)
    b = rand((12, 7), dtype, lo=-4, hi=4).astype(dtype)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    check(tmp_path, matmul_body(a, b, want.shape, dtype), [a, b],
          want.astype(np.float32) if dtype.kind != "i" else want.astype(dtype),
          dtype=dtype)


def conv_ref(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64),
                ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[1] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dil[0]: i * dil[0] + stride[0] * (oh - 1) + 1: stride[0],
                           j * dil[1]: j * dil[1] + stride[1] * (ow - 1) + 1: stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         ws[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out.astype(np.float32)


@pytest.mark.parametrize("stride,pad,dil,groups,bias", [
    ((1, 1), (1, 1, 1, 1), (1, 1), 1, True),
    ((1, 1), (0, 0, 0, 0), (1, 1), 2, True),   # 1x1 window: no im2col
    ((2, 2), (0, 1, 2, 0), (1, 1), 2, False),
    ((1, 2), (2, 2, 2, 2), (2, 1), 4, True),
])
def test_conv2d(tmp_path, monkeypatch, stride, pad, dil, groups, bias):
    x = rand((2, 4, 9, 10))
    k = 1 if pad == (0, 0, 0, 0) and stride == (1, 1) else 3
    w = rand((8, 4 // groups, k, k))
    b = rand((8,)) if bias else None
    want = conv_ref(x, w, b, stride, pad, dil, groups)
    inputs = [x, w] + ([b] if bias else [])
    operands = "%a0, %a1" + (", %a2" if bias else "")
    types = ", ".join(tensor_type(t.shape, t.dtype) for t in inputs)
    tr = tensor_type(want.shape, np.float32)
    body = (f"%r = flow.conv2d {operands} strides = [{stride[0]}, {stride[1]}] "
            f"padding = [{', '.join(map(str, pad))}] dilations = [{dil[0]}, {dil[1]}] "
            f"groups = {groups} : ({types}) -> {tr}\nreturn %r : {tr}")
    # f32 sums of up to 36 products of values within +-2 carry an absolute
    # error of a few 1e-6 (about sqrt(36) roundings of 2^-24 times partial
    # sums near 10, in whatever order the path sums); a result that cancels
    # to near 0 shows it, so atol is 1e-5 here as for the other paths.
    from flowtest import compile_mlir, run_fbin
    text = function(body, inputs, [tr])
    # On the runtime's convolution library (the default for f32) ...
    got = compile_and_run(text, inputs, tmp_path)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # ... on the runtime's reference convolution ...
    fbin = compile_mlir(text, tmp_path)
    monkeypatch.setenv("FLOW_CONV", "reference")
    got = run_fbin(fbin, inputs, tmp_path)[0]
    monkeypatch.delenv("FLOW_CONV")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # ... as im2col + library GEMM, and as one generated convolution kernel.
    for flags in (["--conv=gemm"], ["--conv=gemm", "--library-matmul=false"]):
        fbin = compile_mlir(text, tmp_path, *flags)
        got = run_fbin(fbin, inputs, tmp_path)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axes,dtype", [
    ((7,), [0], np.float32),
    ((3, 5), [1], np.float32),
    ((2, 3, 4), [0, 2], np.int64),
    ((4, 1, 33), [1, 2], np.float32),   # a size-1 axis, rows of 33
    ((2, 0, 3), [1], np.float32),       # empty
])
def test_reverse(tmp_path, shape, axes, dtype):
    x = (rand(shape) * 10).astype(dtype)
    t = tensor_type(x.shape, x.dtype)
    body = f"%r = flow.reverse %a0 axes = {axes} : {t}\nreturn %r : {t}"
    check(tmp_path, body, [x], np.flip(x, axis=tuple(axes)).copy())


@pytest.mark.parametrize("shape,axis,exclusive,reverse,dtype", [
    ((9,), 0, False, False, np.float32),
    ((3, 40), 1, False, False, np.float32),
    ((3, 40), 1, True, False, np.int64),
    ((5, 4, 3), 0, False, True, np.float32),
    ((2, 17), 1, True, True, np.int32),
    ((2, 1), 1, True, False, np.float32),
])
def test_cumsum(tmp_path, shape, axis, exclusive, reverse, dtype):
    x = (rand(shape) * 10).astype(dtype)
    t = tensor_type(x.shape, x.dtype)
    flags = [f for f, on in (("exclusive", exclusive), ("reverse", reverse))
             if on]
    attrs = f" {{{', '.join(flags)}}}" if flags else ""
    body = f"%r = flow.cumsum %a0 axis = {axis}{attrs} : {t}\nreturn %r : {t}"
    v = np.flip(x, axis) if reverse else x
    want = np.cumsum(v.astype(np.float64), axis=axis)
    if exclusive:
        want = want - v
    if reverse:
        want = np.flip(want, axis)
    check(tmp_path, body, [x], want.astype(dtype))


def _arg_body(op, x, axis, keepdims, last):
    flags = [f for f, on in (("keepdims", keepdims),
                             ("select_last_index", last)) if on]
    attrs = f" {{{', '.join(flags)}}}" if flags else ""
    shape = [1 if i == axis else d for i, d in enumerate(x.shape)
             if keepdims or i != axis]
    t, tr = tensor_type(x.shape, x.dtype), tensor_type(shape, np.int64)
    return (f"%r = flow.{op} %a0 axis = {axis}{attrs} : {t} -> {tr}\n"
            f"return %r : {tr}")


@pytest.mark.parametrize("in_shape,idx_shape,axis", [
    ((3, 5), (3, 8), 1),      # more indices than the axis has
    ((3, 5), (2, 5), 0),
    ((4, 3, 6), (2, 3, 2), 2),  # smaller in the other dimensions too
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_gather_elements(tmp_path, in_shape, idx_shape, axis, dtype):
    """numpy's take_along_axis on the indices' corner of the input; indices
    computed out of range (here: the argument plus an offset argument, which
    the runtime's check of argument indices does not see) are clamped into
    it."""
    x = (rand(in_shape) * 10).astype(dtype)
    n = in_shape[axis]
    idx = RNG.integers(-2, n + 2, idx_shape).astype(np.int64)
    zero = np.zeros(idx_shape, np.int64)
    corner = x[tuple(slice(0, d) if i != axis else slice(None)
                     for i, d in enumerate(idx_shape))]
    want = np.take_along_axis(corner, np.clip(idx, 0, n - 1), axis)
    t, ti = tensor_type(x.shape, x.dtype), tensor_type(idx.shape, idx.dtype)
    tr = tensor_type(idx.shape, x.dtype)
    body = (f"%i = flow.add %a1, %a2 : ({ti}, {ti}) -> {ti}\n"
            f"%r = flow.gather_elements %a0[%i] axis = {axis} : "
            f"({t}, {ti}) -> {tr}\nreturn %r : {tr}")
    check(tmp_path, body, [x, idx, zero], want)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims,last", [
    (0, False, False), (1, False, False), (1, True, False), (1, False, True),
    (2, True, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_argmax_argmin_with_ties(tmp_path, op, axis, keepdims, last, dtype):
    """Values drawn from 5 levels, so every row has ties: the first index
    wins, or the last with select_last_index."""
    x = np.random.default_rng(axis).integers(-2, 3, (4, 6, 5)).astype(dtype)
    pick = np.argmax if op == "argmax" else np.argmin
    v = np.flip(x, axis) if last else x
    want = pick(v, axis=axis)
    if last:
        want = x.shape[axis] - 1 - want
    if keepdims:
        want = np.expand_dims(want, axis)
    check(tmp_path, _arg_body(op, x, axis, keepdims, last), [x],
          want.astype(np.int64))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin_nan_and_infinities(tmp_path, op):
    """A NaN wins (the first one), as in numpy and PyTorch; a row of -inf
    (or +inf) gives its first index."""
    x = rand((5, 7))
    x[0, 3] = x[0, 5] = np.nan
    x[1, :] = -np.inf
    x[2, :] = np.inf
    x[3, 6] = np.nan
    x[4, 2] = np.inf if op == "argmax" else -np.inf
    pick = np.argmax if op == "argmax" else np.argmin
    check(tmp_path, _arg_body(op, x, 1, False, False), [x],
          pick(x, axis=1).astype(np.int64))


@pytest.mark.parametrize("limit", [1, 700, 3000])
@pytest.mark.parametrize("stride,pad,dil,groups,k", [
    ((1, 1), (1, 1, 1, 1), (1, 1), 1, 3),
    ((2, 2), (0, 1, 2, 0), (1, 1), 2, 3),   # uneven padding, last block short
    ((1, 2), (2, 2, 2, 2), (2, 1), 4, 3),   # dilated rows
    ((2, 1), (3, 1, 3, 1), (1, 1), 1, 7),   # ResNet's first layer, smaller
    ((1, 1), (2, 0, 2, 0), (1, 1), 1, 1),   # 1x1 window with padding
])
def test_conv2d_in_row_blocks(tmp_path, limit, stride, pad, dil, groups, k):
    """Convolutions whose im2col columns exceed --max-columns-bytes run in
    blocks of output rows (a byte limit of 1 makes as many blocks as the
    compiler allows) and must give the same result as the whole
    convolution."""
    x = rand((2, 4, 13, 10))
    w = rand((8, 4 // groups, k, k))
    b = rand((8,))
    want = conv_ref(x, w, b, stride, pad, dil, groups)
    inputs = [x, w, b]
    types = ", ".join(tensor_type(t.shape, t.dtype) for t in inputs)
    tr = tensor_type(want.shape, want.dtype)
    body = (f"%r = flow.conv2d %a0, %a1, %a2 strides = [{stride[0]}, "
            f"{stride[1]}] padding = [{', '.join(map(str, pad))}] "
            f"dilations = [{dil[0]}, {dil[1]}] groups = {groups} : "
            f"({types}) -> {tr}\nreturn %r : {tr}")
    from flowtest import compile_mlir, run_fbin
    text = function(body, inputs, [tr])
    fbin = compile_mlir(text, tmp_path, "--conv=gemm",
                        f"--max-columns-bytes={limit}")
    got = run_fbin(fbin, inputs, tmp_path)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if limit == 1:
        # As many blocks as the compiler allows (8 at most), unless one
        # would read only padding (the 1x1 window under 2 rows of it): then
        # the convolution stays whole.
        flow_ir = compile_mlir(text, tmp_path, "--conv=gemm",
                               "--max-columns-bytes=1",
                               "--compile-to=flow").read_bytes().decode()
        blocks = flow_ir.count("flow.im2col")
        if k == 1:
            assert blocks == 1, flow_ir
        else:
            rows = want.shape[2]
            assert 1 < blocks <= min(rows, 8), flow_ir


@pytest.mark.parametrize("op,axes,keepdims", [
    ("reduce_sum", [1], False), ("reduce_sum", [0, 2], True),
    ("reduce_mean", [2], False), ("reduce_mean", [0, 1, 2], False),
    ("reduce_max", [1], True), ("reduce_max", [0], False),
])
def test_reductions(tmp_path, op, axes, keepdims):
    x = rand((6, 7, 9))
    ref = {"reduce_sum": np.sum, "reduce_mean": np.mean,
           "reduce_max": np.max}[op]
    want = ref(x.astype(np.float64), axis=tuple(axes),
               keepdims=keepdims).astype(np.float32)
    tr = tensor_type(want.shape, np.float32)
    kd = " {keepdims}" if keepdims else ""
    body = (f"%r = flow.{op} %a0 {axes}{kd} : {tensor_type(x.shape, x.dtype)} "
            f"-> {tr}\nreturn %r : {tr}")
    check(tmp_path, body, [x], want)


def test_reduce_int(tmp_path):
    x = rand((5, 8), np.int64, lo=-100, hi=100)
    body = (f"%r = flow.reduce_sum %a0 [1] : {tensor_type(x.shape, x.dtype)} -> "
            f"tensor<5xi64>\n%m = flow.reduce_max %a0 [0] : "
            f"{tensor_type(x.shape, x.dtype)} -> tensor<8xi64>\n"
            f"return %r, %m : tensor<5xi64>, tensor<8xi64>")
    check(tmp_path, body, [x], [x.sum(axis=1), x.max(axis=0)])


def softmax_ref(x, axis, log):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("log", [False, True])
def test_softmax(tmp_path, axis, log):
    x = rand((5, 6, 7), lo=-10, hi=10)
    op = "log_softmax" if log else "softmax"
    t = tensor_type(x.shape, x.dtype)
    check(tmp_path, f"%r = flow.{op} %a0 axis = {axis} : {t}\nreturn %r : {t}",
          [x], softmax_ref(x, axis, log).astype(np.float32))


def test_softmax_bf16(tmp_path):
    x = rand((4, 32), lo=-5, hi=5).astype(BF16)
    t = tensor_type(x.shape, x.dtype)
    want = softmax_ref(x.astype(np.float32), 1, False).astype(np.float32)
    check(tmp_path, f"%r = flow.softmax %a0 axis = 1 : {t}\nreturn %r : {t}",
          [x], want, dtype=BF16)


@pytest.mark.parametrize("axis,affine", [(2, "both"), (1, "weight"),
                                         (2, "none"), (2, "bias")])
def test_layer_norm(tmp_path, axis, affine):
    x = rand((3, 5, 16), lo=-3, hi=5)
    norm_shape = x.shape[axis:]
    g, b = rand(norm_shape), rand(norm_shape)
    xf = x.astype(np.float64)
    axes = tuple(range(axis, x.ndim))
    mean = xf.mean(axis=axes, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis=axes, keepdims=True)
    want = (xf - mean) / np.sqrt(var + 1e-5)
    inputs, clauses, types = [x], "", [tensor_type(x.shape, x.dtype)]
    if affine in ("both", "weight"):
        want = want * g
        inputs.append(g)
        clauses += f" weight %a{len(inputs) - 1}"
        types.append(tensor_type(g.shape, g.dtype))
    if affine in ("both", "bias"):
        want = want + b
        inputs.append(b)
        clauses += f" bias %a{len(inputs) - 1}"
        types.append(tensor_type(b.shape, b.dtype))
    t = tensor_type(x.shape, x.dtype)
    body = (f"%r = flow.layer_norm %a0{clauses} axis = {axis} epsilon = 1.0e-05"
            f" : ({', '.join(types)}) -> {t}\nreturn %r : {t}")
    check(tmp_path, body, inputs, want.astype(np.float32))


def test_rms_norm(tmp_path):
    x, g = rand((4, 32)), rand((32,))
    xf = x.astype(np.float64)
    want = xf / np.sqrt((xf ** 2).mean(axis=1, keepdims=True) + 1e-6) * g
    t = tensor_type(x.shape, x.dtype)
    body = (f"%r = flow.rms_norm %a0 weight %a1 axis = 1 epsilon = 1.0e-06 : "
            f"({t}, tensor<32xf32>) -> {t}\nreturn %r : {t}")
    check(tmp_path, body, [x, g], want.astype(np.float32))


def test_batch_norm(tmp_path):
    x = rand((2, 3, 4, 5))
    scale, bias, mean = rand((3,)), rand((3,)), rand((3,))
    var = rand((3,), lo=0.1, hi=2)
    c = lambda v: v.reshape(1, 3, 1, 1).astype(np.float64)
    want = (x - c(mean)) / np.sqrt(c(var) + 1e-5) * c(scale) + c(bias)
    t, p = tensor_type(x.shape, x.dtype), "tensor<3xf32>"
    body = (f"%r = flow.batch_norm %a0, %a1, %a2, %a3, %a4 epsilon = 1.0e-05 : "
            f"({t}, {p}, {p}, {p}, {p}) -> {t}\nreturn %r : {t}")
    check(tmp_path, body, [x, scale, bias, mean, var], want.astype(np.float32))


def pool_ref(x, kernel, stride, pad, dil, ceil, kind, include_pad=False):
    n, c, h, w = x.shape
    sizes = []
    for i, length in enumerate((h, w)):
        eff = dil[i] * (kernel[i] - 1) + 1
        span = length + pad[i] + pad[i + 2] - eff
        o = span // stride[i] + 1
        if ceil:
            o = -(-span // stride[i]) + 1
            if (o - 1) * stride[i] >= length + pad[i]:
                o -= 1
        sizes.append(o)
    out = np.zeros((n, c, *sizes))
    for oh in range(sizes[0]):
        for ow in range(sizes[1]):
            hs, ws = oh * stride[0] - pad[0], ow * stride[1] - pad[1]
            vals = [x[:, :, hs + i * dil[0], ws + j * dil[1]].astype(np.float64)
                    for i in range(kernel[0]) for j in range(kernel[1])
                    if 0 <= hs + i * dil[0] < h and 0 <= ws + j * dil[1] < w]
            if kind == "max":
                out[:, :, oh, ow] = np.max(vals, axis=0)
            else:
                he, we = min(hs + kernel[0], h + pad[2]), min(ws + kernel[1], w + pad[3])
                if include_pad:
                    count = (he - hs) * (we - ws)
                else:
                    count = (min(he, h) - max(hs, 0)) * (min(we, w) - max(ws, 0))
                out[:, :, oh, ow] = np.sum(vals, axis=0) / count
    return out.astype(np.float32)


@pytest.mark.parametrize("kernel,stride,pad,dil,ceil", [
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((3, 2), (2, 1), (1, 0, 1, 1), (2, 1), True),
])
def test_max_pool(tmp_path, kernel, stride, pad, dil, ceil):
    x = rand((2, 3, 9, 8))
    want = pool_ref(x, kernel, stride, pad, dil, ceil, "max")
    tr = tensor_type(want.shape, np.float32)
    attrs = " {ceil_mode}" if ceil else ""
    body = (f"%r = flow.max_pool2d %a0 kernel = [{kernel[0]}, {kernel[1]}] "
            f"strides = [{stride[0]}, {stride[1]}] padding = [{', '.join(map(str, pad))}] "
            f"dilations = [{dil[0]}, {dil[1]}]{attrs} : {tensor_type(x.shape, x.dtype)} -> {tr}\n"
            f"return %r : {tr}")
    check(tmp_path, body, [x], want)


@pytest.mark.parametrize("pad,ceil,include", [
    ((1, 1, 1, 1), False, True), ((1, 1, 1, 1), False, False),
    ((0, 1, 1, 0), True, True), ((1, 0, 0, 1), True, False),
])
def test_avg_pool(tmp_path, pad, ceil, include):
    x = rand((1, 2, 8, 9))
    want = pool_ref(x, (3, 3), (2, 2), pad, (1, 1), ceil, "avg", include)
    tr = tensor_type(want.shape, np.float32)
    flags = [f for f, on in (("ceil_mode", ceil), ("count_include_pad", include)) if on]
    attrs = " {" + ", ".join(flags) + "}" if flags else ""
    body = (f"%r = flow.avg_pool2d %a0 kernel = [3, 3] strides = [2, 2] "
            f"padding = [{', '.join(map(str, pad))}]{attrs} : "
            f"{tensor_type(x.shape, x.dtype)} -> {tr}\nreturn %r : {tr}")
    check(tmp_path, body, [x], want)


def test_data_movement(tmp_path):
    x = rand((2, 3, 4))
    y = rand((2, 5, 4))
    r = rand((1, 4))
    tx, ty, tr_ = (tensor_type(t.shape, t.dtype) for t in (x, y, r))
    body = f"""
  %0 = flow.reshape %a0 : {tx} -> tensor<6x4xf32>
  %1 = flow.transpose %a0 [2, 0, 1] : {tx} -> tensor<4x2x3xf32>
  %2 = flow.broadcast_to %a2 : {tr_} -> tensor<2x3x4xf32>
  %3 = flow.concat %a0, %a1, %2 axis = 1 : ({tx}, {ty}, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  %4 = flow.slice %a1 starts = [0, 1, 0] limits = [2, 5, 4] strides = [1, 2, 3] : {ty} -> tensor<2x2x2xf32>
  %5 = flow.pad %a0 low = [0, 1, 0] high = [1, 0, 2] value = -1.5 : {tx} -> tensor<3x4x6xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x11x4xf32>, tensor<2x2x2xf32>, tensor<3x4x6xf32>"""
    b = np.broadcast_to(r, (2, 3, 4))
    want = [x.reshape(6, 4), np.transpose(x, (2, 0, 1)), b,
            np.concatenate([x, y, b], axis=1), y[0:2, 1:5:2, 0:4:3],
            np.pad(x, ((0, 1), (1, 0), (0, 2)), constant_values=-1.5)]
    check(tmp_path, body, [x, y, r], want)


@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_gather(tmp_path, idx_dtype):
    table = rand((50, 8))
    ids = RNG.integers(0, 50, size=(3, 4)).astype(idx_dtype)
    cube = rand((2, 6, 3))
    cols = np.array([5, 0, 2], dtype=idx_dtype)
    tt, ti, tc = (tensor_type(t.shape, t.dtype) for t in (table, ids, cube))
    tcols = tensor_type(cols.shape, cols.dtype)
    body = f"""
  %0 = flow.gather %a0[%a1] axis = 0 : ({tt}, {ti}) -> tensor<3x4x8xf32>
  %1 = flow.gather %a2[%a3] axis = 1 : ({tc}, {tcols}) -> tensor<2x3x3xf32>
  return %0, %1 : tensor<3x4x8xf32>, tensor<2x3x3xf32>"""
    check(tmp_path, body, [table, ids, cube, cols],
          [table[ids], np.take(cube, cols, axis=1)])


def test_constants_and_i1_outputs(tmp_path):
    x = rand((2, 3))
    body = """
  %c = flow.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %m = flow.constant dense<[true, false, true]> : tensor<3xi1>
  %0 = flow.add %a0, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = flow.select %m, %0, %a0 : (tensor<3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1, %m, %c : tensor<2x3xf32>, tensor<3xi1>, tensor<2x3xf32>"""
    c = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    m = np.array([True, False, True])
    check(tmp_path, body, [x], [np.where(m, x + c, x), m, c])


@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
def test_half_precision_ops(tmp_path, dtype):
    """Reductions, normalizations, pooling, convolution and data movement in
    half precision: computed in f32, rounded once per op."""
    dtype = BF16 if dtype == "bf16" else np.dtype(dtype)
    x = rand((2, 4, 6, 6)).astype(dtype)
    w = rand((3, 4, 3, 3), lo=-0.5, hi=0.5).astype(dtype)
    g = rand((6,)).astype(dtype)
    xf, wf, gf = (a.astype(np.float32) for a in (x, w, g))
    t = lambda shape: tensor_type(shape, dtype)
    body = f"""
  %0 = flow.reduce_sum %a0 [2, 3] : {t(x.shape)} -> {t((2, 4))}
  %1 = flow.reduce_max %a0 [1] : {t(x.shape)} -> {t((2, 6, 6))}
  %2 = flow.rms_norm %a0 weight %a2 axis = 3 epsilon = 1.0e-05 : ({t(x.shape)}, {t((6,))}) -> {t(x.shape)}
  %3 = flow.avg_pool2d %a0 kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : {t(x.shape)} -> {t((2, 4, 3, 3))}
  %4 = flow.conv2d %a0, %a1 strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : ({t(x.shape)}, {t(w.shape)}) -> {t((2, 3, 6, 6))}
  %5 = flow.transpose %a0 [0, 2, 3, 1] : {t(x.shape)} -> {t((2, 6, 6, 4))}
  return %0, %1, %2, %3, %4, %5 : {t((2, 4))}, {t((2, 6, 6))}, {t(x.shape)}, {t((2, 4, 3, 3))}, {t((2, 3, 6, 6))}, {t((2, 6, 6, 4))}"""
    rms = xf / np.sqrt((xf.astype(np.float64) ** 2).mean(axis=3, keepdims=True) + 1e-5) * gf
    want = [xf.sum(axis=(2, 3)), xf.max(axis=1), rms,
            pool_ref(xf, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, "avg"),
            conv_ref(xf, wf, None, (1, 1), (1, 1, 1, 1), (1, 1), 1),
            np.transpose(xf, (0, 2, 3, 1))]
    # Sums of up to 36 products: allow a few roundings of the inputs.
    check(tmp_path, body, [x, w, g], [np.asarray(v, np.float32) for v in want],
          dtype=dtype)


def test_several_functions(tmp_path):
    """Every public function is compiled; --function picks one."""
    from flowtest import compile_mlir, run_fbin
    text = """
func.func @double(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @negate(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = flow.neg %a : tensor<4xf32>
  return %0, %a : tensor<4xf32>, tensor<4xf32>
}
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
"""
    fbin = compile_mlir(text, tmp_path)
    x = rand((4,))
    np.testing.assert_array_equal(
        run_fbin(fbin, [x], tmp_path, "--function=double")[0], x + x)
    neg, same = run_fbin(fbin, [x], tmp_path, "--function=negate")
    np.testing.assert_array_equal(neg, -x)
    np.testing.assert_array_equal(same, x)


def test_compare_bool_orders_false_before_true(tmp_path):
    a = np.array([False, True, False, True])
    b = np.array([True, False, False, True])
    t = tensor_type(a.shape, a.dtype)
    for pred, ref in PREDICATES.items():
        body = (f"%r = flow.compare {pred}, %a0, %a1 : ({t}, {t}) -> {t}\n"
                f"return %r : {t}")
        check(tmp_path, body, [a, b], ref(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_division_edge_cases(tmp_path, dtype):
    """x / 0 is 0 and INT_MIN / -1 wraps to INT_MIN: defined, never a trap."""
    lo = np.iinfo(dtype).min
    a = np.array([7, -7, 7, lo, lo, 0], dtype)
    b = np.array([0, 0, -1, -1, 1, 0], dtype)
    want = np.array([0, 0, -7, lo, lo, 0], dtype)
    check(tmp_path, binary("div", a, b), [a, b], want)


def test_zero_size_tensors(tmp_path):
    """Empty tensors anywhere: no kernel binds them, results are right."""
    x = rand((3, 0))
    y = rand((0, 5))
    z = rand((3, 4))
    h = rand((3, 0)).astype(np.float16)
    hy = rand((0, 5)).astype(np.float16)
    body = f"""
  %0 = flow.exp %a0 : tensor<3x0xf32>
  %1 = flow.reduce_sum %a0 [1] : tensor<3x0xf32> -> tensor<3xf32>
  %2 = flow.matmul %a0, %a1 : (tensor<3x0xf32>, tensor<0x5xf32>) -> tensor<3x5xf32>
  %3 = flow.matmul %a3, %a4 : (tensor<3x0xf16>, tensor<0x5xf16>) -> tensor<3x5xf16>
  %4 = flow.transpose %a1 [1, 0] : tensor<0x5xf32> -> tensor<5x0xf32>
  %5 = flow.concat %a2, %a0 axis = 1 : (tensor<3x4xf32>, tensor<3x0xf32>) -> tensor<3x4xf32>
  %6 = flow.slice %a2 starts = [3, 0] limits = [3, 4] strides = [1, 1] : tensor<3x4xf32> -> tensor<0x4xf32>
  %7 = flow.pad %a0 low = [0, 1] high = [0, 1] value = 2.0 : tensor<3x0xf32> -> tensor<3x2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3x0xf32>, tensor<3xf32>, tensor<3x5xf32>, tensor<3x5xf16>, tensor<5x0xf32>, tensor<3x4xf32>, tensor<0x4xf32>, tensor<3x2xf32>"""
    want = [np.exp(x), x.sum(axis=1), x @ y, (h @ hy).astype(np.float32),
            y.T, z, z[3:3], np.full((3, 2), 2.0, np.float32)]
    results = compile_and_run(function(body, [x, y, z, h, hy], [
        "tensor<3x0xf32>", "tensor<3xf32>", "tensor<3x5xf32>",
        "tensor<3x5xf16>", "tensor<5x0xf32>", "tensor<3x4xf32>",
        "tensor<0x4xf32>", "tensor<3x2xf32>"]), [x, y, z, h, hy], tmp_path)
    for got, w in zip(results, want):
        assert got.shape == w.shape
        np.testing.assert_allclose(got.astype(np.float32), w)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False),
                                   (False, True), (True, True)])
def test_matmul_single_row(tmp_path, ta, tb):
    """m = 1 (batch-1 inference) runs as a matrix-vector product."""
    a = rand((3, 9, 1) if ta else (3, 1, 9))
    b = rand((7, 9) if tb else (9, 7))
    attrs = [n for n, on in (("transpose_lhs", ta), ("transpose_rhs", tb)) if on]
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    am = np.swapaxes(a, -1, -2) if ta else a
    bm = b.T if tb else b
    want = np.matmul(am.astype(np.float64), bm).astype(np.float32)
    check(tmp_path, matmul_body(a, b, want.shape, np.float32, attr), [a, b],
          want)


def test_function_calls_are_inlined(tmp_path):
    """Public functions may call private helpers and each other."""
    from flowtest import compile_mlir, run_fbin
    text = """
func.func private @affine(%x: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = flow.add %0, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @square_plus(%x: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @affine(%x, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @twice(%x: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @square_plus(%x, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = call @affine(%0, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""
    fbin = compile_mlir(text, tmp_path)
    x, b = rand((4,)), rand((4,))
    once = x * x + b
    np.testing.assert_allclose(
        run_fbin(fbin, [x, b], tmp_path, "--function=square_plus")[0], once,
        rtol=1e-6)
    np.testing.assert_allclose(
        run_fbin(fbin, [x, b], tmp_path, "--function=twice")[0],
        once * once + b, rtol=1e-6)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False),
                                   (False, True), (True, True)])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_matmul_thread_counts(tmp_path, ta, tb, batch):
    """Multi-megaflop GEMMs, batched and not, with every transpose, give the
    right result whatever the thread count (m = 131 splits unevenly)."""
    from flowtest import compile_mlir, run_fbin
    m, k, n = 131, 200, 64
    a = rand((*batch, k, m) if ta else (*batch, m, k))
    b = rand((n, k) if tb else (k, n))
    attrs = [x for x, on in (("transpose_lhs", ta), ("transpose_rhs", tb)) if on]
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    am = np.swapaxes(a, -1, -2) if ta else a
    want = np.matmul(am.astype(np.float64), b.T if tb else b).astype(np.float32)
    text = function(matmul_body(a, b, want.shape, np.float32, attr), [a, b],
                    [tensor_type(want.shape, np.float32)])
    fbin = compile_mlir(text, tmp_path)
    for threads in ("1", "2", "3"):
        got = run_fbin(fbin, [a, b], tmp_path, f"--threads={threads}")[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
