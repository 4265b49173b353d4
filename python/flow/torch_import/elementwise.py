"""Element-wise ops and activations: arithmetic, comparisons, logic,
unary math, clamps, and the activations Flow builds from its own ops
(`flow._composites`, shared with the ONNX importer)."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import FLOAT_TYPES, Unsupported, Value
from ._core import _handles, _promoted


def _elementwise(op):
    def handler(self, a, b, alpha=1, **_):
        dtype = self.out_dtype()
        av = self.value(a, dtype)
        if alpha != 1:
            b = self.e.binary("mul", self.value(b, dtype),
                              self.value(alpha, dtype))
        bv = self.value(b, dtype)
        return self.e.binary(op, av, bv)
    return handler


for _name, _op in [("add", "add"), ("sub", "sub"), ("mul", "mul"),
                   ("maximum", "maximum"), ("minimum", "minimum")]:
    _handles(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar",
             f"aten.{_name}.default")(_elementwise(_op))


@_handles("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(self, a, b, alpha=1):
    return _elementwise("sub")(self, b, a if alpha == 1 else a * alpha
                               if not isinstance(a, Value) else
                               self.e.binary("mul", a, self.value(alpha, a.dtype)))


@_handles("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode",
          "aten.div.Scalar_mode")
def _div(self, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise Unsupported(f"rounding_mode='{rounding_mode}'")
    dtype = self.out_dtype()
    return self.e.binary("div", self.value(a, dtype), self.value(b, dtype))


@_handles("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor",
          "aten.pow.Scalar")
def _pow(self, a, b):
    dtype = self.out_dtype()
    if isinstance(b, (int, float)) and float(b).is_integer() and \
            -4 <= b <= 4 and isinstance(a, Value):
        # Small integer powers multiply out (exact, and right for x < 0).
        return composites.integer_power(self.e, self.value(a, dtype), int(b))
    if isinstance(b, float) and b == 0.5 and isinstance(a, Value):
        return self.e.unary("sqrt", self.value(a, dtype))
    return self.e.binary("pow", self.value(a, dtype), self.value(b, dtype))


_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
               "ge": "ge"}
for _name in _PREDICATES:
    def _make(pred):
        def handler(self, a, b):
            dtype = _promoted(self, a, b)
            return self.e.compare(pred, self.value(a, dtype),
                                  self.value(b, dtype))
        return handler
    _handles(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar")(_make(_name))


@_handles("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther",
          "aten.where.Scalar")
def _where(self, c, a, b):
    dtype = self.out_dtype()
    return self.e.select(self.value(c, "i1"), self.value(a, dtype),
                         self.value(b, dtype))


@_handles("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(self, x, mask, value):
    dtype = self.out_dtype()
    return self.e.select(self.value(mask, "i1"), self.value(value, dtype),
                         self.value(x, dtype))


@_handles("aten.logical_not.default", "aten.bitwise_not.default")
def _not(self, x):
    v = self.value(x)
    if v.dtype != "i1":
        raise Unsupported("bitwise not of an integer tensor")
    return composites.logical_not(self.e, v)


@_handles("aten.logical_and.default", "aten.bitwise_and.Tensor",
          "aten.__and__.Tensor")
def _and(self, a, b):
    av, bv = self.value(a, "i1"), self.value(b, "i1")
    if self.out_dtype() != "i1":
        raise Unsupported("bitwise and of integer tensors")
    return composites.logical_and(self.e, av, bv)


@_handles("aten.logical_or.default", "aten.bitwise_or.Tensor",
          "aten.__or__.Tensor")
def _or(self, a, b):
    av, bv = self.value(a, "i1"), self.value(b, "i1")
    if self.out_dtype() != "i1":
        raise Unsupported("bitwise or of integer tensors")
    return composites.logical_or(self.e, av, bv)


def _unary(op, float_only=True):
    def handler(self, x, *rest, **kwargs):
        dtype = self.out_dtype()
        if float_only and dtype not in FLOAT_TYPES:
            raise Unsupported(f"{op} of a {dtype} tensor")
        return self.e.unary(op, self.value(x, dtype))
    return handler


for _name, _op, _float in [("neg", "neg", False), ("abs", "abs", False),
                           ("exp", "exp", True), ("log", "log", True),
                           ("sqrt", "sqrt", True), ("rsqrt", "rsqrt", True),
                           ("tanh", "tanh", True), ("sigmoid", "sigmoid", True),
                           ("sin", "sin", True), ("cos", "cos", True),
                           ("floor", "floor", True), ("ceil", "ceil", True),
                           ("round", "round", True),
                           ("relu", "relu", False), ("silu", "silu", True)]:
    _handles(f"aten.{_name}.default")(_unary(_op, _float))


@_handles("aten.gelu.default")
def _gelu(self, x, approximate="none"):
    return self.e.unary("gelu", self.value(x, self.out_dtype()),
                        {"approximate": approximate})


@_handles("aten.reciprocal.default")
def _reciprocal(self, x):
    return composites.reciprocal(self.e, self.value(x, self.out_dtype()))


@_handles("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(self, x, hi):
    return _clamp(self, x, None, hi)


@_handles("aten.clamp.default", "aten.clamp.Tensor", "aten.clamp_min.default",
          "aten.clamp_min.Tensor")
def _clamp(self, x, lo=None, hi=None):
    dtype = self.out_dtype()
    return composites.clamp(
        self.e, self.value(x, dtype),
        self.value(lo, dtype) if lo is not None else None,
        self.value(hi, dtype) if hi is not None else None)


@_handles("aten.hardtanh.default")
def _hardtanh(self, x, lo=-1.0, hi=1.0):
    return _clamp(self, x, lo, hi)


@_handles("aten.relu6.default")
def _relu6(self, x):
    return _clamp(self, x, 0.0, 6.0)


# More element-wise ops, from Flow's ---------------------------------------

def _float_value(self, x):
    """`x` in the op's result type, which must be a float."""
    dtype = self.out_dtype()
    if dtype not in ("f32", "f16", "bf16"):
        raise Unsupported(f"{dtype} result")
    return self.value(x, dtype)


@_handles("aten.log1p.default")
def _log1p(self, x):
    return self.e.log1p(_float_value(self, x))


@_handles("aten.expm1.default")
def _expm1(self, x):
    return self.e.expm1(_float_value(self, x))


@_handles("aten.elu.default")
def _elu(self, x, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale * (x where x > 0, else alpha * expm1(input_scale * x)): ELU,
    and what core ATen decomposes SELU and CELU to. Both scales are always
    multiplied in (as PyTorch does)."""
    return composites.elu(self.e, _float_value(self, x), alpha, scale,
                          input_scale)


@_handles("aten.leaky_relu.default")
def _leaky_relu(self, x, negative_slope=0.01):
    return composites.leaky_relu(self.e, self.value(x, self.out_dtype()),
                                 negative_slope)


@_handles("aten.sign.default")
def _sign(self, x):
    v = self.value(x, self.out_dtype())
    return v if v.dtype == "i1" else self.e.sign(v)


@_handles("aten.tan.default", "aten.sinh.default", "aten.cosh.default")
def _trig(self, x):
    kind = str(self.node.target).split(".")[1]
    return self.e.trig(kind, _float_value(self, x))


@_handles("aten.isinf.default")
def _isinf(self, x):
    v = self.value(x)
    if v.dtype not in ("f32", "f16", "bf16"):
        return self.e.compare("ne", v, v)  # integers are never infinite
    return self.e.compare("eq", self.e.unary("abs", v),
                          self.e.scalar(np.inf, v.dtype))


def _trunc_div(self, a, b):
    """a / b rounded toward zero (floats), or integer division (which
    truncates)."""
    q = self.e.binary("div", a, b)
    if a.dtype not in ("f32", "f16", "bf16"):
        return q
    return self.e.select(self.e.compare("lt", q, self.e.scalar(0, q.dtype)),
                         self.e.unary("ceil", q), self.e.unary("floor", q))


def _floor_div(self, a, b):
    q = self.e.binary("div", a, b)
    if a.dtype in ("f32", "f16", "bf16"):
        return self.e.unary("floor", q)
    # Truncated; one less where the remainder's sign differs from b's.
    r = self.e.binary("sub", a, self.e.binary("mul", q, b))
    zero = self.e.scalar(0, a.dtype)
    fix = self.e.select(self.e.compare("ne", r, zero), self.e.compare(
        "ne", self.e.compare("lt", r, zero), self.e.compare("lt", b, zero)),
        self.e.scalar(False, "i1"))
    return self.e.select(fix, self.e.binary("sub", q, self.e.scalar(
        1, a.dtype)), q)


def _operands(self, a, b):
    dtype = self.out_dtype()
    if dtype == "i1":
        raise Unsupported("bool operands")
    return self.value(a, dtype), self.value(b, dtype)


@_handles("aten.remainder.Scalar", "aten.remainder.Tensor")
def _remainder(self, a, b):
    """Python's a % b: the sign of b."""
    av, bv = _operands(self, a, b)
    return self.e.binary("sub", av, self.e.binary(
        "mul", _floor_div(self, av, bv), bv))


@_handles("aten.fmod.Scalar", "aten.fmod.Tensor")
def _fmod(self, a, b):
    """C's fmod: the sign of a."""
    av, bv = _operands(self, a, b)
    return self.e.binary("sub", av, self.e.binary(
        "mul", _trunc_div(self, av, bv), bv))


@_handles("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(self, a, b, rounding_mode=None):
    av, bv = _operands(self, a, b)
    if rounding_mode is None:
        return self.e.binary("div", av, bv)
    if rounding_mode == "trunc":
        return _trunc_div(self, av, bv)
    if rounding_mode == "floor":
        return _floor_div(self, av, bv)
    raise Unsupported(f"rounding_mode={rounding_mode!r}")
