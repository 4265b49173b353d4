"""Element-wise ops and activations: arithmetic, comparisons, logic,
unary math, clips, and the activations Flow builds from its own ops
(`flow._composites`, shared with the PyTorch importer)."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import FLOAT_TYPES, INT_TYPES, Unsupported, Value
from ._core import _common, _float_input, _handles, _rounds_once


def _binary(op, float_only=False):
    def handler(self, ins, attrs):
        dtype = _common(self, ins, float_only)
        if dtype == "i1":
            raise Unsupported("bool operands")
        return self.e.binary(op, self.value(ins[0]), self.value(ins[1]))
    return handler


for _op, _flow in [("Add", "add"), ("Sub", "sub"), ("Mul", "mul"),
                   ("Div", "div")]:
    _handles(_op)(_binary(_flow))


@_handles("Pow")
def _pow(self, ins, attrs):
    base = self.value(ins[0])
    if base.dtype == "i1":
        raise Unsupported("bool base")
    exponent = ins[1]
    if base.dtype in INT_TYPES:
        e = self.value(exponent)
        if e.dtype in FLOAT_TYPES:
            # ONNX's reference: the power in f64, truncated to the base type.
            return self.e.cast(self.e.binary("pow", self.e.cast(base, "f64"),
                                             self.e.cast(e, "f64")),
                               base.dtype)
        return self.e.int_pow(base, e)
    if not isinstance(exponent, Value):
        e = np.asarray(exponent)
        if e.size == 1 and float(e.reshape(-1)[0]).is_integer() and \
                abs(float(e.reshape(-1)[0])) <= 4 and e.ndim <= len(base.shape):
            return composites.integer_power(self.e, base,
                                            int(e.reshape(-1)[0]))
    return self.e.binary("pow", base, self.value(exponent, base.dtype))


def _variadic(op):
    def handler(self, ins, attrs):
        _common(self, ins)
        acc = self.value(ins[0])
        for x in ins[1:]:
            acc = self.e.binary(op, acc, self.value(x))
        return acc
    return handler


_handles("Max")(_variadic("maximum"))
_handles("Min")(_variadic("minimum"))
_handles("Sum")(_variadic("add"))


@_handles("Mean")
def _mean(self, ins, attrs):
    acc = _variadic("add")(self, ins, attrs)
    return self.e.binary("div", acc, self.e.scalar(len(ins), acc.dtype))


for _op, _pred in [("Equal", "eq"), ("Less", "lt"), ("LessOrEqual", "le"),
                   ("Greater", "gt"), ("GreaterOrEqual", "ge")]:
    def _make(pred):
        def handler(self, ins, attrs):
            _common(self, ins)
            return self.e.compare(pred, self.value(ins[0]), self.value(ins[1]))
        return handler
    _handles(_op)(_make(_pred))


@_handles("Not")
def _not(self, ins, attrs):
    return composites.logical_not(self.e, self.value(ins[0], "i1"))


@_handles("And", "Or")
def _and_or(self, ins, attrs):
    a, b = self.value(ins[0], "i1"), self.value(ins[1], "i1")
    if self.node.op_type == "And":
        return composites.logical_and(self.e, a, b)
    return composites.logical_or(self.e, a, b)


@_handles("Where")
def _where(self, ins, attrs):
    dtype = _common(self, ins[1:])
    return self.e.select(self.value(ins[0], "i1"), self.value(ins[1], dtype),
                         self.value(ins[2], dtype))


def _unary(op, float_only=True):
    def handler(self, ins, attrs):
        v = self.value(ins[0])
        if float_only and v.dtype not in FLOAT_TYPES:
            raise Unsupported(f"{v.dtype} input")
        if v.dtype == "i1":
            raise Unsupported("bool input")
        return self.e.unary(op, v)
    return handler


for _op, _flow, _float in [("Neg", "neg", False), ("Abs", "abs", False),
                           ("Exp", "exp", True), ("Log", "log", True),
                           ("Sqrt", "sqrt", True), ("Tanh", "tanh", True),
                           ("Sin", "sin", True), ("Cos", "cos", True),
                           ("Floor", "floor", True), ("Ceil", "ceil", True),
                           ("Round", "round", True),
                           ("Sigmoid", "sigmoid", True), ("Relu", "relu", False),
                           ("Erf", "erf", True)]:
    _handles(_op)(_unary(_flow, _float))


@_handles("IsNaN")
def _is_nan(self, ins, attrs):
    v = self.value(ins[0])
    if v.dtype not in FLOAT_TYPES:
        raise Unsupported(f"{v.dtype} input")
    return self.e.compare("ne", v, v)


@_handles("Reciprocal")
def _reciprocal(self, ins, attrs):
    return composites.reciprocal(self.e, self.value(ins[0]))


@_handles("Gelu")
def _gelu(self, ins, attrs):
    v = self.value(ins[0])
    approximate = attrs.get("approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) \
        else approximate
    return self.e.unary("gelu", v, {"approximate": approximate})


@_handles("LeakyRelu")
def _leaky_relu(self, ins, attrs):
    return composites.leaky_relu(self.e, self.value(ins[0]),
                                 attrs.get("alpha", 0.01))


@_handles("Softplus")
@_rounds_once
def _softplus(self, ins, attrs):
    return composites.softplus(self.e, self.value(ins[0]))


@_handles("HardSigmoid")
@_rounds_once
def _hard_sigmoid(self, ins, attrs):
    return composites.hard_sigmoid(self.e, self.value(ins[0]),
                                   attrs.get("alpha", 0.2),
                                   attrs.get("beta", 0.5))


@_handles("Clip")
def _clip(self, ins, attrs):
    v = self.value(ins[0])
    lo = ins[1] if len(ins) > 1 else None
    hi = ins[2] if len(ins) > 2 else None
    return composites.clamp(
        self.e, v, self.value(lo, v.dtype) if lo is not None else None,
        self.value(hi, v.dtype) if hi is not None else None)


@_handles("Elu", "Selu")
@_rounds_once
def _elu(self, ins, attrs):
    v = _float_input(self, ins[0])
    selu = self.node.op_type == "Selu"
    alpha = attrs.get("alpha", 1.67326319217681884765625 if selu else 1.0)
    gamma = attrs.get("gamma", 1.05070102214813232421875) if selu else None
    return composites.elu(self.e, v, alpha, gamma)


@_handles("Celu")
@_rounds_once
def _celu(self, ins, attrs):
    return composites.celu(self.e, _float_input(self, ins[0]),
                           attrs.get("alpha", 1.0))


@_handles("Softsign")
@_rounds_once
def _softsign(self, ins, attrs):
    return composites.softsign(self.e, _float_input(self, ins[0]))


@_handles("ThresholdedRelu")
def _thresholded_relu(self, ins, attrs):
    return composites.thresholded_relu(self.e, _float_input(self, ins[0]),
                                       attrs.get("alpha", 1.0))


@_handles("HardSwish")
@_rounds_once
def _hard_swish(self, ins, attrs):
    return composites.hard_swish(self.e, _float_input(self, ins[0]))


@_handles("Mish")
@_rounds_once
def _mish(self, ins, attrs):
    return composites.mish(self.e, _float_input(self, ins[0]))


@_handles("PRelu")
def _prelu(self, ins, attrs):
    v = _float_input(self, ins[0])
    slope = self.value(ins[1], v.dtype)
    negative = self.e.compare("lt", v, self.e.scalar(0, v.dtype))
    return self.e.select(negative, self.e.binary("mul", v, slope), v)


@_handles("Shrink")
def _shrink(self, ins, attrs):
    v = self.value(ins[0])
    if v.dtype not in FLOAT_TYPES:
        raise Unsupported(f"{v.dtype} input")
    bias, lambd = attrs.get("bias", 0.0), attrs.get("lambd", 0.5)
    low = self.e.compare("lt", v, self.e.scalar(-lambd, v.dtype))
    high = self.e.compare("gt", v, self.e.scalar(lambd, v.dtype))
    return self.e.select(low, self.e.binary("add", v, self.e.scalar(
        bias, v.dtype)), self.e.select(high, self.e.binary(
            "sub", v, self.e.scalar(bias, v.dtype)), self.e.scalar(
                0, v.dtype)))


@_handles("Sign")
def _sign(self, ins, attrs):
    v = self.value(ins[0])
    if v.dtype == "i1":
        raise Unsupported("bool input")
    return self.e.sign(v)


@_handles("Tan", "Sinh", "Cosh")
def _trig(self, ins, attrs):
    return self.e.trig(self.node.op_type.lower(), _float_input(self, ins[0]))


@_handles("IsInf")
def _is_inf(self, ins, attrs):
    v = _float_input(self, ins[0])
    pos = self.e.compare("eq", v, self.e.scalar(np.inf, v.dtype))
    neg = self.e.compare("eq", v, self.e.scalar(-np.inf, v.dtype))
    false = self.e.scalar(False, "i1")
    pos = pos if attrs.get("detect_positive", 1) else self.e.select(
        pos, false, false)
    neg = neg if attrs.get("detect_negative", 1) else self.e.select(
        neg, false, false)
    return self.e.select(pos, self.e.scalar(True, "i1"), neg)


@_handles("Xor")
def _xor(self, ins, attrs):
    return self.e.compare("ne", self.value(ins[0], "i1"),
                          self.value(ins[1], "i1"))
