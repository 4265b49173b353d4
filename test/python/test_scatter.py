"""flow.scatter_nd end to end (against a numpy loop), and the scatters of
both importers: torch's index_put (KV-cache writes, accumulation),
index_copy/index_add, scatter/scatter_add/scatter_reduce and the slice and
select assignments torch.export turns into slice_scatter/select_scatter
(against eager), ONNX ScatterND and ScatterElements with every reduction
(against onnxruntime).

Updates that write are compared exactly; reductions of floats to 1e-6
(sums of a few f32 values in the same order as the reference).
"""

import numpy as np
import pytest

from conftest import require

import flow  # noqa: E402


def reference(x, idx, upd, reduction):
    """numpy loop with flow.scatter_nd's rules: tuples in order, out of
    bounds skipped, NaN through max and min."""
    out = x.copy()
    q = idx.shape[-1]
    tuples = idx.reshape(-1, q)
    slices = upd.reshape((tuples.shape[0],) + x.shape[q:])
    for t, s in zip(tuples, slices):
        if any(c < 0 or c >= d for c, d in zip(t, x.shape)):
            continue
        at = tuple(int(c) for c in t)
        if reduction == "none":
            out[at] = s
        elif reduction == "add":
            out[at] = out[at] + s
        elif reduction == "mul":
            out[at] = out[at] * s
        elif reduction == "max":
            out[at] = np.maximum(out[at], s)
        else:
            out[at] = np.minimum(out[at], s)
    return out


def program(x, idx, upd, reduction):
    def t(a):
        return "tensor<" + "".join(f"{d}x" for d in a.shape) + {
            "float32": "f32", "int64": "i64", "int32": "i32",
            "uint8": "ui8"}[a.dtype.name] + ">"
    attr = "" if reduction == "none" else f" reduction = {reduction}"
    return (f"func.func @main(%x: {t(x)}, %i: {t(idx)}, %u: {t(upd)}) -> "
            f"{t(x)} {{\n  %0 = flow.scatter_nd %x[%i], %u{attr} : "
            f"({t(x)}, {t(idx)}, {t(upd)}) -> {t(x)}\n"
            f"  return %0 : {t(x)}\n}}\n")


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_rows_and_elements(reduction):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4, 3), dtype=np.float32)
    x[1, 2, 0] = np.nan
    x0 = x.copy()
    # Rows (q = 1) with a duplicate, a negative and an out-of-range tuple.
    rows = np.array([[3], [0], [3], [-1], [5], [1]], np.int64)
    ru = rng.standard_normal((6, 4, 3), dtype=np.float32)
    got, = flow.compile_mlir(program(x, rows, ru, reduction))(x, rows, ru)
    np.testing.assert_allclose(got, reference(x, rows, ru, reduction),
                               rtol=1e-6, equal_nan=True)
    # Whole elements (q = 3), i32 indices, duplicates.
    elems = rng.integers(0, 3, (4, 2, 3)).astype(np.int32)
    eu = rng.standard_normal((4, 2), dtype=np.float32)
    got, = flow.compile_mlir(program(x, elems, eu, reduction))(x, elems, eu)
    np.testing.assert_allclose(got, reference(x, elems, eu, reduction),
                               rtol=1e-6, equal_nan=True)
    # The input is the caller's: the kernel writes into a copy.
    np.testing.assert_array_equal(x, x0)


def test_scatter_nd_unsigned_max():
    x = np.array([0, 200, 5, 255], np.uint8)
    idx = np.array([[0], [1], [2], [0]], np.int64)
    upd = np.array([130, 100, 250, 7], np.uint8)
    got, = flow.compile_mlir(program(x, idx, upd, "max"))(x, idx, upd)
    np.testing.assert_array_equal(got, reference(x, idx, upd, "max"))
    assert got[0] == 130  # signed, 130 would be the smaller


# torch ----------------------------------------------------------------------

def check_torch(module, *args, exact=True):
    torch = require("torch")
    module = module.eval()
    compiled = flow.compile(module, args)
    with torch.no_grad():
        want = module(*args)
    got = compiled(*args)
    for g, w in zip(torch.utils._pytree.tree_leaves(got),
                    torch.utils._pytree.tree_leaves(want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact:
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        else:
            torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)


def test_torch_kv_cache_write():
    """A static cache written at run-time positions, as decoders do."""
    torch = require("torch")

    class Cache(torch.nn.Module):
        def forward(self, cache, k, pos):
            cache = cache.clone()
            cache[:, :, pos] = k
            return cache * 1.0

    cache = torch.randn(2, 4, 16, 8)
    k = torch.randn(2, 4, 3, 8)
    pos = torch.tensor([5, 6, 7])
    check_torch(Cache(), cache, k, pos)
    check_torch(Cache(), cache, k, torch.tensor([-1, 0, 15]))


def test_torch_index_put_accumulate_and_index_ops():
    torch = require("torch")

    class Ops(torch.nn.Module):
        def forward(self, x, i, j, v, rows):
            a = x.index_put((i, j), v, accumulate=True)
            b = x.index_put((i,), rows)
            c = x.index_copy(0, torch.tensor([4, 1]), rows[:2])
            d = x.index_add(1, torch.tensor([0, 0, 2]), x[:, :3], alpha=2.0)
            return a, b, c, d

    x = torch.randn(5, 6)
    i = torch.tensor([0, 2, 0, 4])
    j = torch.tensor([1, 3, 1, 5])  # (0, 1) twice: both add
    check_torch(Ops(), x, i, j, torch.randn(4), torch.randn(4, 6),
                exact=False)


def test_torch_scatter_family():
    torch = require("torch")

    class Scatters(torch.nn.Module):
        def forward(self, x, idx, src):
            return (x.scatter(1, idx, src),
                    x.scatter(1, idx, 2.5),
                    x.scatter_add(1, idx, src),
                    x.scatter_reduce(1, idx, src, "sum", include_self=False),
                    x.scatter_reduce(1, idx, src, "prod"),
                    x.scatter_reduce(1, idx, src, "amax"),
                    x.scatter_reduce(1, idx, src, "amin", include_self=False),
                    x.scatter_reduce(1, idx, src, "mean"),
                    x.scatter_reduce(1, idx, src, "mean", include_self=False))

    x = torch.randn(3, 6)
    # Distinct per row for plain scatter (duplicates are unordered in
    # PyTorch); the reductions get duplicates.
    idx = torch.tensor([[0, 2, 4], [5, 1, 3], [2, 2, 0]])
    src = torch.randn(3, 4)
    torch.manual_seed(0)
    module = Scatters().eval()
    compiled = flow.compile(module, (x, idx, src))
    got, want = compiled(x, idx, src), module(x, idx, src)
    # Row 2 has a duplicate index: plain scatter is compared on rows 0-1.
    torch.testing.assert_close(got[0][:2], want[0][:2], rtol=0, atol=0)
    torch.testing.assert_close(got[1], want[1], rtol=0, atol=0)
    for g, w in zip(got[2:], want[2:]):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)


def test_torch_boolean_mask_assignment():
    """x[mask] = value (a select); one value per True is refused by name."""
    torch = require("torch")

    class Clamp(torch.nn.Module):
        def forward(self, x, y):
            x = x.clone()
            x[x < 0] = 0.5
            y = y.clone()
            y[:, y[0] > 0] = 2.0
            return x, y

    check_torch(Clamp(), torch.randn(4, 6), torch.randn(3, 5))

    class PerTrue(torch.nn.Module):
        def forward(self, x, v):
            x = x.clone()
            x[x > 0] = v[: 24]
            return x

    with pytest.raises(flow.UnsupportedOpsError):
        flow.import_torch(PerTrue(), (torch.randn(4, 6), torch.randn(30)))


def test_torch_slice_and_select_assignment():
    torch = require("torch")

    class Assign(torch.nn.Module):
        def forward(self, x, y, z):
            x = x.clone()
            x[:, 2:7:2] = y
            x[1] = z
            return x + 0

    check_torch(Assign(), torch.randn(4, 8), torch.randn(4, 3),
                torch.randn(8))


# ONNX -----------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_onnx_scatter_nd_and_elements(reduction):
    onnx = require("onnx")
    ort = require("onnxruntime")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["nd"],
                          reduction=reduction),
         helper.make_node("ScatterElements", ["x", "j", "v"], ["el"],
                          axis=1, reduction=reduction)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [3, 1]),
         helper.make_tensor_value_info("u", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("j", TensorProto.INT64, [4, 2]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("nd", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("el", TensorProto.FLOAT, None)])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 18)])
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((4, 5), dtype=np.float32),
             # distinct rows for "none" (duplicates are undefined in ONNX)
             np.array([[2], [-4], [3]], np.int64),
             rng.standard_normal((3, 5), dtype=np.float32),
             np.array([[0, 4], [1, -1], [2, 3], [4, 0]], np.int64),
             rng.standard_normal((4, 2), dtype=np.float32)]
    if reduction != "none":  # a duplicate for the reductions
        feeds[1] = np.array([[2], [0], [2]], np.int64)
        feeds[3] = np.array([[0, 0], [1, -1], [3, 3], [4, 0]], np.int64)
    want = ort.InferenceSession(model.SerializeToString()).run(
        None, dict(zip("x i u j v".split(), feeds)))
    got = flow.compile(model)(*feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
