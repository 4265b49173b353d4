"""Reductions, sorting and normalization: sums, extrema and their
indices, top-k and sort, variance, softmax, and the layer, group, instance
and batch norms."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import Unsupported
from ._core import _flow_dtype, _handles, _norm_dim


@_handles("aten.topk.default")
def _topk(self, x, k, dim=-1, largest=True, sorted=True):
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    values, indices = self.e.topk(v, int(k), _norm_dim(dim, len(v.shape)),
                                  bool(largest))
    return (self.e.cast(values, _flow_dtype(self.meta()[0].dtype)), indices)


def _sort_args(self, args, kwargs):
    """(dim, descending) of sort/argsort: positional in the .default
    overloads, keywords in .stable (x, *, stable, dim, descending)."""
    if str(self.node.target).endswith(".default"):
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending",
                                                              False)
        return dim, descending
    return kwargs.get("dim", -1), kwargs.get("descending", False)


@_handles("aten.sort.default", "aten.sort.stable")
def _sort(self, x, *args, **kwargs):
    """flow.sort: stable (equal values keep their order), NaN last
    ascending and first descending, as PyTorch sorts."""
    dim, descending = _sort_args(self, args, kwargs)
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    if not v.shape:
        return v, self.e.scalar(0, "i64")
    values, indices = self.e.sort(v, _norm_dim(dim, len(v.shape)),
                                  bool(descending))
    return (self.e.cast(values, _flow_dtype(self.meta()[0].dtype)), indices)


@_handles("aten.argsort.default", "aten.argsort.stable")
def _argsort(self, x, *args, **kwargs):
    dim, descending = _sort_args(self, args, kwargs)
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    return self.e.sort(v, _norm_dim(dim, len(v.shape)), bool(descending))[1]


@_handles("aten.max.dim", "aten.min.dim")
def _max_min_dim(self, x, dim, keepdim=False):
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    d = _norm_dim(dim, max(len(v.shape), 1))
    is_max = "max" in str(self.node.target)
    if is_max:
        values = self.e.reduce("max", v, [d], keepdim)
    else:
        values = self.e.reduce_min(v, [d], keepdim)
    values = self.e.cast(values, _flow_dtype(self.meta()[0].dtype))
    return (values, self.e.arg_reduce("max" if is_max else "min", v, d,
                                      keepdim))


@_handles("aten.var.correction", "aten.var.dim")
def _var(self, x, dims=None, *args, correction=None, keepdim=False,
         unbiased=None):
    v = self.value(x, self.out_dtype())
    if args:  # var.dim(x, dims, unbiased, keepdim)
        unbiased = args[0]
        keepdim = args[1] if len(args) > 1 else keepdim
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        dims = list(range(len(v.shape)))
    if isinstance(dims, int):
        dims = [dims]
    dims = [_norm_dim(d, max(len(v.shape), 1)) for d in dims]
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    count = int(np.prod([v.shape[d] for d in dims]))
    mean = self.e.reduce("mean", v, dims, True)
    centered = self.e.binary("sub", v, mean)
    total = self.e.reduce("sum", self.e.binary("mul", centered, centered),
                          dims, keepdim)
    return self.e.binary("div", total, self.e.scalar(
        max(count - correction, 0), v.dtype))


def _channel_affine(self, y, w, b, dtype):
    """y * w + b with w and b (either may be None) per channel."""
    return composites.channel_affine(
        self.e, y, self.value(w, dtype) if w is not None else None,
        self.value(b, dtype) if b is not None else None)


@_handles("aten.native_group_norm.default")
def _group_norm(self, x, w, b, n, c, hw, groups, eps):
    dtype = _flow_dtype(self.meta()[0].dtype)
    v = self.value(x, dtype)
    shape = v.shape
    grouped = self.e.reshape(
        v, (shape[0], groups, int(np.prod(shape[1:])) // groups))
    y = self.e.reshape(self.e.normalize(grouped, [2], eps), shape)
    return (_channel_affine(self, y, w, b, dtype), None, None)


@_handles("aten._native_batch_norm_legit.no_stats")
def _batch_norm_batch_stats(self, x, w, b, training, momentum, eps):
    """Normalization by the batch's own statistics (instance norm, and
    batch norm in training mode without running statistics)."""
    dtype = _flow_dtype(self.meta()[0].dtype)
    v = self.value(x, dtype)
    axes = [0] + list(range(2, len(v.shape)))
    y = self.e.normalize(v, axes, eps)
    return (_channel_affine(self, y, w, b, dtype), None, None)


@_handles("aten._native_batch_norm_legit_functional.default")
def _batch_norm_functional(self, x, w, b, mean, var, training, momentum,
                           eps):
    """Batch norm with its running statistics' next values as results
    (out, batch mean, batch rstd, running mean, running var). In training:
    normalized by the batch's statistics (biased variance); the running
    statistics become (1 - momentum) old + momentum batch, the variance
    unbiased (n / (n - 1)), as PyTorch updates them."""
    dtype = _flow_dtype(self.meta()[0].dtype)
    if not training:
        y = _inference_batch_norm(self, dtype, x, w, b, mean, var, eps)
        return (y, None, None, self.value(mean), self.value(var))
    v = self.value(x, dtype)
    rank = len(v.shape)
    axes = [0] + list(range(2, rank))
    count = int(np.prod([v.shape[a] for a in axes]))
    y, batch_mean, batch_var, rstd = self.e.normalize_with_statistics(
        v, axes, eps)
    y = _channel_affine(self, y, w, b, dtype)
    c = v.shape[1]
    flat = [self.e.reshape(t, (c,)) for t in (batch_mean, batch_var, rstd)]
    outs = [y, flat[0], flat[2]]
    unbiased = count / (count - 1) if count > 1 else float("inf")
    for running, batch, factor in ((mean, flat[0], 1.0),
                                    (var, flat[1], unbiased)):
        if running is None:
            outs.append(None)
            continue
        r = self.value(running)
        bv = self.e.cast(batch, r.dtype)
        update = self.e.binary("mul", bv, self.e.scalar(momentum * factor,
                                                          r.dtype))
        keep = self.e.binary("mul", r, self.e.scalar(1 - momentum, r.dtype))
        outs.append(self.e.binary("add", keep, update))
    return tuple(outs)


# Normalization and reductions ---------------------------------------------

@_handles("aten.native_layer_norm.default")
def _layer_norm(self, x, normalized_shape, w, b, eps):
    dtype = _flow_dtype(self.meta()[0].dtype)
    xv = self.value(x, dtype)
    axis = len(xv.shape) - len(normalized_shape)
    wv = self.value(w, dtype) if w is not None else None
    bv = self.value(b, dtype) if b is not None else None
    y = self.e.layer_norm(xv, wv, bv, axis, eps)
    return (y, None, None)


@_handles("aten.layer_norm.default")
def _layer_norm_as_exported(self, x, normalized_shape, w=None, b=None,
                            eps=1e-5, cudnn_enable=True):
    """torch.export's own layer_norm (before decompositions): the normalized
    tensor only."""
    return _layer_norm(self, x, normalized_shape, w, b, eps)[0]


def _inference_batch_norm(self, dtype, x, w, b, mean, var, eps):
    """flow.batch_norm of `x` with running statistics (a missing weight is
    ones, a missing bias zeros)."""
    xv = self.value(x, dtype)
    c = xv.shape[1]
    ones = np.ones(c, dtype=np.float32)
    wv = self.value(w, dtype) if w is not None else self.e.cast(
        self.e.constant(ones), dtype)
    bv = self.value(b, dtype) if b is not None else self.e.cast(
        self.e.constant(ones * 0), dtype)
    return self.e.batch_norm(xv, wv, bv, self.value(mean, dtype),
                             self.value(var, dtype), eps)


@_handles("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(self, x, w, b, mean, var, momentum, eps):
    dtype = _flow_dtype(self.meta()[0].dtype)
    return (_inference_batch_norm(self, dtype, x, w, b, mean, var, eps),
            None, None)


@_handles("aten.batch_norm.default")
def _batch_norm_as_exported(self, x, w, b, mean, var, training, momentum, eps,
                            cudnn_enabled=True):
    """torch.export's own batch_norm (before decompositions), in inference:
    the running statistics. (One after a convolution is folded into it by
    _fold_batch_norms first.)"""
    if training or mean is None or var is None:
        raise Unsupported("batch norm with batch statistics")
    return _inference_batch_norm(self, self.out_dtype(), x, w, b, mean, var,
                                 eps)


def _softmax_like(op):
    def handler(self, x, dim, *_):
        v = self.value(x, self.out_dtype())
        return self.e.softmax(op, v, _norm_dim(dim, len(v.shape)))
    return handler


_handles("aten._softmax.default", "aten.softmax.int")(_softmax_like("softmax"))
_handles("aten._log_softmax.default", "aten.log_softmax.int")(
    _softmax_like("log_softmax"))


def _reduction(kind):
    def handler(self, x, dims=None, keepdim=False, *_, **kwargs):
        dtype = self.out_dtype()
        v = self.value(x, dtype)
        if dims is None or (isinstance(dims, (list, tuple)) and not dims):
            dims = list(range(len(v.shape)))
        if isinstance(dims, int):
            dims = [dims]
        dims = [_norm_dim(d, len(v.shape)) for d in dims]
        if kind == "min":
            return self.e.reduce_min(v, dims, keepdim)
        return self.e.reduce(kind, v, dims, keepdim)
    return handler


_handles("aten.sum.dim_IntList", "aten.sum.default")(_reduction("sum"))
_handles("aten.mean.dim", "aten.mean.default")(_reduction("mean"))
_handles("aten.amax.default", "aten.max.default")(_reduction("max"))
_handles("aten.amin.default", "aten.min.default")(_reduction("min"))


@_handles("aten.cumsum.default")
def _cumsum(self, x, dim, dtype=None):
    # Integer and bool inputs sum in int64, as in PyTorch.
    v = self.value(x, self.out_dtype())
    return self.e.cumsum(v, _norm_dim(dim, max(len(v.shape), 1)))


def _arg_reduction(kind):
    def handler(self, x, dim=None, keepdim=False):
        v = self.value(x)
        if v.dtype == "i1":
            v = self.e.cast(v, "i32")
        if dim is None:
            # Over every element: the index into the flattened tensor.
            flat = self.e.reshape(v, (int(np.prod(v.shape)),))
            r = self.e.arg_reduce(kind, flat, 0, False)
            return self.e.reshape(r, self.out_shape()) if keepdim else r
        return self.e.arg_reduce(kind, v, _norm_dim(dim, max(len(v.shape), 1)),
                                 keepdim)
    return handler


_handles("aten.argmax.default")(_arg_reduction("max"))
_handles("aten.argmin.default")(_arg_reduction("min"))


@_handles("aten.any.dim", "aten.any.dims", "aten.any.default")
def _any(self, x, dims=None, keepdim=False):
    v = self.value(x)
    as_int = self.e.cast(v, "i32")
    if dims is None:
        dims = list(range(len(v.shape)))
    if isinstance(dims, int):
        dims = [dims]
    m = self.e.reduce("max", as_int, [_norm_dim(d, len(v.shape))
                                      for d in dims], keepdim)
    return self.e.compare("ne", m, self.e.scalar(0, "i32"))
