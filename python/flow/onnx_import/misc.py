"""Identity and inference-mode dropout, casts, and the ops that make
tensors from shapes and scalars (Range, EyeLike, Shape, Size,
ConstantOfShape)."""

from __future__ import annotations

import numpy as np

from .._emitter import Unsupported, Value, numpy_dtype
from .._importer import FOLD_BYTES
from ._core import _ONNX_TYPES, _handles, _type_refusal


@_handles("Identity", "Dropout")
def _identity(self, ins, attrs):
    v = ins[0]
    if self.node.op_type == "Dropout":
        if len(ins) > 2 and ins[2] is not None and (
                isinstance(ins[2], Value) or bool(np.asarray(ins[2]))):
            raise Unsupported("dropout in training mode")
        mask = np.ones(self.shape_of(v), dtype=bool)
        return [self.value(v), mask]
    return self.value(v)


@_handles("Cast", "CastLike")
def _cast(self, ins, attrs):
    if self.node.op_type == "Cast":
        dtype = _ONNX_TYPES.get(attrs["to"])
    else:
        dtype = self.dtype_of(ins[1])
    if dtype is None:
        raise Unsupported("cast to " + _type_refusal(attrs.get("to")))
    return self.value(ins[0], dtype)


@_handles("EyeLike")
def _eye_like(self, ins, attrs):
    shape = self.shape_of(ins[0])
    if len(shape) != 2:
        raise Unsupported("an input of rank other than 2")
    dtype = _ONNX_TYPES.get(attrs["dtype"]) if "dtype" in attrs \
        else self.dtype_of(ins[0])
    if dtype is None:
        raise Unsupported(_type_refusal(attrs.get("dtype")))
    eye = np.eye(shape[0], shape[1], k=attrs.get("k", 0))
    return self.e.constant(eye.astype(numpy_dtype(dtype)))


@_handles("Range")
def _range(self, ins, attrs):
    start, limit, delta = (np.asarray(self.const(v, "Range's inputs"))
                           for v in ins[:3])
    # Reached when folding did not compute it: sized before it is.
    if any(v.size != 1 for v in (start, limit, delta)):
        raise Unsupported("inputs other than scalars")
    start, limit, delta = (v.reshape(()) for v in (start, limit, delta))
    if delta == 0:
        raise Unsupported("a delta of 0")
    count = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    self.check_shape(f"{self.node_label}'s result", [count],
                     start.dtype.itemsize)
    if count * start.dtype.itemsize > FOLD_BYTES:
        raise Unsupported(f"a range of {count} elements (computed at import, "
                          f"up to {FOLD_BYTES} bytes)")
    return self.e.constant(np.arange(start, limit, delta).astype(start.dtype))


@_handles("Shape")
def _shape(self, ins, attrs):
    shape = np.array(self.shape_of(ins[0]), dtype=np.int64)
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return shape[start:end]


@_handles("Size")
def _size(self, ins, attrs):
    return np.array(int(np.prod(self.shape_of(ins[0]))), dtype=np.int64)


@_handles("ConstantOfShape")
def _constant_of_shape(self, ins, attrs):
    # Reached when the result is too large to fold: a broadcast scalar.
    from onnx import numpy_helper
    shape = [int(d) for d in self.const(ins[0], "the shape").reshape(-1)]
    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1)[:1] if value is not None \
        else np.zeros(1, np.float32)
    if fill.size != 1:
        raise Unsupported("a value of other than one element")
    if fill.dtype == np.float64:
        fill = fill.astype(np.float32)
    self.check_shape(f"{self.node_label}'s result", shape, fill.itemsize)
    return self.e.broadcast_to(self.value(fill.reshape(())), shape)
