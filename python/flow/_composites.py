"""Ops Flow builds from several of its own, shared by the importers.

Each builder takes the Emitter and Values (and the op's parameters, which
each importer reads its own way: attribute defaults, keyword arguments)
and returns the result; the caller has already checked and converted its
operands. The PyTorch and ONNX importers, and ONNX's recurrent layers for
their activations, call these, so that each composite is built one way.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ._emitter import Emitter, Value


# Activations ----------------------------------------------------------------

def elu(e: Emitter, v: Value, alpha: float, scale: Optional[float] = None,
        input_scale: Optional[float] = None) -> Value:
    """scale * (v where v > 0, else alpha * expm1(input_scale * v)): ELU,
    SELU (a scale) and PyTorch's aten.elu (both scales, which its CELU and
    SELU decompose to). A scale of None is no multiplication."""
    positive = e.compare("gt", v, e.scalar(0, v.dtype))
    inner = v if input_scale is None else e.binary(
        "mul", v, e.scalar(input_scale, v.dtype))
    y = e.select(positive, v, expm1_scaled(e, inner, alpha))
    return y if scale is None else e.binary("mul", y,
                                            e.scalar(scale, v.dtype))


def expm1_scaled(e: Emitter, v: Value, alpha: float) -> Value:
    """alpha * (exp(v) - 1)."""
    return e.binary("mul", e.expm1(v), e.scalar(alpha, v.dtype))


def celu(e: Emitter, v: Value, alpha: float) -> Value:
    """max(0, v) + min(0, alpha * expm1(v / alpha))."""
    zero = e.scalar(0, v.dtype)
    scaled = e.binary("div", v, e.scalar(alpha, v.dtype))
    return e.binary("add", e.binary("maximum", v, zero),
                    e.binary("minimum", zero, expm1_scaled(e, scaled, alpha)))


def leaky_relu(e: Emitter, v: Value, slope: float) -> Value:
    """v where v > 0, else slope * v."""
    scaled = e.binary("mul", v, e.scalar(slope, v.dtype))
    return e.select(e.compare("gt", v, e.scalar(0, v.dtype)), v, scaled)


def thresholded_relu(e: Emitter, v: Value, alpha: float) -> Value:
    """v where v > alpha, else 0."""
    above = e.compare("gt", v, e.scalar(alpha, v.dtype))
    return e.select(above, v, e.scalar(0, v.dtype))


def hard_sigmoid(e: Emitter, v: Value, alpha: float, beta: float) -> Value:
    """min(max(alpha * v + beta, 0), 1)."""
    y = e.binary("add", e.binary("mul", v, e.scalar(alpha, v.dtype)),
                 e.scalar(beta, v.dtype))
    y = e.binary("maximum", y, e.scalar(0, v.dtype))
    return e.binary("minimum", y, e.scalar(1, v.dtype))


def hard_swish(e: Emitter, v: Value) -> Value:
    """v * hard_sigmoid(v) with alpha 1/6, beta 0.5."""
    return e.binary("mul", v, hard_sigmoid(e, v, 1 / 6, 0.5))


def softplus(e: Emitter, v: Value) -> Value:
    """log(1 + exp(v))."""
    return e.log1p(e.unary("exp", v))


def softsign(e: Emitter, v: Value) -> Value:
    """v / (1 + |v|)."""
    return e.binary("div", v, e.binary("add", e.unary("abs", v),
                                       e.scalar(1, v.dtype)))


def mish(e: Emitter, v: Value) -> Value:
    """v * tanh(softplus(v))."""
    return e.binary("mul", v, e.unary("tanh", softplus(e, v)))


def clamp(e: Emitter, v: Value, lo: Optional[Value] = None,
          hi: Optional[Value] = None) -> Value:
    """min(max(v, lo), hi), either bound optional (of v's type)."""
    if lo is not None:
        v = e.binary("maximum", v, lo)
    if hi is not None:
        v = e.binary("minimum", v, hi)
    return v


# Arithmetic -------------------------------------------------------------------

def reciprocal(e: Emitter, v: Value) -> Value:
    """1 / v."""
    return e.binary("div", e.scalar(1, v.dtype), v)


def integer_power(e: Emitter, x: Value, n: int) -> Value:
    """x ** n for a small integer n, multiplied out (exact, and right for
    x < 0): ones for n = 0, 1 / x ** -n for n < 0."""
    if n == 0:
        return e.broadcast_to(e.scalar(1, x.dtype), x.shape)
    result = x
    for _ in range(abs(n) - 1):
        result = e.binary("mul", result, x)
    if n < 0:
        result = e.binary("div", e.scalar(1, x.dtype), result)
    return result


def scaled_sum(e: Emitter, y: Value, alpha: float, c: Optional[Value],
               beta: float) -> Value:
    """alpha * y + beta * c (GEMM's epilogue: addmm, baddbmm, ONNX Gemm);
    a factor of 1 is no multiplication, and with beta = 0 or no c, c is
    not read."""
    if alpha != 1:
        y = e.binary("mul", y, e.scalar(alpha, y.dtype))
    if c is None or beta == 0:
        return y
    if beta != 1:
        c = e.binary("mul", c, e.scalar(beta, y.dtype))
    return e.binary("add", y, c)


# Logic ------------------------------------------------------------------------

def logical_not(e: Emitter, v: Value) -> Value:
    """not v, of an i1 value."""
    return e.compare("eq", v, e.scalar(False, "i1"))


def logical_and(e: Emitter, a: Value, b: Value) -> Value:
    """a and b, of i1 values (broadcast together)."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    return e.select(e.broadcast_to(a, shape), b, e.scalar(False, "i1"))


def logical_or(e: Emitter, a: Value, b: Value) -> Value:
    """a or b, of i1 values (broadcast together)."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    return e.select(e.broadcast_to(a, shape), e.scalar(True, "i1"), b)


# Normalization and layout -------------------------------------------------------

def channel_affine(e: Emitter, y: Value, scale: Optional[Value],
                   bias: Optional[Value]) -> Value:
    """y * scale + bias with one scale and bias per channel (dimension 1
    of y: N, C, ...), as the batch, instance and group norms end; either
    may be None."""
    per_channel = (y.shape[1],) + (1,) * (len(y.shape) - 2)
    if scale is not None:
        y = e.binary("mul", y, e.reshape(scale, per_channel))
    if bias is not None:
        y = e.binary("add", y, e.reshape(bias, per_channel))
    return y


def split(e: Emitter, v: Value, axis: int, sizes: Sequence[int]
          ) -> List[Value]:
    """Consecutive slices of v along `axis`, of `sizes`."""
    rank = len(v.shape)
    out, offset = [], 0
    for size in sizes:
        starts = [0] * rank
        limits = list(v.shape)
        starts[axis], limits[axis] = offset, offset + size
        out.append(e.slice(v, starts, limits, [1] * rank))
        offset += size
    return out
