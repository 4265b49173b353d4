"""Shape, indexing and data movement: reshapes, transposes, concatenation,
slicing, gathers, scatters, one-hot, tiling, pads and splits."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import Unsupported, Value, numpy_dtype
from ._core import _axis, _common, _handles


@_handles("Trilu")
def _trilu(self, ins, attrs):
    x = self.value(ins[0])
    if len(x.shape) < 2:
        raise Unsupported("a tensor of rank below 2")
    k = 0
    if len(ins) > 1 and ins[1] is not None:
        k = int(self.const(ins[1], "k").reshape(-1)[0])
    m, n = x.shape[-2:]
    rows, cols = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = (cols - rows >= k) if attrs.get("upper", 1) else (cols - rows <= k)
    zero = self.e.scalar(False, "i1") if x.dtype == "i1" else \
        self.e.scalar(0, x.dtype)
    return self.e.select(self.e.constant(keep), x, zero)


@_handles("OneHot")
def _one_hot(self, ins, attrs):
    idx = self.value(ins[0])
    depth = int(np.asarray(self.const(ins[1], "depth")).reshape(-1)[0])
    values = self.value(ins[2])
    if idx.dtype not in ("i64", "i32"):
        idx = self.e.cast(idx, "i64")
    rank = len(idx.shape) + 1
    axis = _axis(attrs.get("axis", -1), rank)
    # Negative indices count from the end; others outside [0, depth) are
    # all off.
    idx = self.e.wrap_negative(idx, depth)
    shape = list(idx.shape)
    shape.insert(axis, depth)
    self.check_shape(f"{self.node_label}'s result", shape,
                     numpy_dtype(values.dtype).itemsize)
    shape[axis] = 1
    idx = self.e.reshape(idx, shape)
    iota_shape = [1] * rank
    iota_shape[axis] = depth
    iota = self.e.constant(np.arange(depth).astype(
        numpy_dtype(idx.dtype)).reshape(iota_shape))
    hot = self.e.compare("eq", idx, iota)
    off = self.e.reshape(self.e.slice(values, [0], [1], [1]), ())
    on = self.e.reshape(self.e.slice(values, [1], [2], [1]), ())
    return self.e.select(hot, on, off)


@_handles("Tile")
def _tile(self, ins, attrs):
    x = self.value(ins[0])
    repeats = [int(r) for r in self.const(ins[1], "repeats").reshape(-1)]
    if len(repeats) != len(x.shape) or min(repeats, default=1) < 0:
        raise Unsupported(f"repeats {repeats} for rank {len(x.shape)}")
    return self.e.tile(x, repeats)


@_handles("DepthToSpace", "SpaceToDepth")
def _depth_space(self, ins, attrs):
    x = self.value(ins[0])
    if len(x.shape) != 4:
        raise Unsupported("an input of rank other than 4")
    b = int(attrs["blocksize"])
    n, c, h, w = x.shape
    mode = attrs.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("DCR", "CRD"):
        raise Unsupported(f"mode {mode!r}")
    if self.node.op_type == "SpaceToDepth":
        # DCR: output channel (bh * b + bw) * c + ci; CRD: ci * b * b + ...
        y = self.e.reshape(x, (n, c, h // b, b, w // b, b))
        y = self.e.transpose(y, (0, 3, 5, 1, 2, 4) if mode == "DCR"
                             else (0, 1, 3, 5, 2, 4))
        return self.e.reshape(y, (n, c * b * b, h // b, w // b))
    if mode == "DCR":
        y = self.e.reshape(x, (n, b, b, c // (b * b), h, w))
        y = self.e.transpose(y, (0, 3, 4, 1, 5, 2))
    else:
        y = self.e.reshape(x, (n, c // (b * b), b, b, h, w))
        y = self.e.transpose(y, (0, 1, 4, 2, 5, 3))
    return self.e.reshape(y, (n, c // (b * b), h * b, w * b))


# Layout ------------------------------------------------------------------------

@_handles("Reshape")
def _reshape(self, ins, attrs):
    x = self.value(ins[0])
    shape = [int(d) for d in self.const(ins[1], "the shape").reshape(-1)]
    if min(shape, default=0) < -1:
        raise self.invalid(f"{self.node_label} reshapes to {shape}; the "
                           "entries of a shape are -1 or more")
    allow_zero = attrs.get("allowzero", 0)
    for i, d in enumerate(shape):
        if d == 0 and not allow_zero:
            shape[i] = x.shape[i]
    if shape.count(-1) > 1:
        raise Unsupported("a shape with several -1")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        total = int(np.prod(x.shape))
        if known == 0 or total % known:
            raise Unsupported(f"reshape of {list(x.shape)} to {shape}")
        shape[shape.index(-1)] = total // known
    if int(np.prod(shape)) != int(np.prod(x.shape)):
        raise Unsupported(f"reshape of {list(x.shape)} to {shape}")
    return self.e.reshape(x, shape)


@_handles("Flatten")
def _flatten(self, ins, attrs):
    x = self.value(ins[0])
    axis = attrs.get("axis", 1)
    axis = axis + len(x.shape) if axis < 0 else axis
    lead = int(np.prod(x.shape[:axis]))
    return self.e.reshape(x, (lead, int(np.prod(x.shape[axis:]))))


@_handles("Transpose")
def _transpose(self, ins, attrs):
    x = self.value(ins[0])
    perm = attrs.get("perm", list(reversed(range(len(x.shape)))))
    return self.e.transpose(x, perm)


@_handles("Squeeze", "Unsqueeze")
def _squeeze(self, ins, attrs):
    x = self.value(ins[0])
    axes = ins[1] if len(ins) > 1 else None
    axes = None if axes is None else [int(a) for a in
                                      self.const(axes, "axes").reshape(-1)]
    shape = list(x.shape)
    if self.node.op_type == "Squeeze":
        if axes is None:
            shape = [d for d in shape if d != 1]
        else:
            axes = [_axis(a, len(shape)) for a in axes]
            if any(shape[a] != 1 for a in axes):
                raise Unsupported("squeezing a dimension that is not 1")
            shape = [d for i, d in enumerate(shape) if i not in axes]
    else:
        if axes is None:
            raise Unsupported("Unsqueeze without axes")
        rank = len(shape) + len(axes)
        for a in sorted(_axis(a, rank) for a in axes):
            shape.insert(a, 1)
    return self.e.reshape(x, shape)


@_handles("Concat")
def _concat(self, ins, attrs):
    _common(self, ins)
    values = [self.value(v) for v in ins]
    rank = len(values[0].shape)
    axis = _axis(attrs["axis"], rank)
    values = [v for v in values if v.shape[axis] != 0] or values[:1]
    return self.e.concat(values, axis)


@_handles("Slice")
def _slice(self, ins, attrs):
    x = self.value(ins[0])
    rank = len(x.shape)
    starts = self.const(ins[1], "starts").tolist()
    ends = self.const(ins[2], "ends").tolist()
    axes = self.const(ins[3], "axes").tolist() if len(ins) > 3 and \
        ins[3] is not None else list(range(len(starts)))
    steps = self.const(ins[4], "steps").tolist() if len(ins) > 4 and \
        ins[4] is not None else [1] * len(starts)
    lo, hi, st = [0] * rank, list(x.shape), [1] * rank
    reversed_axes = []
    for s, e, a, step in zip(starts, ends, axes, steps):
        a = _axis(int(a), rank)
        size = x.shape[a]
        if step == 0:
            raise Unsupported("a slice with a step of 0")
        s = s + size if s < 0 else s
        e = e + size if e < 0 else e
        if step > 0:
            s = min(max(s, 0), size)
            e = min(max(e, s), size)
            lo[a], hi[a], st[a] = s, e, step
            continue
        # A negative step walks from s down to just above e: reversed, the
        # axis is a forward slice from size - 1 - s up to size - 1 - e.
        s = min(max(s, 0), size - 1)
        e = min(max(e, -1), size - 1)
        first, stop = size - 1 - s, size - 1 - e
        lo[a], hi[a], st[a] = first, max(stop, first), -step
        reversed_axes.append(a)
    return self.e.slice(self.e.reverse(x, reversed_axes), lo, hi, st)


def _scatter_reduction(attrs) -> str:
    reduction = attrs.get("reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) \
        else reduction
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise Unsupported(f"reduction '{reduction}'")
    return reduction


@_handles("ScatterND")
def _scatter_nd(self, ins, attrs):
    x, idx = self.value(ins[0]), self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    q = idx.shape[-1] if idx.shape else 0
    if not 1 <= q <= len(x.shape):
        raise Unsupported(f"index tuples of {q} coordinates")
    dims = self.e.constant(np.array(x.shape[:q], dtype=np.int64))
    idx = self.e.wrap_negative(self.e.cast(idx, "i64"), dims)
    return self.e.scatter_nd(x, idx, self.value(ins[2], x.dtype),
                             _scatter_reduction(attrs))


@_handles("ScatterElements")
def _scatter_elements(self, ins, attrs):
    x, idx = self.value(ins[0]), self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    idx = self.e.wrap_negative(idx, x.shape[axis])
    return self.e.scatter_elements(x, idx, self.value(ins[2], x.dtype), axis,
                                   _scatter_reduction(attrs))


@_handles("Gather")
def _gather(self, ins, attrs):
    x = self.value(ins[0])
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    size = x.shape[axis]
    idx = ins[1]
    if isinstance(idx, Value):
        if idx.dtype not in ("i64", "i32"):
            raise Unsupported(f"{idx.dtype} indices")
        i = self.e.wrap_negative(idx, size)
    else:
        arr = np.asarray(idx).astype(np.int64)
        arr = np.where(arr < 0, arr + size, arr)
        if arr.size and (arr.min() < 0 or arr.max() >= size):
            raise Unsupported(f"index out of range for a dimension of {size}")
        i = self.e.constant(arr, None)
    return self.e.gather(x, i, axis)


@_handles("GatherElements")
def _gather_elements(self, ins, attrs):
    x = self.value(ins[0])
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    idx = self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    return self.e.gather_elements(
        x, self.e.wrap_negative(idx, x.shape[axis]), axis)


@_handles("GatherND")
def _gather_nd(self, ins, attrs):
    """data[indices[..., 0], indices[..., 1], ...] (the first b dimensions
    shared as batch): the indexed dimensions are flattened into one and
    gathered with the linearized index."""
    x = self.value(ins[0])
    idx = self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    idx = self.e.cast(idx, "i64")
    b = int(attrs.get("batch_dims", 0))
    m = idx.shape[-1] if idx.shape else 0
    if not idx.shape or not 1 <= m <= len(x.shape) - b or \
            tuple(idx.shape[:b]) != tuple(x.shape[:b]):
        raise Unsupported(f"indices of shape {list(idx.shape)} for data of "
                          f"shape {list(x.shape)} and batch_dims {b}")
    lead = idx.shape[:-1]
    indexed = x.shape[b:b + m]
    block = int(np.prod(indexed))
    flat = None
    stride = block
    for j, size in enumerate(indexed):
        stride //= size
        comp = self.e.reshape(self.e.slice(
            idx, [0] * (len(idx.shape) - 1) + [j],
            list(idx.shape[:-1]) + [j + 1], [1] * len(idx.shape)), lead)
        comp = self.e.wrap_negative(comp, size)
        term = self.e.binary("mul", comp, self.e.scalar(stride, "i64"))
        flat = term if flat is None else self.e.binary("add", flat, term)
    if b:
        batches = int(np.prod(x.shape[:b]))
        base = (np.arange(batches, dtype=np.int64) * block).reshape(
            tuple(x.shape[:b]) + (1,) * (len(lead) - b))
        flat = self.e.binary("add", flat, self.e.constant(base))
    rest = x.shape[b + m:]
    table = self.e.reshape(x, (int(np.prod(x.shape[:b + m])),) + tuple(rest))
    return self.e.gather(table, flat, 0)


@_handles("Split")
def _split(self, ins, attrs):
    x = self.value(ins[0])
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    size = x.shape[axis]
    split = ins[1] if len(ins) > 1 else None
    count = len(self.node.output)
    if split is not None:
        sizes = [int(s) for s in self.const(split, "split")]
    else:
        n = attrs.get("num_outputs", count)
        chunk = -(-size // n)
        sizes = [min(chunk, size - i * chunk) for i in range(n)]
    return composites.split(self.e, x, axis, sizes)


@_handles("Expand")
def _expand(self, ins, attrs):
    x = self.value(ins[0])
    shape = [int(d) for d in self.const(ins[1], "the shape").reshape(-1)]
    if min(shape, default=0) < 0:
        raise self.invalid(f"{self.node_label} expands to {shape}; the "
                           "entries of a shape are 0 or more")
    try:
        shape = np.broadcast_shapes(x.shape, tuple(shape))
    except ValueError:
        raise Unsupported(f"expanding {list(x.shape)} to {shape}") from None
    return self.e.broadcast_to(x, shape)


@_handles("Pad")
def _pad(self, ins, attrs):
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    x = self.value(ins[0])
    rank = len(x.shape)
    pads = [int(p) for p in self.const(ins[1], "pads")]
    value = 0.0
    if len(ins) > 2 and ins[2] is not None:
        value = float(np.asarray(self.const(ins[2], "the pad value")).
                      reshape(-1)[0]) if np.size(ins[2]) else 0.0
    axes = list(range(rank))
    if len(ins) > 3 and ins[3] is not None:
        axes = [_axis(int(a), rank) for a in self.const(ins[3], "axes")]
    low, high = [0] * rank, [0] * rank
    n = len(axes)
    for i, a in enumerate(axes):
        low[a], high[a] = pads[i], pads[i + n]
    if min(low + high) < 0:
        raise Unsupported("negative pads")
    if x.dtype == "i1":
        raise Unsupported("padding a bool tensor")
    return self.e.pad(x, low, high, mode, value)
