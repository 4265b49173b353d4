"""Reductions and normalization: sums, extrema and their indices, norms,
top-k, softmax and hardmax, and the batch, layer, instance and
mean-variance normalizations."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import FLOAT_TYPES, Unsupported
from ._core import _axis, _float_input, _handles, _rounds_once


# Normalization ---------------------------------------------------------------

@_handles("BatchNormalization")
def _batch_norm(self, ins, attrs):
    if attrs.get("training_mode", 0):
        raise Unsupported("training_mode=1")
    dtype = self.dtype_of(ins[0])
    vs = [self.value(v, dtype) for v in ins[:5]]
    return self.e.batch_norm(*vs, attrs.get("epsilon", 1e-5))


@_handles("LayerNormalization")
def _layer_norm(self, ins, attrs):
    x = self.value(ins[0])
    if x.dtype not in FLOAT_TYPES:
        raise Unsupported(f"{x.dtype} input")
    axis = _axis(attrs.get("axis", -1), len(x.shape))
    extra = []
    if len(self.node.output) > 1 and any(self.node.output[1:]):
        # Mean and 1 / sqrt(variance + epsilon), in f32 as ONNX defines.
        axes = list(range(axis, len(x.shape)))
        xf = self.e.cast(x, "f32")
        mean = self.e.reduce("mean", xf, axes, True)
        centered = self.e.binary("sub", xf, mean)
        var = self.e.reduce("mean", self.e.binary("mul", centered, centered),
                            axes, True)
        eps = self.e.scalar(attrs.get("epsilon", 1e-5), "f32")
        extra = [mean, self.e.unary("rsqrt", self.e.binary("add", var, eps))]
    w = self.value(ins[1], x.dtype) if len(ins) > 1 and ins[1] is not None \
        else None
    b = self.value(ins[2], x.dtype) if len(ins) > 2 and ins[2] is not None \
        else None
    y = self.e.layer_norm(x, w, b, axis, attrs.get("epsilon", 1e-5))
    return [y] + extra


def _softmax_like(op):
    def handler(self, ins, attrs):
        x = self.value(ins[0])
        if x.dtype not in FLOAT_TYPES:
            raise Unsupported(f"{x.dtype} input")
        return self.e.softmax(op, x, _axis(attrs.get("axis", -1),
                                           len(x.shape)))
    return handler


_handles("Softmax")(_softmax_like("softmax"))
_handles("LogSoftmax")(_softmax_like("log_softmax"))


def _reduce_axes(self, ins, attrs, rank, axes_input_from):
    if self.opset >= axes_input_from:
        axes = ins[1] if len(ins) > 1 else None
        axes = None if axes is None else self.const(axes, "axes").tolist()
    else:
        axes = attrs.get("axes")
    if axes is None or len(axes) == 0:
        if attrs.get("noop_with_empty_axes", 0):
            return []
        return list(range(rank))
    return [_axis(int(a), rank) for a in axes]


def _reduction(kind):
    def handler(self, ins, attrs):
        x = self.value(ins[0])
        is_bool = x.dtype == "i1"
        if is_bool:
            if kind not in ("max", "min"):
                raise Unsupported("bool input")
            # max is any, min is all (an empty one is true).
            x = self.e.cast(x, "ui8")
        op = self.node.op_type
        axes = _reduce_axes(self, ins, attrs, len(x.shape),
                            13 if op == "ReduceSum" else 18)
        keep = bool(attrs.get("keepdims", 1))
        if not axes:
            y = x
        elif kind == "min":
            y = self.e.reduce_min(x, axes, keep)
        else:
            y = self.e.reduce(kind, x, axes, keep)
        return self.e.cast(y, "i1") if is_bool else y
    return handler


_handles("ReduceSum")(_reduction("sum"))
_handles("ReduceMean")(_reduction("mean"))
_handles("ReduceMax")(_reduction("max"))
_handles("ReduceMin")(_reduction("min"))


@_handles("CumSum")
def _cumsum(self, ins, attrs):
    x = self.value(ins[0])
    if x.dtype == "i1":
        raise Unsupported("bool input")
    axis = self.const(ins[1], "axis").reshape(-1)
    if axis.size != 1:
        raise Unsupported("an axis that is not a single value")
    return self.e.cumsum(x, _axis(int(axis[0]), len(x.shape)),
                         bool(attrs.get("exclusive", 0)),
                         bool(attrs.get("reverse", 0)))


def _arg_reduction(kind):
    def handler(self, ins, attrs):
        x = self.value(ins[0])
        if x.dtype == "i1":
            raise Unsupported("bool input")
        axis = _axis(int(attrs.get("axis", 0)), max(len(x.shape), 1))
        return self.e.arg_reduce(kind, x, axis,
                                 bool(attrs.get("keepdims", 1)),
                                 bool(attrs.get("select_last_index", 0)))
    return handler


_handles("ArgMax")(_arg_reduction("max"))
_handles("ArgMin")(_arg_reduction("min"))


@_handles("Hardmax")
def _hardmax(self, ins, attrs):
    x = _float_input(self, ins[0])
    axis = _axis(attrs.get("axis", -1), len(x.shape))
    best = self.e.arg_reduce("max", x, axis, True)
    iota_shape = [1] * len(x.shape)
    iota_shape[axis] = x.shape[axis]
    iota = self.e.constant(np.arange(x.shape[axis]).reshape(iota_shape))
    hot = self.e.compare("eq", best, iota)
    return self.e.select(hot, self.e.scalar(1, x.dtype),
                         self.e.scalar(0, x.dtype))


def _norm_reduction(kind):
    """ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp."""
    def handler(self, ins, attrs):
        x = _float_input(self, ins[0])
        axes = _reduce_axes(self, ins, attrs, len(x.shape), 18)
        keep = bool(attrs.get("keepdims", 1))
        if not axes:
            return x
        if kind == "logsumexp":
            m = self.e.reduce("max", x, axes, True)
            # A row of -inf: its max is -inf; shift by 0 there instead.
            m = self.e.select(self.e.compare("eq", m, self.e.scalar(
                -np.inf, x.dtype)), self.e.scalar(0, x.dtype), m)
            s = self.e.reduce("sum", self.e.unary("exp", self.e.binary(
                "sub", x, m)), axes, keep)
            m = m if keep else self.e.reshape(m, s.shape)
            return self.e.binary("add", self.e.unary("log", s), m)
        term = {"l1": lambda: self.e.unary("abs", x),
                "l2": lambda: self.e.binary("mul", x, x),
                "sumsquare": lambda: self.e.binary("mul", x, x),
                "logsum": lambda: x}[kind]()
        s = self.e.reduce("sum", term, axes, keep)
        if kind == "l2":
            return self.e.unary("sqrt", s)
        if kind == "logsum":
            return self.e.unary("log", s)
        return s
    return handler


for _op, _kind in [("ReduceL1", "l1"), ("ReduceL2", "l2"),
                   ("ReduceSumSquare", "sumsquare"),
                   ("ReduceLogSum", "logsum"),
                   ("ReduceLogSumExp", "logsumexp")]:
    _handles(_op)(_rounds_once(_norm_reduction(_kind)))


@_handles("LpNormalization")
@_rounds_once
def _lp_normalization(self, ins, attrs):
    x = _float_input(self, ins[0])
    axis = _axis(attrs.get("axis", -1), len(x.shape))
    p = attrs.get("p", 2)
    if p == 1:
        norm = self.e.reduce("sum", self.e.unary("abs", x), [axis], True)
    elif p == 2:
        norm = self.e.unary("sqrt", self.e.reduce(
            "sum", self.e.binary("mul", x, x), [axis], True))
    else:
        raise Unsupported(f"p = {p} (1 and 2 are defined)")
    # A zero vector stays zero (ONNX's reference divides by 1 there).
    zero = self.e.scalar(0, x.dtype)
    norm = self.e.select(self.e.compare("eq", norm, zero),
                         self.e.scalar(1, x.dtype), norm)
    return self.e.binary("div", x, norm)


@_handles("InstanceNormalization")
@_rounds_once
def _instance_norm(self, ins, attrs):
    x = _float_input(self, ins[0])
    if len(x.shape) < 3:
        raise Unsupported("an input of rank below 3")
    y = self.e.normalize(x, list(range(2, len(x.shape))),
                         attrs.get("epsilon", 1e-5))
    return composites.channel_affine(self.e, y, self.value(ins[1], x.dtype),
                                     self.value(ins[2], x.dtype))


@_handles("MeanVarianceNormalization")
@_rounds_once
def _mvn(self, ins, attrs):
    x = _float_input(self, ins[0])
    axes = [_axis(int(a), len(x.shape)) for a in attrs.get("axes", [0, 2, 3])]
    return self.e.normalize(x, axes, 1e-9)


@_handles("TopK")
def _topk(self, ins, attrs):
    x = self.value(ins[0])
    if x.dtype == "i1":
        raise Unsupported("bool input")
    k = int(np.asarray(self.const(ins[1], "K")).reshape(-1)[0])
    axis = _axis(attrs.get("axis", -1), len(x.shape))
    return self.e.topk(x, k, axis, bool(attrs.get("largest", 1)))
