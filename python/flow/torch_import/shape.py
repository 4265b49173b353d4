"""Shape, indexing and data movement: views and reshapes, concatenation,
slicing, gathers and advanced indexing, scatters, pads, repeats and
nearest-neighbour upsampling."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import FLOAT_TYPES, INT_TYPES, Unsupported, Value, numpy_dtype
from ._core import _handles, _norm_dim


# Layout -------------------------------------------------------------------

@_handles("aten.view.default", "aten._unsafe_view.default",
          "aten.reshape.default", "aten.unsqueeze.default",
          "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
          "aten.flatten.using_ints", "aten.view_copy.default",
          "aten.unflatten.int")
def _reshape(self, x, *_, **__):
    return self.e.reshape(self.value(x), self.out_shape())


@_handles("aten.as_strided.default", "aten.as_strided_copy.default")
def _as_strided(self, x, size, stride, storage_offset=None):
    """A strided view that reads the input in row-major order is a reshape
    (decompositions write these for size-1 dimensions); others are not
    supported."""
    source = self.node.args[0]
    val = source.meta.get("val") if hasattr(source, "meta") else None
    contiguous = val is None or val.is_contiguous()
    expected, step = [], 1
    for d in reversed(list(size)):
        expected.append(step)
        step *= int(d)
    expected.reverse()
    matches = all(int(n) == 1 or int(s) == e
                  for n, s, e in zip(size, stride, expected))
    if not contiguous or (storage_offset or 0) != 0 or not matches:
        raise Unsupported("a strided view that is not a reshape")
    return self.e.reshape(self.value(x), self.out_shape())


@_handles("aten.permute.default", "aten.permute_copy.default")
def _permute(self, x, dims):
    v = self.value(x)
    return self.e.transpose(v, [_norm_dim(d, len(v.shape)) for d in dims])


@_handles("aten.t.default", "aten.transpose.int")
def _transpose(self, x, d0=0, d1=1):
    v = self.value(x)
    rank = len(v.shape)
    if rank < 2:
        return v
    perm = list(range(rank))
    d0, d1 = _norm_dim(d0, rank), _norm_dim(d1, rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return self.e.transpose(v, perm)


@_handles("aten.expand.default", "aten.expand_copy.default")
def _expand(self, x, *_, **__):
    return self.e.broadcast_to(self.value(x), self.out_shape())


@_handles("aten.clone.default", "aten.alias.default", "aten.detach.default",
          "aten.lift_fresh_copy.default", "aten.contiguous.default",
          "aten.alias_copy.default")
def _identity(self, x, *_, **__):
    return self.value(x)


@_handles("aten.cat.default", "aten.concat.default")
def _cat(self, tensors, dim=0):
    dtype = self.out_dtype()
    shape = self.out_shape()
    values = [self.value(t, dtype) for t in tensors]
    values = [v for v in values if not (len(v.shape) == 1 and v.shape[0] == 0
                                        and len(shape) != 1)]
    if len(values) == 1:
        return values[0]
    return self.e.concat(values, _norm_dim(dim, len(shape)))


def _slice_bounds(size, start, end, step):
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, step


@_handles("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(self, x, dim=0, start=None, end=None, step=1):
    v = self.value(x)
    rank = len(v.shape)
    dim = _norm_dim(dim, rank)
    s, e, st = _slice_bounds(v.shape[dim], start, end, step)
    starts = [0] * rank
    limits = list(v.shape)
    strides = [1] * rank
    starts[dim], limits[dim], strides[dim] = s, e, st
    return self.e.slice(v, starts, limits, strides)


@_handles("aten.flip.default")
def _flip(self, x, dims):
    v = self.value(x)
    rank = len(v.shape)
    return self.e.reverse(v, [_norm_dim(d, rank) for d in dims])


@_handles("aten.select.int", "aten.select_copy.int")
def _select(self, x, dim, index):
    v = self.value(x)
    rank = len(v.shape)
    dim = _norm_dim(dim, rank)
    index = index + v.shape[dim] if index < 0 else index
    starts = [0] * rank
    limits = list(v.shape)
    starts[dim], limits[dim] = index, index + 1
    return self.e.reshape(self.e.slice(v, starts, limits, [1] * rank),
                          self.out_shape())


@_handles("aten.split_with_sizes.default", "aten.split.Tensor",
          "aten.split_with_sizes_copy.default", "aten.split_copy.Tensor")
def _split(self, x, sizes, dim=0):
    v = self.value(x)
    rank = len(v.shape)
    dim = _norm_dim(dim, rank)
    total = v.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    return tuple(composites.split(self.e, v, dim, sizes))


@_handles("getitem")
def _getitem(self, seq, index):
    if not isinstance(seq, (tuple, list)):
        raise Unsupported("indexing a non-sequence value")
    item = seq[index]
    if item is None:
        raise Unsupported(f"result {index} of this op is not computed by Flow")
    return item


def _gather(self, table, indices, axis):
    t = self.value(table)
    i = self.value(indices)
    if i.dtype not in ("i64", "i32"):
        raise Unsupported(f"indices of type {i.dtype}")
    return self.e.gather(t, i, axis)


@_handles("aten.embedding.default")
def _embedding(self, weight, indices, *_, **__):
    return _gather(self, weight, indices, 0)


@_handles("aten.index_select.default")
def _index_select(self, x, dim, index):
    return _gather(self, x, index, _norm_dim(dim, len(self.value(x).shape)))


@_handles("aten.gather.default")
def _gather_elements(self, x, dim, index, sparse_grad=False):
    v, i = self.value(x), self.value(index)
    if i.dtype not in ("i64", "i32"):
        raise Unsupported(f"indices of type {i.dtype}")
    if not v.shape:
        raise Unsupported("gather from a 0-d tensor")
    return self.e.gather_elements(v, i, _norm_dim(dim, len(v.shape)))


@_handles("aten.index.Tensor")
def _index(self, x, indices):
    """x[i0, i1, ...] with index tensors (None for a full slice): the
    indexed dimensions are flattened into one and gathered with the
    linearized index."""
    used = [(d, t) for d, t in enumerate(indices) if t is not None]
    if len(used) == 1:
        return _gather(self, x, used[0][1], used[0][0])
    v = self.value(x)
    rank = len(v.shape)
    dims = [d for d, _ in used]
    index_values = [self.value(t) for _, t in used]
    if any(i.dtype not in ("i64", "i32") for i in index_values):
        raise Unsupported("boolean-mask indexing (its result shape depends "
                          "on the data)")
    if dims == list(range(dims[0], dims[0] + len(dims))):
        axis = dims[0]
    else:  # non-adjacent: PyTorch puts the indexed dimensions first
        rest = [d for d in range(rank) if d not in dims]
        v = self.e.transpose(v, dims + rest)
        dims, axis = list(range(len(dims))), 0
    sizes = [v.shape[d] for d in dims]
    flat = v.shape[:axis] + (int(np.prod(sizes)),) + v.shape[axis + len(dims):]
    v = self.e.reshape(v, flat)
    linear = None
    stride = 1
    for size, i in reversed(list(zip(sizes, index_values))):
        i = self.e.wrap_negative(self.e.cast(i, "i64"), size)
        term = i if stride == 1 else self.e.binary(
            "mul", i, self.e.scalar(stride, "i64"))
        linear = term if linear is None else self.e.binary("add", linear, term)
        stride *= size
    return self.e.gather(v, linear, axis)


# Scatters -----------------------------------------------------------------

def _put(self, v: Value, indices, values, accumulate=False) -> Value:
    """v[indices] = values (or += with `accumulate`), PyTorch's advanced
    indexing: `indices` per leading dimension, None for a whole one; the
    index tensors broadcast together."""
    rank = len(v.shape)
    used = [(d, self.value(t)) for d, t in enumerate(indices)
            if t is not None]
    if not used:
        raise Unsupported("index_put without an index tensor")
    if any(i.dtype == "i1" for _, i in used):
        return _masked_put(self, v, used, values, accumulate)
    if any(i.dtype not in INT_TYPES for _, i in used):
        raise Unsupported("index tensors of type "
                          f"{[i.dtype for _, i in used]}")
    dims = [d for d, _ in used]
    rest = [d for d in range(rank) if d not in dims]
    bshape = tuple(np.broadcast_shapes(*[i.shape for _, i in used]))
    # The shape of v[indices], which `values` broadcasts to: the index
    # dimensions in place when the indexed dimensions are adjacent, first
    # otherwise.
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    pre = [d for d in rest if adjacent and d < dims[0]]
    post = [d for d in rest if d not in pre]
    indexed = tuple(v.shape[d] for d in pre) + bshape + \
        tuple(v.shape[d] for d in post)
    u = self.e.broadcast_to(self.value(values, v.dtype), indexed)
    # As scatter_nd takes them: index dimensions first, then v's others.
    nb = len(bshape)
    u = self.e.transpose(u, list(range(len(pre), len(pre) + nb)) +
                         list(range(len(pre))) +
                         list(range(len(pre) + nb, len(indexed))))
    perm = dims + pre + post
    vt = self.e.transpose(v, perm)
    columns = [self.e.reshape(self.e.broadcast_to(self.e.wrap_negative(
        self.e.cast(i, "i64"), v.shape[d]), bshape), bshape + (1,))
        for d, i in used]
    out = self.e.scatter_nd(vt, self.e.concat(columns, nb), u,
                            "add" if accumulate else "none")
    return self.e.transpose(out, list(np.argsort(perm)))


def _masked_put(self, v: Value, used, values, accumulate) -> Value:
    """x[mask] = value (or += with `accumulate`): with one value for every
    masked position, a select over the positions the mask covers. A tensor
    of values, one per True, has a data-dependent layout and is refused."""
    if len(used) != 1:
        raise Unsupported("a boolean mask together with other indices")
    d, mask = used[0]
    u = self.value(values, v.dtype)
    if int(np.prod(u.shape)) != 1:
        raise Unsupported("boolean-mask assignment of one value per True "
                          "(the positions depend on the data); a single "
                          "value is supported")
    rank = len(v.shape)
    mask = self.e.reshape(mask, (1,) * d + mask.shape +
                          (1,) * (rank - d - len(mask.shape)))
    u = self.e.reshape(u, ())
    new = self.e.binary("add", v, u) if accumulate else \
        self.e.broadcast_to(u, v.shape)
    return self.e.select(mask, new, v)


@_handles("aten.index_put.default")
def _index_put(self, x, indices, values, accumulate=False):
    return _put(self, self.value(x), indices, values, accumulate)


@_handles("aten.index_copy.default", "aten.index_add.default")
def _index_copy(self, x, dim, index, source, alpha=1):
    v = self.value(x)
    d = _norm_dim(dim, max(len(v.shape), 1))
    add = "index_add" in str(self.node.target)
    s = self.value(source, v.dtype)
    if add and alpha != 1:
        s = self.e.binary("mul", s, self.e.scalar(alpha, v.dtype))
    return _put(self, v, [None] * d + [index], s, accumulate=add)


@_handles("aten.copy.default")
def _copy(self, x, src, non_blocking=False):
    """x's shape and type with src's values (functionalized `x[...] = src`
    copies into a slice, then scatters the slice back)."""
    v = self.value(x)
    return self.e.broadcast_to(self.value(src, v.dtype), v.shape)


@_handles("aten.slice_scatter.default")
def _slice_scatter(self, x, src, dim=0, start=None, end=None, step=1):
    v = self.value(x)
    d = _norm_dim(dim, len(v.shape))
    positions = np.arange(v.shape[d])[slice(start, end, step)]
    return _put(self, v, [None] * d + [self.e.constant(positions)], src)


@_handles("aten.select_scatter.default")
def _select_scatter(self, x, src, dim, index):
    v = self.value(x)
    d = _norm_dim(dim, len(v.shape))
    s = self.value(src, v.dtype)
    s = self.e.reshape(s, s.shape[:d] + (1,) + s.shape[d:])
    at = self.e.constant(np.array([_norm_dim(index, v.shape[d])], np.int64))
    return _put(self, v, [None] * d + [at], s)


_SCATTER_REDUCE = {"sum": "add", "add": "add", "prod": "mul",
                   "multiply": "mul", "amax": "max", "amin": "min"}


@_handles("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
          "aten.scatter.value_reduce", "aten.scatter_add.default")
def _scatter(self, x, dim, index, src, reduce=None):
    v, i = self.value(x), self.value(index)
    if not v.shape:
        raise Unsupported("scatter into a 0-d tensor")
    if i.dtype not in INT_TYPES:
        raise Unsupported(f"indices of type {i.dtype}")
    d = _norm_dim(dim, len(v.shape))
    kind = "add" if "scatter_add" in str(self.node.target) else \
        _SCATTER_REDUCE[reduce] if reduce else "none"
    u = self.value(src, v.dtype)
    if not u.shape:  # a scalar value
        u = self.e.broadcast_to(u, i.shape)
    return self.e.scatter_elements(
        v, self.e.wrap_negative(i, v.shape[d]), u, d, kind)


@_handles("aten.scatter_reduce.two")
def _scatter_reduce(self, x, dim, index, src, reduce, include_self=True):
    v, i = self.value(x), self.value(index)
    if i.dtype not in INT_TYPES:
        raise Unsupported(f"indices of type {i.dtype}")
    d = _norm_dim(dim, max(len(v.shape), 1))
    i = self.e.wrap_negative(i, v.shape[d])
    u = self.value(src, v.dtype)
    if reduce == "mean":
        if v.dtype not in FLOAT_TYPES:
            raise Unsupported(f"scatter mean of {v.dtype}")
        # (v + sum of updates) / (1 + count), or without v: sum / count
        # where anything landed.
        zeros = self.e.broadcast_to(self.e.scalar(0, v.dtype), v.shape)
        ones = self.e.broadcast_to(self.e.scalar(1, v.dtype), i.shape)
        count = self.e.scatter_elements(zeros, i, ones, d, "add")
        base = v if include_self else self.e.scatter_elements(
            v, i, self.e.broadcast_to(self.e.scalar(0, v.dtype), i.shape), d)
        total = self.e.scatter_elements(base, i, u, d, "add")
        if include_self:
            count = self.e.binary("add", count, self.e.scalar(1, v.dtype))
        hit = self.e.compare("gt", count, self.e.scalar(0, v.dtype))
        return self.e.select(hit, self.e.binary("div", total, count), v)
    if reduce not in _SCATTER_REDUCE:
        raise Unsupported(f"scatter reduction '{reduce}'")
    kind = _SCATTER_REDUCE[reduce]
    if not include_self:
        # Where an update lands, start from the reduction's identity.
        if kind == "add":
            identity = 0
        elif kind == "mul":
            identity = 1
        elif v.dtype in FLOAT_TYPES:
            identity = -np.inf if kind == "max" else np.inf
        else:
            info = np.iinfo(numpy_dtype(v.dtype))
            identity = info.min if kind == "max" else info.max
        v = self.e.scatter_elements(v, i, self.e.broadcast_to(
            self.e.scalar(identity, v.dtype), i.shape), d)
    return self.e.scatter_elements(v, i, u, d, kind)


def _torch_pads(rank, pad):
    """torch's pad list (last dimension first, low then high) as low and
    high per dimension."""
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return low, high


@_handles("aten.constant_pad_nd.default")
def _pad(self, x, pad, value=0.0):
    v = self.value(x)
    low, high = _torch_pads(len(v.shape), pad)
    return self.e.pad(v, low, high, "constant", value)


def _indexed_pad(mode):
    def handler(self, x, pad):
        v = self.value(x)
        low, high = _torch_pads(len(v.shape), pad)
        return self.e.pad(v, low, high, mode)
    return handler


for _n in (1, 2, 3):
    _handles(f"aten.reflection_pad{_n}d.default")(_indexed_pad("reflect"))
    _handles(f"aten.replication_pad{_n}d.default")(_indexed_pad("edge"))
_handles("aten._pad_circular.default")(_indexed_pad("wrap"))


@_handles("aten.repeat.default")
def _repeat(self, x, repeats):
    v = self.value(x)
    repeats = [int(r) for r in repeats]
    v = self.e.reshape(v, (1,) * (len(repeats) - len(v.shape)) + tuple(v.shape))
    return self.e.tile(v, repeats)


@_handles("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest(self, x, *_, **__):
    """Nearest neighbour: output row i reads input row floor(i * in / out)
    (PyTorch's rule), as two gathers with constant indices."""
    v = self.value(x)
    out = self.out_shape()
    for axis in (2, 3):
        size_in, size_out = v.shape[axis], out[axis]
        if size_in == size_out:
            continue
        idx = np.minimum(np.floor(np.arange(size_out) * (size_in / size_out)),
                         size_in - 1).astype(np.int64)
        v = self.e.gather(v, self.e.constant(idx), axis)
    return v
