"""Building flow programs: the part the torch and ONNX importers share.

An importer walks its graph and calls the `Emitter` to add ops. The ops are
built in C++ by the extension's `ProgramBuilder`, which asks each op for its
result types (the op's own type inference), so a shape rule and an op's
spelling live once, in the dialect. A `Value` is a handle to a value of the
program with its static shape and flow element type. Constants are numpy
arrays until an op needs them as a value: then a small one becomes an inline
`flow.constant` (its bytes passed as they are) and a large one a
`flow.parameter` whose bytes go to the module's safetensors archive.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import safetensors

#: A flow.slice limit that takes a dimension to its end (INT64_MAX): how a
#: symbolic dimension is sliced whole.
TO_END = 2**63 - 1

#: Tensors up to this many bytes are written inline as flow.constant.
INLINE_BYTES = 256

#: Every element type Flow computes in: flow type -> (numpy and torch dtype
#: name, ONNX TensorProto element type).
ELEMENT_TYPES = {
    "f32": ("float32", 1), "f16": ("float16", 10), "bf16": ("bfloat16", 16),
    "f64": ("float64", 11), "i64": ("int64", 7), "i32": ("int32", 6),
    "i16": ("int16", 5), "i8": ("int8", 3), "ui64": ("uint64", 13),
    "ui32": ("uint32", 12), "ui16": ("uint16", 4), "ui8": ("uint8", 2),
    "i1": ("bool", 9),
}
#: numpy dtype name -> flow element type.
NUMPY_TO_FLOW = {name: flow for flow, (name, _) in ELEMENT_TYPES.items()}
FLOW_TO_NUMPY = {v: k for k, v in NUMPY_TO_FLOW.items()}
FLOAT_TYPES = ("f32", "f16", "bf16", "f64")
SIGNED_TYPES = ("i64", "i32", "i16", "i8")
UNSIGNED_TYPES = ("ui64", "ui32", "ui16", "ui8")
#: Integer element types (i1, a bool, is not one).
INT_TYPES = SIGNED_TYPES + UNSIGNED_TYPES
#: What Flow computes in, for messages.
TYPES_TEXT = ("f32, f16, bf16, f64, i64, i32, i16, i8, ui64, ui32, ui16, ui8 "
              "and bool")


def numpy_dtype(flow_type: str) -> np.dtype:
    name = FLOW_TO_NUMPY[flow_type]
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def dims(shape) -> Tuple:
    """A shape as the builder takes it: ints, and extent texts (`batch`,
    `batch*seq`) for symbolic dimensions."""
    return tuple(d if isinstance(d, str) else int(d) for d in shape)


def is_symbol_name(name) -> bool:
    """Whether `name` may name a size symbol (a letter or '_', then
    letters, digits or '_'), as #flow.dim takes it."""
    return isinstance(name, str) and \
        re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None


def same_extent(a: str, b: str) -> bool:
    """Two extent texts name the same size (compared in normal form)."""
    from . import _flow
    try:
        return _flow.normalize_extent(a) == _flow.normalize_extent(b)
    except ValueError:
        return False


@dataclasses.dataclass(frozen=True)
class Value:
    """A value of the program being built: the builder's handle, with the
    shape and element type the op that made it inferred. A symbolic
    dimension is its extent's text (`batch`)."""
    handle: int
    shape: Tuple
    dtype: str

    def __str__(self) -> str:
        dims = "".join(f"{'?' if isinstance(d, str) else d}x"
                       for d in self.shape)
        return f"%{self.handle}: tensor<{dims}{self.dtype}>"


class Unsupported(Exception):
    """An op (or an op's arguments) Flow cannot import; the importer
    collects these and reports them all at once."""


class UnsupportedOpsError(Exception):
    """The model uses ops Flow cannot import. `.ops` lists each one as
    (op, node, source); the message names them all."""

    def __init__(self, ops: List[Tuple[str, str, str, str]], frontend: str):
        self.ops = ops
        lines = [f"{frontend} model uses {len(ops)} "
                 f"unsupported op{'s' if len(ops) != 1 else ''}:"]
        for op, node, source, reason in ops:
            where = f" at {source}" if source else ""
            why = f": {reason}" if reason else ""
            lines.append(f"  {op} (node '{node}'){where}{why}")
        super().__init__("\n".join(lines))


def handler_registry():
    """A table of op handlers and the decorator that fills it:
    `@handles("aten.add.Tensor", ...)` registers a function for each name."""
    handlers: Dict[str, object] = {}

    def handles(*names):
        def register(fn):
            for name in names:
                handlers[name] = fn
            return fn
        return register
    return handlers, handles


# Attributes, in MLIR's attribute syntax ---------------------------------

def i64(x) -> str:
    return f"{int(x)} : i64"


def i64s(xs) -> str:
    """A dense i64 array attribute."""
    xs = [int(x) for x in xs]
    return f"array<i64: {', '.join(map(str, xs))}>" if xs else "array<i64>"


def f64(x) -> str:
    """An f64 attribute holding exactly `x` (its bits in hex)."""
    return f"0x{struct.pack('>d', float(x)).hex().upper()} : f64"


#: A unit attribute (a flag that is set).
UNIT = "unit"


def string(s: str) -> str:
    """A string attribute: quotes and backslashes escaped, other bytes
    outside printable ASCII as \\XX."""
    out = []
    for byte in s.encode("utf-8"):
        c = chr(byte)
        if c in '"\\' or not 32 <= byte < 127:
            out.append(f"\\{byte:02X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def flags(**on) -> Dict[str, str]:
    """Unit attributes for the names given True."""
    return {name: UNIT for name, set_ in on.items() if set_}


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """The same elements of the same buffer (views of one tensor)."""
    return (a.dtype == b.dtype and a.shape == b.shape
            and a.strides == b.strides
            and a.__array_interface__["data"] == b.__array_interface__["data"])


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit (NaNs included), without copying views of one tensor."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if _same_memory(a, b):
        return True
    bytes_of = lambda x: np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    return bool(np.array_equal(bytes_of(a), bytes_of(b)))


#: The largest k Emitter.topk unrolls; larger ones sort (flow.sort).
TOPK_UNROLL = 64


class _Refusing:
    """The extension's ProgramBuilder, with its BuildErrors raised as
    Unsupported: an op that cannot be built is a refusal of its node."""

    def __init__(self, builder, build_error):
        self._builder, self._build_error = builder, build_error

    def __getattr__(self, name):
        method = getattr(self._builder, name)

        def call(*args):
            try:
                return method(*args)
            except self._build_error as e:
                raise Unsupported(str(e)) from None
        return call


class Emitter:
    """Builds one func.func and the module's parameter archive."""

    def __init__(self, function: str = "main",
                 shared: Optional[Dict[str, np.ndarray]] = None):
        from . import _flow
        self.builder = _Refusing(_flow.ProgramBuilder(function),
                                 _flow.BuildError)
        self.function = function
        self.arguments: List[Value] = []
        self.parameters: Dict[str, np.ndarray] = {}
        #: Parameters of other programs that will share this one's archive
        #: (see `_parameter_name`); None: the archive is this program's own.
        self.shared = shared
        self._names: Dict[str, int] = {}

    # Values ---------------------------------------------------------------
    def _value(self, handle: int) -> Value:
        shape, dtype = self.builder.type(handle)
        return Value(handle, tuple(shape), dtype)

    def locate(self, file: Optional[str] = None, line: Optional[int] = None,
               name: str = "") -> None:
        """The next ops come from `file`:`line` (the model's source), or
        else from the node called `name`."""
        self.builder.set_location(file or "", int(line or 0), name or "")

    def argument(self, shape, dtype: str) -> Value:
        handle = self.builder.argument(list(dims(shape)), dtype)
        v = self._value(handle)
        self.arguments.append(v)
        return v

    def mesh(self, shape) -> None:
        """Places the function on a device mesh of `shape` (`@mesh`)."""
        self.builder.set_mesh([int(d) for d in shape])

    def argument_attribute(self, index: int, name: str, text: str) -> None:
        """Sets attribute `name` (MLIR attribute text) on argument `index`."""
        self.builder.set_argument_attribute(index, name, text)

    def result_attribute(self, index: int, name: str, text: str) -> None:
        """Sets attribute `name` (MLIR attribute text) on result `index` of
        the results `module` returns."""
        self.builder.set_result_attribute(index, name, text)

    def function_attribute(self, name: str, text: str) -> None:
        """Sets attribute `name` (MLIR attribute text) on the function."""
        self.builder.set_function_attribute(name, text)

    def build(self, name: str, operands: Sequence[Value],
              attrs: Optional[Mapping[str, str]] = None,
              results: Optional[Sequence[Tuple[Sequence[int], str]]] = None
              ) -> Tuple[Value, ...]:
        """Op `name` on `operands` with `attrs` (name -> MLIR attribute
        text); its results, of the types the op infers (or, for the few ops
        whose result type is a choice, of `results`). An op that does not
        take these operands or attributes is Unsupported, with the op's
        own reason."""
        types = None if results is None else [
            (list(dims(shape)), dtype) for shape, dtype in results]
        handles = self.builder.create(name, [v.handle for v in operands],
                                      list((attrs or {}).items()), types)
        return tuple(self._value(h) for h in handles)

    def op(self, name: str, operands: Sequence[Value],
           attrs: Optional[Mapping[str, str]] = None,
           result: Optional[Tuple[Sequence[int], str]] = None) -> Value:
        """`build` for an op of one result."""
        return self.build(name, operands, attrs,
                          None if result is None else [result])[0]

    def constant(self, array: np.ndarray, name: Optional[str] = None) -> Value:
        """`array` as a value: inline when small (or unnamed), otherwise a
        parameter stored in the archive under a unique `name`."""
        array = np.asarray(array)
        dtype = NUMPY_TO_FLOW.get(array.dtype.name)
        if dtype is None:
            raise Unsupported(f"constant of dtype {array.dtype}")
        if name is None or array.nbytes <= INLINE_BYTES:
            handle = self.builder.constant(
                list(array.shape), dtype, np.ascontiguousarray(array).tobytes())
            return self._value(handle)
        unique = self._parameter_name(name, array)
        self.parameters[unique] = array
        return self.op("flow.parameter", [], {"name": string(unique)},
                       result=(array.shape, dtype))

    def scalar(self, value, dtype: str) -> Value:
        """A rank-0 constant of `dtype`."""
        return self.constant(np.array(value, dtype=numpy_dtype(dtype)))

    # Common ops -----------------------------------------------------------
    def cast(self, v: Value, dtype: str) -> Value:
        if v.dtype == dtype:
            return v
        return self.op("flow.cast", [v], result=(v.shape, dtype))

    def reshape(self, v: Value, shape) -> Value:
        shape = dims(shape)
        if shape == v.shape:
            return v
        return self.op("flow.reshape", [v], result=(shape, v.dtype))

    def transpose(self, v: Value, perm) -> Value:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return v
        return self.op("flow.transpose", [v], {"permutation": i64s(perm)})

    def broadcast_to(self, v: Value, shape) -> Value:
        shape = dims(shape)
        if shape == v.shape:
            return v
        return self.op("flow.broadcast_to", [v], result=(shape, v.dtype))

    def binary(self, op: str, a: Value, b: Value) -> Value:
        """flow.<op> with numpy broadcasting; both operands have one type."""
        return self.op(f"flow.{op}", [a, b])

    def compare(self, predicate: str, a: Value, b: Value) -> Value:
        return self.op("flow.compare", [a, b], {"predicate": predicate})

    def select(self, c: Value, a: Value, b: Value) -> Value:
        return self.op("flow.select", [c, a, b])

    def unary(self, op: str, v: Value,
              attrs: Optional[Mapping[str, str]] = None) -> Value:
        return self.op(f"flow.{op}", [v], attrs)

    def reduce(self, kind: str, v: Value, axes, keepdims: bool) -> Value:
        axes = sorted({int(a) % max(len(v.shape), 1) for a in axes})
        if not axes:
            return v
        return self.op(f"flow.reduce_{kind}", [v],
                       {"axes": i64s(axes), **flags(keepdims=keepdims)})

    def reversed_order(self, v: Value) -> Value:
        """A value whose order is v's reversed, exactly: -v for floats, the
        bitwise complement for integers (no overflow at the extremes)."""
        if v.dtype in FLOAT_TYPES:
            return self.unary("neg", v)
        all_ones = np.iinfo(numpy_dtype(v.dtype)).max \
            if v.dtype in UNSIGNED_TYPES else -1
        return self.binary("sub", self.scalar(all_ones, v.dtype), v)

    def int_pow(self, base: Value, exponent: Value) -> Value:
        """base ** exponent for integers, exact (wrapping as integer products
        do): square-and-multiply over the exponent's bits. A negative
        exponent gives 0, except for a base of 1 or -1."""
        bits = np.iinfo(numpy_dtype(exponent.dtype)).bits
        unsigned = exponent.dtype in UNSIGNED_TYPES
        e = exponent if unsigned else self.binary(
            "maximum", exponent, self.scalar(0, exponent.dtype))
        two = self.scalar(2, e.dtype)
        one = self.scalar(1, e.dtype)
        result = self.broadcast_to(self.scalar(1, base.dtype), tuple(
            np.broadcast_shapes(base.shape, exponent.shape)))
        square = base
        for k in range(bits - (0 if unsigned else 1)):
            half = self.binary("div", e, two)
            bit = self.compare("eq", self.binary(
                "sub", e, self.binary("mul", half, two)), one)
            result = self.select(bit, self.binary("mul", result, square),
                                 result)
            e = half
            if k + 1 < bits:
                square = self.binary("mul", square, square)
        if unsigned:
            return result
        # Negative exponents: 1 ** -n = 1, (-1) ** -n = +-1, otherwise 0.
        negative = self.compare("lt", exponent,
                                self.scalar(0, exponent.dtype))
        odd = self.compare("ne", self.binary("sub", exponent, self.binary(
            "mul", self.binary("div", exponent, two), two)),
            self.scalar(0, exponent.dtype))
        minus_one = self.scalar(-1, base.dtype)
        unit = self.select(self.compare("eq", base, self.scalar(1, base.dtype)),
                           self.scalar(1, base.dtype), self.select(
                               self.compare("eq", base, minus_one),
                               self.select(odd, minus_one,
                                           self.scalar(1, base.dtype)),
                               self.scalar(0, base.dtype)))
        return self.select(negative, unit, result)

    def reduce_min(self, v: Value, axes, keepdims: bool) -> Value:
        """Minimum over `axes` (NaN propagates): max of the reversed order."""
        return self.reversed_order(self.reduce("max", self.reversed_order(v),
                                               axes, keepdims))

    def cumsum(self, v: Value, axis: int, exclusive: bool = False,
               reverse: bool = False) -> Value:
        axis = int(axis) % max(len(v.shape), 1)
        return self.op("flow.cumsum", [v], {
            "axis": i64(axis), **flags(exclusive=exclusive, reverse=reverse)})

    def arg_reduce(self, kind: str, v: Value, axis: int, keepdims: bool,
                   last: bool = False) -> Value:
        """flow.argmax / flow.argmin (kind "max" / "min"): i64 indices."""
        if not v.shape:
            v = self.reshape(v, (1,))
        axis = int(axis) % len(v.shape)
        return self.op(f"flow.arg{kind}", [v], {
            "axis": i64(axis),
            **flags(keepdims=keepdims, select_last_index=last)})

    def gather_elements(self, v: Value, indices: Value, axis: int) -> Value:
        return self.op("flow.gather_elements", [v, indices],
                       {"axis": i64(axis)})

    def softmax(self, kind: str, v: Value, axis: int) -> Value:
        """flow.softmax or flow.log_softmax (`kind`) along `axis`."""
        return self.op(f"flow.{kind}", [v], {"axis": i64(axis)})

    def attention(self, q: Value, k: Value, v: Value, mask: Optional[Value],
                  scale: float, causal: bool = False) -> Value:
        """flow.attention: softmax(scale q k^T + mask) v in one op. `mask`
        is i1 (keep where true) or of q's type (added)."""
        operands = [q, k, v] + ([mask] if mask is not None else [])
        return self.op("flow.attention", operands,
                       {"scale": f64(scale), **flags(causal=causal)})

    def layer_norm(self, x: Value, weight: Optional[Value],
                   bias: Optional[Value], axis: int, epsilon: float) -> Value:
        operands = [v for v in (x, weight, bias) if v is not None]
        segments = [1, int(weight is not None), int(bias is not None)]
        return self.op("flow.layer_norm", operands, {
            "axis": i64(axis), "epsilon": f64(epsilon),
            "operandSegmentSizes": f"array<i32: {', '.join(map(str, segments))}>"})

    def batch_norm(self, x: Value, scale: Value, bias: Value, mean: Value,
                   variance: Value, epsilon: float) -> Value:
        return self.op("flow.batch_norm", [x, scale, bias, mean, variance],
                       {"epsilon": f64(epsilon)})

    def conv2d(self, x: Value, weight: Value, bias: Optional[Value], strides,
               padding, dilations, groups: int) -> Value:
        """padding: [top, left, bottom, right]."""
        operands = [x, weight] + ([bias] if bias is not None else [])
        return self.op("flow.conv2d", operands, {
            "strides": i64s(strides), "padding": i64s(padding),
            "dilations": i64s(dilations), "groups": i64(groups)})

    def max_pool2d(self, v: Value, kernel, strides, padding, dilations,
                   ceil_mode: bool = False) -> Value:
        """padding: [top, left, bottom, right]."""
        return self.op("flow.max_pool2d", [v], {
            "kernel": i64s(kernel), "strides": i64s(strides),
            "padding": i64s(padding), "dilations": i64s(dilations),
            **flags(ceil_mode=ceil_mode)})

    def avg_pool2d(self, v: Value, kernel, strides, padding,
                   ceil_mode: bool = False,
                   count_include_pad: bool = False) -> Value:
        """padding: [top, left, bottom, right]."""
        return self.op("flow.avg_pool2d", [v], {
            "kernel": i64s(kernel), "strides": i64s(strides),
            "padding": i64s(padding),
            **flags(ceil_mode=ceil_mode, count_include_pad=count_include_pad)})

    # Compositions both importers use ------------------------------------
    def normalize(self, v: Value, axes, epsilon: float) -> Value:
        """(v - mean) / sqrt(var + epsilon) over `axes` (biased variance)."""
        return self.normalize_with_statistics(v, axes, epsilon)[0]

    def normalize_with_statistics(self, v: Value, axes, epsilon: float
                                  ) -> Tuple[Value, Value, Value, Value]:
        """`normalize` and its statistics (kept dims): (normalized, mean,
        biased variance, 1 / sqrt(variance + epsilon))."""
        mean = self.reduce("mean", v, axes, True)
        centered = self.binary("sub", v, mean)
        var = self.reduce("mean", self.binary("mul", centered, centered),
                          axes, True)
        rstd = self.unary("rsqrt", self.binary(
            "add", var, self.scalar(epsilon, v.dtype)))
        return self.binary("mul", centered, rstd), mean, var, rstd

    def sign(self, v: Value) -> Value:
        """-1, 0 or 1 in v's type; NaN stays NaN."""
        zero = self.scalar(0, v.dtype)
        y = self.select(self.compare("gt", v, zero), self.scalar(1, v.dtype),
                        self.select(self.compare("lt", v, zero),
                                    self.scalar(-1, v.dtype), zero))
        if v.dtype in FLOAT_TYPES:
            y = self.select(self.compare("ne", v, v), v, y)
        return y

    def trig(self, kind: str, v: Value) -> Value:
        """tan, sinh or cosh from sin, cos and exp."""
        if kind == "tan":
            return self.binary("div", self.unary("sin", v),
                               self.unary("cos", v))
        a = self.unary("exp", v)
        b = self.unary("exp", self.unary("neg", v))
        return self.binary("mul", self.binary(
            "sub" if kind == "sinh" else "add", a, b), self.scalar(0.5, v.dtype))

    def log1p(self, v: Value) -> Value:
        """log(1 + x), accurate for tiny x: log(u) * x / (u - 1) with u = 1 + x
        (exact where u rounds to 1: then it is x)."""
        one = self.scalar(1, v.dtype)
        u = self.binary("add", v, one)
        um1 = self.binary("sub", u, one)
        ratio = self.binary("div", self.binary("mul", self.unary("log", u), v),
                            um1)
        exact = self.compare("eq", um1, self.scalar(0, v.dtype))
        # u = inf (x = inf): log(u) itself.
        infinite = self.compare("eq", u, self.scalar(np.inf, v.dtype))
        return self.select(exact, v, self.select(
            infinite, self.unary("log", u), ratio))


    def expm1(self, v: Value) -> Value:
        """exp(x) - 1, accurate for tiny x: (u - 1) * x / log(u) with u = exp(x)
        (x itself where u rounds to 1; -1 and inf at the ends)."""
        one = self.scalar(1, v.dtype)
        u = self.unary("exp", v)
        um1 = self.binary("sub", u, one)
        ratio = self.binary("div", self.binary("mul", um1, v),
                              self.unary("log", u))
        tiny = self.compare("eq", u, one)
        ends = self.select(self.compare("eq", um1, self.scalar(
            -1, v.dtype)), um1, self.select(self.compare(
                "eq", u, self.scalar(np.inf, v.dtype)), u, ratio))
        return self.select(tiny, v, ends)

    def tile(self, v: Value, repeats) -> Value:
        """numpy.tile with one repeat count per dimension: [d0, d1] ->
        [1, d0, 1, d1] broadcast to [r0, d0, r1, d1] -> [r0 d0, r1 d1]."""
        spread = [n for d in v.shape for n in (1, d)]
        full = [n for r, d in zip(repeats, v.shape) for n in (r, d)]
        y = self.broadcast_to(self.reshape(v, spread), full)
        return self.reshape(y, [r * d for r, d in zip(repeats, v.shape)])

    def concat(self, values: Sequence[Value], axis: int) -> Value:
        if len(values) == 1:
            return values[0]
        return self.op("flow.concat", values, {"axis": i64(axis)})

    def sort(self, v: Value, axis: int, descending: bool = False):
        """(values, i64 indices): flow.sort, stable, NaN the largest."""
        axis = int(axis) % len(v.shape)
        return self.build("flow.sort", [v], {
            "axis": i64(axis), **flags(descending=descending)})

    def topk(self, v: Value, k: int, axis: int, largest: bool = True):
        """(values, i64 indices) of the k largest (or smallest) elements
        along `axis`, best first; of equal values the first index first, a
        NaN counts as the largest (PyTorch's order). Up to TOPK_UNROLL,
        unrolled: k rounds of a maximum over the elements not taken yet,
        each a pass over the row; beyond, a sort and its first k."""
        axis = int(axis) % len(v.shape)
        n = v.shape[axis]
        if not 0 < k <= n:
            raise Unsupported(f"top-{k} of {n} elements")
        if k > TOPK_UNROLL:
            values, indices = self.sort(v, axis, descending=largest)
            limits = list(v.shape)
            limits[axis] = k
            ones, zeros = [1] * len(v.shape), [0] * len(v.shape)
            return (self.slice(values, zeros, limits, ones),
                    self.slice(indices, zeros, limits, ones))
        is_float = v.dtype in FLOAT_TYPES
        key = v if largest else self.reversed_order(v)
        if is_float and not largest:
            # A NaN counts as the largest: the last of the smallest.
            key = self.select(self.compare("ne", v, v),
                              self.scalar(-np.inf, v.dtype), key)
        iota_shape = [1] * len(v.shape)
        iota_shape[axis] = n
        iota = self.constant(np.arange(n, dtype=np.int64).reshape(iota_shape))
        worst = self.scalar(-np.inf if is_float else
                            np.iinfo(numpy_dtype(v.dtype)).min, v.dtype)
        false = self.scalar(False, "i1")
        taken = None
        values, indices = [], []
        for r in range(k):
            work = key if taken is None else self.select(taken, worst, key)
            best = self.reduce("max", work, [axis], True)
            hit = self.compare("eq", key, best)
            if is_float:  # a NaN maximum: the NaNs are the candidates
                hit = self.select(self.compare("ne", best, best),
                                  self.compare("ne", key, key), hit)
            if taken is not None:
                hit = self.select(taken, false, hit)
            index = self.arg_reduce("max", self.cast(hit, "i32"), axis, True)
            values.append(self.gather_elements(v, index, axis))
            indices.append(index)
            if r + 1 < k:
                mark = self.compare("eq", iota, index)
                taken = mark if taken is None else self.select(
                    taken, self.scalar(True, "i1"), mark)
        return self.concat(values, axis), self.concat(indices, axis)

    def gather(self, v: Value, indices: Value, axis: int) -> Value:
        """v's slices along `axis` at `indices` (i64 or i32, in range)."""
        return self.op("flow.gather", [v, indices], {"axis": i64(axis)})

    def wrap_negative(self, idx: Value, size) -> Value:
        """Indices counting from the end when negative (`size` an int, or a
        Value broadcasting against `idx`)."""
        if not isinstance(size, Value):
            size = self.scalar(size, idx.dtype)
        negative = self.compare("lt", idx, self.scalar(0, idx.dtype))
        return self.select(negative, self.binary("add", idx, size), idx)

    def scatter_nd(self, v: Value, indices: Value, updates: Value,
                   reduction: str = "none") -> Value:
        """flow.scatter_nd: `indices` [..., q] names slices of v that
        `updates` replace (or combine with: add, mul, max, min)."""
        if reduction not in ("none", "add", "mul", "max", "min"):
            raise Unsupported(f"scatter reduction '{reduction}'")
        if updates.dtype != v.dtype:
            updates = self.cast(updates, v.dtype)
        want = indices.shape[:-1] + v.shape[indices.shape[-1]:]
        updates = self.broadcast_to(updates, want)
        return self.op("flow.scatter_nd", [v, indices, updates],
                       {"reduction": reduction})

    def coordinates(self, indices: Value, axis: int) -> Value:
        """Index tuples [*indices.shape, rank] naming, for each position j
        of `indices`, j's own coordinates with the one along `axis`
        replaced by indices[j] (what scatter_elements writes to)."""
        shape, rank = indices.shape, len(indices.shape)
        columns = []
        for d in range(rank):
            if d == axis:
                c = self.cast(indices, "i64")
            else:
                iota = np.arange(shape[d], dtype=np.int64).reshape(
                    [-1 if i == d else 1 for i in range(rank)])
                c = self.broadcast_to(self.constant(iota), shape)
            columns.append(self.reshape(c, shape + (1,)))
        return self.concat(columns, rank)

    def scatter_elements(self, v: Value, indices: Value, updates: Value,
                         axis: int, reduction: str = "none") -> Value:
        """v with updates[j] written at j's coordinates, the one along
        `axis` taken from indices[j] (in range)."""
        if any(i > d for i, d in zip(indices.shape, v.shape)):
            raise Unsupported("indices larger than the input")
        if updates.shape != indices.shape:
            updates = self.slice(updates, [0] * len(indices.shape),
                                 indices.shape, [1] * len(indices.shape))
        return self.scatter_nd(v, self.coordinates(indices, axis), updates,
                               reduction)

    def pad(self, v: Value, low, high, mode: str = "constant",
            value: float = 0.0) -> Value:
        """v with low[d] and high[d] elements added before and after each
        dimension d: `value` ("constant"), copies of the border element
        ("edge"), its mirror image without the border ("reflect"), or the
        other end's elements ("wrap")."""
        low, high = [int(x) for x in low], [int(x) for x in high]
        if min(low + high) < 0:
            raise Unsupported("negative padding")
        if mode == "constant":
            if v.dtype not in FLOAT_TYPES and not float(value).is_integer():
                raise Unsupported(f"pad value {value} for a {v.dtype} tensor")
            if not any(low + high):
                return v
            return self.op("flow.pad", [v], {
                "low": i64s(low), "high": i64s(high), "value": f64(value)})
        if mode not in ("edge", "reflect", "wrap"):
            raise Unsupported(f"mode '{mode}'")
        for axis, (n, lo, hi) in enumerate(zip(v.shape, low, high)):
            if not lo and not hi:
                continue
            if n == 0 or (mode == "reflect" and max(lo, hi) > n - 1):
                raise Unsupported(f"{mode} padding of {max(lo, hi)} on a "
                                  f"dimension of {n}")
            i = np.arange(-lo, n + hi)
            if mode == "edge":
                i = np.clip(i, 0, n - 1)
            elif mode == "reflect":
                i = np.abs(i)
                i = np.where(i > n - 1, 2 * (n - 1) - i, i)
            else:
                i = np.mod(i, n)
            v = self.gather(v, self.constant(i.astype(np.int64)), axis)
        return v

    def reverse(self, v: Value, axes) -> Value:
        axes = sorted({int(a) for a in axes})
        if not axes:
            return v
        return self.op("flow.reverse", [v], {"axes": i64s(axes)})

    def slice(self, v: Value, starts, limits, strides) -> Value:
        """flow.slice. A symbolic dimension's limit may be its extent (the
        text, as v.shape has it): it is taken to its end (TO_END)."""
        limits = [TO_END if isinstance(l, str) else l for l in limits]
        if all(s == 0 and st == 1 and (l == TO_END or l == d)
               for s, l, st, d in zip(starts, limits, strides, v.shape)):
            return v
        return self.op("flow.slice", [v], {
            "starts": i64s(starts), "limits": i64s(limits),
            "strides": i64s(strides)})

    def matmul(self, a: Value, b: Value, transpose_rhs: bool = False
               ) -> Value:
        return self.op("flow.matmul", [a, b], flags(transpose_rhs=transpose_rhs))

    def _parameter_name(self, name: str, array: np.ndarray) -> str:
        """A name for `array` in the archive: `name`, or `name.N` when that
        is taken. With a shared store, an entry of another program holding
        the same values is reused (the weights programs of one model have
        in common are stored once) and new entries are added to it."""
        # The same tensor used twice (tied embedding and output weights)
        # is stored once, under the name it was first given.
        for store in (self.parameters, self.shared or {}):
            for known, other in store.items():
                if _same_memory(other, array):
                    if self.shared is not None:
                        self.shared.setdefault(known, other)
                    return known
        unique = name
        while True:
            if unique not in self.parameters:
                other = None if self.shared is None else self.shared.get(unique)
                if other is None:
                    if self.shared is not None:
                        self.shared[unique] = array
                    return unique
                if _same_values(other, array):
                    return unique
            self._names[name] = self._names.get(name, 0) + 1
            unique = f"{name}.{self._names[name]}"

    # Output ---------------------------------------------------------------
    def module(self, results: Sequence[Value], archive: Optional[str]) -> str:
        """Returns `results`; the module as MLIR text. A module with
        parameters names the archive that holds them."""
        if self.parameters and archive is None:
            raise ValueError("the module has parameters but no archive")
        return self.builder.finish([r.handle for r in results],
                                   archive if self.parameters else "")

    def write_archive(self, path: str) -> None:
        safetensors.save(self.parameters, path)
