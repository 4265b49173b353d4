"""Randomness (dropout, bernoulli: drawn from a training step's random
state), dtype conversions, fills and run-time assertions."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from .._emitter import FLOAT_TYPES, Unsupported, Value, numpy_dtype
from ._core import _handles, _to_numpy


def _dropout_of(self, v: Value, p: float,
                mask_shape: Optional[Sequence[int]] = None
                ) -> Tuple[Value, Value]:
    """(`v` with elements dropped at rate `p` and the others scaled by
    1 / (1 - p), the i1 mask of kept elements), as torch's dropout: the
    mask is a Bernoulli draw of 1 - p (kept where u < 1 - p, as
    aten.bernoulli below), a kept element is x * (1 / (1 - p)), a dropped
    one x * 0. The mask has `mask_shape` (broadcast over `v`; default `v`'s
    shape)."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise Unsupported(f"dropout probability {p} (not in [0, 1])")
    if v.dtype not in FLOAT_TYPES:
        raise Unsupported(f"dropout of {v.dtype}")
    u = self.random_uniform(tuple(mask_shape or v.shape))
    keep = self.e.compare("lt", u, self.e.scalar(1.0 - p, "f32"))
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    factor = self.e.binary("mul", self.e.cast(keep, v.dtype),
                           self.e.scalar(scale, v.dtype))
    return self.e.binary("mul", v, factor), keep


@_handles("aten.dropout.default")
def _dropout(self, x, p, train):
    v = self.value(x)
    if not train or p == 0:
        return v
    return _dropout_of(self, v, p)[0]


@_handles("aten.native_dropout.default")
def _native_dropout(self, x, p, train):
    v = self.value(x)
    if train is False or p == 0:
        ones = self.e.constant(np.ones(v.shape, dtype=bool))
        return (v, ones)
    return _dropout_of(self, v, p)


@_handles("aten.bernoulli.p")
def _bernoulli(self, x, p=0.5, generator=None):
    """Ones with probability `p` (zeros otherwise), of x's shape and type:
    where a uniform number u < p."""
    if generator is not None:
        raise Unsupported("bernoulli with a torch.Generator (Flow draws "
                          "from the training step's own generator)")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise Unsupported(f"bernoulli probability {p} (not in [0, 1])")
    dtype = self.out_dtype()
    u = self.random_uniform(self.out_shape())
    return self.e.cast(self.e.compare("lt", u, self.e.scalar(p, "f32")),
                       dtype)


@_handles("aten.feature_dropout.default")
def _feature_dropout(self, x, p, train):
    """Dropout of whole channels (Dropout1d/2d/3d): one draw per (batch,
    channel)."""
    v = self.value(x)
    if not train or p == 0:
        return v
    if len(v.shape) < 2:
        raise Unsupported("channel dropout of a tensor of rank < 2")
    return _dropout_of(self, v, p,
                       v.shape[:2] + (1,) * (len(v.shape) - 2))[0]


@_handles("aten._to_copy.default", "aten.to.dtype", "aten.to.dtype_layout",
          "aten._to_dtype.default", "aten.to.device")
def _to_copy(self, x, *_, **__):
    # A device in the arguments (aten.to.device) is the one the model was
    # exported on; Flow places the program itself.
    return self.value(x, self.out_dtype())


@_handles("aten.full_like.default", "aten.zeros_like.default",
          "aten.ones_like.default", "aten.empty_like.default")
def _full_like(self, x, fill_value=0, *_, **__):
    name = str(self.node.target)
    if "ones_like" in name:
        fill_value = 1
    elif "zeros_like" in name or "empty_like" in name:
        fill_value = 0
    dtype = self.out_dtype()
    return self.e.constant(np.full(self.out_shape(), fill_value,
                                   dtype=numpy_dtype(dtype)))


@_handles("aten._assert_async.msg", "aten._assert_async.default")
def _assert_async(self, condition, message="an assertion failed"):
    """A run-time check of the model (one_hot's class range, say): the
    condition becomes an extra result and each call raises FlowError with
    the message when it is false. One that folds is checked now."""
    if not isinstance(condition, Value):
        if not bool(np.asarray(_to_numpy(condition)
                               if hasattr(condition, "detach")
                               else condition).all()):
            raise Unsupported(f"an assertion that always fails: {message}")
        return None
    v = self.e.cast(condition, "i1")
    if v.shape:
        v = self.e.reduce_min(self.e.cast(v, "ui8"), list(range(len(v.shape))),
                              False)
        v = self.e.cast(v, "i1")
    self.assertions.append((v, str(message)))
    return None


@_handles("aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
          "aten.sym_constrain_range_for_size.default")
def _no_op(self, *_, **__):
    return None
