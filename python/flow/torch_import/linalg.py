"""Linear algebra, convolution, attention and pooling."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import FLOAT_TYPES, Unsupported, Value, numpy_dtype
from ._core import _handles, _norm_dim
from .misc import _dropout_of


# Contractions --------------------------------------------------------------

def _matmul_operands(self, a, b):
    dtype = self.out_dtype()
    av, bv = self.value(a, dtype), self.value(b, dtype)
    if len(av.shape) < 2 or len(bv.shape) < 2:
        raise Unsupported("matmul of a vector")
    return av, bv


@_handles("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(self, a, b):
    av, bv = _matmul_operands(self, a, b)
    return self.e.matmul(av, bv)


@_handles("aten.addmm.default", "aten.baddbmm.default")
def _addmm(self, bias, a, b, beta=1, alpha=1):
    av, bv = _matmul_operands(self, a, b)
    y = self.e.matmul(av, bv)
    c = self.value(bias, y.dtype) if beta != 0 else None
    return composites.scaled_sum(self.e, y, alpha, c, beta)


@_handles("aten.linear.default")
def _linear(self, x, w, b=None):
    xv = self.value(x, self.out_dtype())
    wv = self.value(w, xv.dtype)
    lead = xv.shape[:-1]
    x2 = self.e.reshape(xv, (int(np.prod(lead)) if lead else 1, xv.shape[-1]))
    y = self.e.matmul(x2, wv, transpose_rhs=True)
    if b is not None:
        y = self.e.binary("add", y, self.value(b, xv.dtype))
    return self.e.reshape(y, self.out_shape())


@_handles("aten.convolution.default", "aten.conv2d.default")
def _convolution(self, x, w, b=None, stride=(1, 1), padding=(0, 0),
                 dilation=(1, 1), transposed=False, output_padding=(0, 0),
                 groups=1):
    if transposed:
        raise Unsupported("transposed convolution")
    dtype = self.out_dtype()
    xv, wv = self.value(x, dtype), self.value(w, dtype)
    if len(xv.shape) != 4:
        raise Unsupported(f"{len(xv.shape) - 2}-D convolution (Flow has 2-D)")
    if isinstance(padding, str):
        raise Unsupported(f"padding='{padding}'")
    ph, pw = (list(padding) * 2)[:2]
    bv = self.value(b, dtype) if b is not None else None
    return self.e.conv2d(xv, wv, bv, stride, [ph, pw, ph, pw], dilation,
                         groups)


@_handles("aten.scaled_dot_product_attention.default")
def _attention(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
               scale=None, enable_gqa=False):
    dtype = self.out_dtype()
    if dtype not in FLOAT_TYPES:
        raise Unsupported(f"attention in {dtype}")
    qv, kv, vv = (self.value(x, dtype) for x in (q, k, v))
    if len(qv.shape) < 2 or qv.shape[:-2] != kv.shape[:-2]:
        raise Unsupported("attention whose query and key batch dimensions "
                          "differ (grouped-query attention)")
    if scale is None:
        scale = 1.0 / float(np.sqrt(qv.shape[-1]))
    if not dropout_p:
        # One op: the target runs it fused or expands it (the scores are
        # never a tensor of the program where it runs fused).
        mask = None
        if attn_mask is not None:
            m = self.value(attn_mask)
            mask = m if m.dtype == "i1" else self.e.cast(m, dtype)
        return self.e.attention(qv, kv, vv, mask, float(scale),
                                bool(is_causal))
    scores = self.e.matmul(qv, kv, transpose_rhs=True)
    scores = self.e.binary("mul", scores, self.e.scalar(scale, dtype))
    length, source = qv.shape[-2], kv.shape[-2]
    masks = []
    if is_causal:
        masks.append(self.e.constant(np.tril(np.ones((length, source),
                                                     dtype=bool))))
    if attn_mask is not None:
        m = self.value(attn_mask)
        if m.dtype == "i1":
            masks.append(m)
        else:
            scores = self.e.binary("add", scores, self.e.cast(m, dtype))
    for m in masks:
        scores = self.e.select(m, scores, self.e.constant(
            np.array(-np.inf, dtype=numpy_dtype(dtype))))
    axis = len(scores.shape) - 1
    if attn_mask is None:
        # A causal mask always keeps the diagonal: no row is empty.
        probs = self.e.softmax("softmax", scores, axis)
    else:
        probs = _safe_softmax_of(self, scores, axis)
    if dropout_p:
        probs = _dropout_of(self, probs, dropout_p)[0]
    return self.e.matmul(probs, vv)


def _safe_softmax_of(self, x: Value, axis: int) -> Value:
    """Softmax whose rows that are -inf throughout (a query the mask hides
    from every key, as left padding makes) are zeros instead of NaN: what
    PyTorch's attention computes (aten._safe_softmax). A row holding a NaN
    stays NaN."""
    probs = self.e.softmax("softmax", x, axis)
    peak = self.e.reduce("max", x, [axis], keepdims=True)
    empty = self.e.compare("eq", peak, self.e.constant(
        np.array(-np.inf, dtype=numpy_dtype(x.dtype))))
    zero = self.e.constant(np.array(0, dtype=numpy_dtype(x.dtype)))
    return self.e.select(empty, zero, probs)


@_handles("aten._safe_softmax.default")
def _safe_softmax(self, x, dim, dtype=None):
    v = self.value(x, self.out_dtype())
    return _safe_softmax_of(self, v, _norm_dim(dim, len(v.shape)))


# Pooling --------------------------------------------------------------------

def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * 2 if len(v) == 1 else v


@_handles("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool(self, x, kernel, stride=(), padding=0, dilation=1,
              ceil_mode=False):
    v = self.value(x)
    kernel = _pair(kernel)
    stride = _pair(stride) if stride else kernel
    ph, pw = _pair(padding)
    y = self.e.max_pool2d(v, kernel, stride, [ph, pw, ph, pw],
                          _pair(dilation), ceil_mode)
    if "with_indices" in str(self.node.target):
        return (y, None)
    return y


@_handles("aten.avg_pool2d.default")
def _avg_pool(self, x, kernel, stride=(), padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise Unsupported("divisor_override")
    v = self.value(x)
    kernel = _pair(kernel)
    stride = _pair(stride) if stride else kernel
    ph, pw = _pair(padding)
    return self.e.avg_pool2d(v, kernel, stride, [ph, pw, ph, pw], ceil_mode,
                             bool(count_include_pad and (ph or pw)))


@_handles("aten._adaptive_avg_pool2d.default",
          "aten.adaptive_avg_pool2d.default")
def _adaptive_avg_pool(self, x, output_size):
    v = self.value(x)
    oh, ow = _pair(output_size)
    h, w = v.shape[-2:]
    if (oh, ow) == (1, 1):
        return self.e.reduce("mean", v, [len(v.shape) - 2, len(v.shape) - 1],
                             True)
    if h % oh or w % ow:
        raise Unsupported(f"adaptive pooling of {h}x{w} to {oh}x{ow} "
                          "(Flow needs the output to divide the input)")
    return _avg_pool(self, v, [h // oh, w // ow], [h // oh, w // ow], 0)
