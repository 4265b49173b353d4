"""Linear algebra, convolution and pooling."""

from __future__ import annotations

from .. import _composites as composites
from .._emitter import FLOAT_TYPES, INT_TYPES, Unsupported
from ._core import _common, _handles


# Contractions ----------------------------------------------------------------

@_handles("MatMul")
def _matmul(self, ins, attrs):
    _common(self, ins, float_only=True)
    a, b = self.value(ins[0]), self.value(ins[1])
    squeeze = []
    if len(a.shape) == 1:
        a = self.e.reshape(a, (1,) + a.shape)
        squeeze.append(-2)
    if len(b.shape) == 1:
        b = self.e.reshape(b, b.shape + (1,))
        squeeze.append(-1)
    if a.shape[-1] != b.shape[-2]:
        raise Unsupported(f"matmul of {list(a.shape)} by {list(b.shape)}")
    y = self.e.matmul(a, b)
    if squeeze:
        shape = list(y.shape)
        for d in sorted(squeeze):
            shape.pop(len(shape) + d if d == -1 else len(shape) - 2)
        y = self.e.reshape(y, shape)
    return y


@_handles("Gemm")
def _gemm(self, ins, attrs):
    _common(self, ins[:2], float_only=True)
    a, b = self.value(ins[0]), self.value(ins[1])
    if attrs.get("transA", 0):
        a = self.e.transpose(a, [1, 0])
    y = self.e.matmul(a, b, transpose_rhs=bool(attrs.get("transB", 0)))
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    c = self.value(ins[2], y.dtype) if len(ins) > 2 and ins[2] is not None \
        and beta != 0 else None
    return composites.scaled_sum(self.e, y, alpha, c, beta)


def _spatial_pads(self, attrs, in_hw, kernel, strides, dilations):
    """[top, left, bottom, right] from pads or auto_pad."""
    auto = attrs.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("NOTSET", ""):
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
        return [pads[0], pads[1], pads[2], pads[3]]
    if auto == "VALID":
        return [0, 0, 0, 0]
    out = []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        target = -(-size // s)
        total = max(0, (target - 1) * s + (k - 1) * d + 1 - size)
        out.append(total)
    low = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in out]
    high = [t - lo for t, lo in zip(out, low)]
    return [low[0], low[1], high[0], high[1]]


@_handles("Conv")
def _conv(self, ins, attrs):
    _common(self, [x for x in ins if x is not None], float_only=True)
    x, w = self.value(ins[0]), self.value(ins[1])
    if len(x.shape) != 4:
        raise Unsupported(f"{len(x.shape) - 2}-D convolution (Flow has 2-D)")
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    groups = attrs.get("group", 1)
    pads = _spatial_pads(self, attrs, x.shape[2:], kernel, strides, dilations)
    bias = self.value(ins[2]) if len(ins) > 2 and ins[2] is not None else None
    return self.e.conv2d(x, w, bias, strides, pads, dilations, groups)


# Pooling ---------------------------------------------------------------------

@_handles("MaxPool", "AveragePool")
def _pool(self, ins, attrs):
    x = self.value(ins[0])
    is_max = self.node.op_type == "MaxPool"
    if len(x.shape) == 3:
        # 1-D pooling is 2-D pooling over a height of one.
        lifted = dict(attrs)
        lifted["kernel_shape"] = [1, *attrs["kernel_shape"]]
        for key in ("strides", "dilations"):
            if key in attrs:
                lifted[key] = [1, *attrs[key]]
        if "pads" in attrs:
            lifted["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
        n, c, length = x.shape
        y = _pool(self, [self.e.reshape(x, (n, c, 1, length))], lifted)
        return self.e.reshape(y, (n, c, y.shape[3]))
    if len(x.shape) != 4:
        raise Unsupported(f"{len(x.shape) - 2}-D pooling (Flow has 1-D and "
                          "2-D)")
    if x.dtype not in FLOAT_TYPES and not (is_max and x.dtype in INT_TYPES):
        raise Unsupported(f"{x.dtype} input")
    if is_max and len(self.node.output) > 1 and self.node.output[1]:
        raise Unsupported("the Indices output")
    if attrs.get("storage_order", 0):
        raise Unsupported("storage_order=1")
    kernel = list(attrs["kernel_shape"])
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    if not is_max and dilations != [1, 1]:
        raise Unsupported("dilated average pooling")
    ceil = bool(attrs.get("ceil_mode", 0))
    pads = _spatial_pads(self, attrs, x.shape[2:], kernel, strides, dilations)
    if is_max:
        return self.e.max_pool2d(x, kernel, strides, pads, dilations, ceil)
    return self.e.avg_pool2d(
        x, kernel, strides, pads, ceil,
        bool(attrs.get("count_include_pad", 0) and any(pads)))


@_handles("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(self, ins, attrs):
    x = self.value(ins[0])
    axes = list(range(2, len(x.shape)))
    kind = "mean" if self.node.op_type == "GlobalAveragePool" else "max"
    return self.e.reduce(kind, x, axes, True)
