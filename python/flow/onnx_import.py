"""Importing ONNX models (opset 13 and later) as flow-dialect text.

    text = flow.import_onnx("model.onnx", parameters="model.safetensors")

Inputs need static shapes: a symbolic dimension is an error unless
`input_shapes` gives it. Initializers are constants: every node whose inputs
are all constants (the Shape -> Gather -> Concat -> Reshape chains exporters
write, masks, ranges) is computed at import time by ONNX's reference
evaluator, and the rest is translated op by op. Initializers above a few
hundred bytes go to the safetensors archive as `flow.parameter`s. Every
unsupported op in the graph is reported at once, with its node name.

A model is checked before anything is computed, as onnx.checker would and
more: one writer per name (SSA form), reads of defined names only, IR and
opset versions the installed onnx knows, dimensions neither negative nor
larger than MAX_TENSOR_BYTES, initializers whose data fills their dims, and
graph outputs of the static shapes they declare. A model that fails is
refused with a FlowError naming the model and the tensor or node.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ._emitter import (ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, NUMPY_TO_FLOW,
                       TYPES_TEXT, Unsupported, UnsupportedOpsError, Value,
                       handler_registry, numpy_dtype)
from ._flow import FlowError
from ._importer import FOLD_BYTES, GraphImporter, Poison

__all__ = ["import_onnx", "SUPPORTED_OPS", "MIN_OPSET", "MAX_TESTED_OPSET",
           "MAX_TENSOR_BYTES"]

MIN_OPSET = 13
#: Opsets the conformance suite and model tests cover; later opsets are
#: accepted for the ops whose semantics they did not change, up to the
#: newest the installed onnx package defines (onnx.defs.onnx_opset_version).
MAX_TESTED_OPSET = 21
#: A tensor larger than this (1 TiB) is refused as a mistake in the model:
#: more memory than any machine Flow runs on has.
MAX_TENSOR_BYTES = 1 << 40

def _type_name(elem_type) -> str:
    import onnx
    try:
        return onnx.TensorProto.DataType.Name(int(elem_type))
    except (ValueError, TypeError):
        return str(elem_type)


def _type_refusal(elem_type) -> str:
    """Why an ONNX element type is refused, by its name."""
    return f"element type {_type_name(elem_type)} (Flow computes in " \
        f"{TYPES_TEXT})"


# ONNX TensorProto element type -> flow element type.
_ONNX_TYPES = {onnx_type: flow
               for flow, (_, onnx_type) in ELEMENT_TYPES.items()}


@dataclasses.dataclass
class ImportedOnnx:
    text: str
    archive: str
    input_names: List[str]
    output_names: List[str]


def _attrs(node) -> Dict[str, Any]:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _itemsize(elem_type) -> int:
    """Bytes per element of an ONNX element type (1 when unknown)."""
    from onnx import helper
    try:
        return max(np.dtype(helper.tensor_dtype_to_np_dtype(
            int(elem_type))).itemsize, 1)
    except (KeyError, TypeError, ValueError):
        return 1


def _declared(dims) -> List[Any]:
    """A TensorShapeProto's dims: ints, or the symbol ('?': unknown)."""
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in dims]


def _node_label(node, index: int) -> str:
    return (f"node '{node.name}'" if node.name else f"node #{index}") + \
        f" ({node.op_type})"


class _OnnxImporter(GraphImporter):
    frontend = "ONNX"

    def __init__(self, model, input_shapes, function, constants=None,
                 placements=None, source=None):
        super().__init__(function, placements=placements)
        self.handlers = _HANDLERS
        self.never_fold = _NEVER_FOLD
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import
                           if o.domain in ("", "ai.onnx")), None)
        self.env[""] = None
        self.input_shapes = input_shapes or {}
        self.constants = constants or {}
        self.node_label = ""
        #: How messages name the model: its file, else its graph.
        self.label = f"'{source}'" if source else \
            f"(graph '{self.graph.name}')"

    # Checks -------------------------------------------------------------
    def invalid(self, message: str) -> FlowError:
        """The error for a model Flow refuses: names the model."""
        return FlowError(f"ONNX model {self.label}: {message}")

    def check_shape(self, what: str, shape, itemsize: int) -> None:
        """Refuses a negative dimension, or a tensor larger than
        MAX_TENSOR_BYTES (before anything of that size is allocated).
        Symbolic dimensions (strings) count as unknown."""
        shape = [d if isinstance(d, str) else int(d) for d in shape]
        count = 1
        for i, d in enumerate(shape):
            if isinstance(d, str):
                continue
            if d < 0:
                raise self.invalid(f"{what} has dimension {i} = {d} (shape "
                                   f"{shape}); dimensions are 0 or more")
            count *= d
        if count * itemsize > MAX_TENSOR_BYTES:
            raise self.invalid(
                f"{what} has shape {shape}: {count} elements "
                f"({count * itemsize} bytes), more than the "
                f"{MAX_TENSOR_BYTES} bytes Flow accepts in one tensor")

    def check_value(self, what: str, v) -> None:
        if isinstance(v, Value):
            self.check_shape(what, v.shape, numpy_dtype(v.dtype).itemsize)

    def check_versions(self) -> None:
        """Refuses an IR version or default-domain opset newer than the
        onnx package Flow reads models with knows."""
        import onnx
        import onnx.defs
        if self.model.ir_version > onnx.IR_VERSION:
            raise self.invalid(
                f"ir_version {self.model.ir_version} is newer than the "
                f"newest Flow reads, {onnx.IR_VERSION} (onnx "
                f"{onnx.__version__})")
        newest = onnx.defs.onnx_opset_version()
        for o in self.model.opset_import:
            if o.domain in ("", "ai.onnx") and o.version > newest:
                raise self.invalid(
                    f"opset_import of the default domain is version "
                    f"{o.version}; Flow imports opsets {MIN_OPSET} to "
                    f"{newest} (the newest onnx {onnx.__version__} "
                    "defines)")

    def check_graph(self) -> None:
        """What onnx.checker checks of the graph's structure: every name
        is defined once (static single assignment) by an initializer, a
        graph input or a node, before a node reads it; every graph output
        is defined; declared dimensions are not negative nor absurd."""
        writers: Dict[str, str] = {}

        def define(name, writer):
            if name in writers:
                raise self.invalid(
                    f"'{name}' is written by {writers[name]} and by "
                    f"{writer}; an ONNX graph defines each name once "
                    "(SSA form)")
            writers[name] = writer
        for init in self.graph.initializer:
            define(init.name, "an initializer")
        initializers = set(writers)
        listed = set()
        for inp in self.graph.input:
            if inp.name in initializers and inp.name not in listed:
                listed.add(inp.name)  # an initializer listed as an input
                continue
            define(inp.name, "a graph input")
        nodes = list(self.graph.node)
        later = {}
        for i, node in enumerate(nodes):
            for name in node.output:
                if name:
                    later.setdefault(name, _node_label(node, i))
        for i, node in enumerate(nodes):
            for name in node.input:
                if name and name not in writers:
                    if name in later:
                        raise self.invalid(
                            f"{_node_label(node, i)} reads '{name}' before "
                            f"{later[name]} writes it; ONNX nodes are in "
                            "topological order")
                    raise self.invalid(f"{_node_label(node, i)} reads "
                                       f"'{name}', which nothing defines")
            for name in node.output:
                if name:
                    define(name, _node_label(node, i))
        for out in self.graph.output:
            if out.name not in writers:
                raise self.invalid(f"graph output '{out.name}' is not "
                                   "computed: no node, input or "
                                   "initializer defines it")
        for kind, infos in (("input", self.graph.input),
                            ("output", self.graph.output),
                            ("value_info", self.graph.value_info)):
            for info in infos:
                tt = info.type.tensor_type
                self.check_shape(f"{kind} '{info.name}'",
                                 _declared(tt.shape.dim),
                                 _itemsize(tt.elem_type))

    def initializer_array(self, init) -> np.ndarray:
        """An initializer as an array, its dims checked against its data."""
        from onnx import helper, numpy_helper
        dims = [int(d) for d in init.dims]
        what = f"initializer '{init.name}'"
        itemsize = _itemsize(init.data_type)
        self.check_shape(what, dims, itemsize)
        try:
            return numpy_helper.to_array(init)
        except Exception as e:  # noqa: BLE001 - named below
            if init.data_location == init.EXTERNAL:
                raise self.invalid(f"{what}: cannot read its external data "
                                   f"({e})") from e
            count = int(np.prod(dims, dtype=object))
            need = (f"dims {dims} need {count} elements of "
                    f"{_type_name(init.data_type)} ({count * itemsize} "
                    "bytes)")
            if init.HasField("raw_data"):
                n = len(init.raw_data)
                held = f"{n // itemsize} ({n} bytes)" if n % itemsize == 0 \
                    else f"{n} bytes"
            else:
                try:
                    held = str(len(getattr(init, helper.tensor_dtype_to_field(
                        init.data_type))))
                except Exception:  # noqa: BLE001 - an unknown type
                    held = None
            if held is None:
                raise self.invalid(f"{what}: {e}") from e
            raise self.invalid(f"{what}: {need}, the data holds {held}") \
                from e

    def check_output(self, out, v) -> None:
        """Refuses a graph output whose declared static dimensions are not
        the shape Flow computes for it (symbolic ones match anything)."""
        tt = out.type.tensor_type
        if not tt.HasField("shape"):
            return
        declared = _declared(tt.shape.dim)
        shape = list(self.shape_of(v))
        if len(declared) != len(shape) or any(
                isinstance(d, int) and d != s
                for d, s in zip(declared, shape)):
            raise self.invalid(
                f"graph output '{out.name}' is declared with shape "
                f"{declared}, but the graph computes {shape}")

    # Values -------------------------------------------------------------

    def dtype_of(self, x) -> str:
        if isinstance(x, Value):
            return x.dtype
        d = NUMPY_TO_FLOW.get(np.asarray(x).dtype.name)
        if d is None:
            raise Unsupported(f"element type {np.asarray(x).dtype}")
        return d

    def shape_of(self, x) -> Tuple[int, ...]:
        return x.shape if isinstance(x, Value) else tuple(np.shape(x))

    def const(self, x, what: str) -> np.ndarray:
        if isinstance(x, Value):
            raise Unsupported(f"{what} must be known at compile time")
        return np.asarray(x)

    # Driver ---------------------------------------------------------------
    def run(self, archive: Optional[str],
            archive_name: Optional[str] = None) -> ImportedOnnx:
        self.check_versions()
        if self.opset is None or self.opset < MIN_OPSET:
            raise UnsupportedOpsError(
                [(f"opset {self.opset}", "<model>", "",
                  f"Flow imports ONNX opset {MIN_OPSET} and later; convert "
                  "the model with onnx.version_converter")], "ONNX")
        self.check_graph()
        for init in self.graph.initializer:
            array = self.initializer_array(init)
            if array.dtype == np.float64:
                array = array.astype(np.float32)
            self.env[init.name] = array
            self.names[id(array)] = init.name
        inputs = []
        for inp in self.graph.input:
            if inp.name in self.constants:
                # Frozen by the caller: a constant, not an argument.
                array = np.asarray(self.constants[inp.name])
                self.env[inp.name] = array
                self.names[id(array)] = inp.name
                continue
            if inp.name in self.env:
                continue  # an initializer listed as an input
            tt = inp.type.tensor_type
            dtype = _ONNX_TYPES.get(tt.elem_type)
            if dtype is None:
                self.unsupported.append(("input", inp.name, "",
                                         _type_refusal(tt.elem_type)))
                self.env[inp.name] = Poison()
                continue
            shape = self.input_shapes.get(inp.name)
            if shape is None:
                shape = []
                for d in tt.shape.dim:
                    if d.HasField("dim_value"):
                        shape.append(d.dim_value)
                    else:
                        raise ValueError(
                            f"ONNX input '{inp.name}' has the symbolic "
                            f"dimension '{d.dim_param or '?'}': pass "
                            f"input_shapes={{'{inp.name}': (...)}}")
            self.check_shape(f"input '{inp.name}'", shape,
                             numpy_dtype(dtype).itemsize)
            self.e.locate(name=inp.name)
            self.env[inp.name] = self.e.argument(shape, dtype)
            inputs.append(inp.name)

        for index, node in enumerate(self.graph.node):
            self.node = node
            self.node_label = _node_label(node, index)
            self.e.locate(name=node.name or node.output[0])
            outs = self.visit(node)
            for name, v in zip(node.output, outs):
                if name:
                    self.check_value(f"{self.node_label} output '{name}'", v)
                    self.env[name] = v

        self.e.locate()
        results, names = [], []
        for out in self.graph.output:
            v = self.env.get(out.name)
            if isinstance(v, Poison):
                continue
            self.check_output(out, v)
            v = self.result(v, out)
            if v is not None:
                results.append(v)
            names.append(out.name)
        text, archive = self.finish(results, archive, archive_name, inputs)
        return ImportedOnnx(text, archive, inputs, names)

    def visit(self, node) -> List[Any]:
        # check_graph made sure every name read is defined.
        ins = [self.env.get(n) if n else None for n in node.input]
        poison = lambda: [Poison()] * len(node.output)
        if node.domain not in ("", "ai.onnx") and not any(
                isinstance(v, Poison) for v in ins):
            self.record(node, f"domain '{node.domain}'")
            return poison()
        attrs = _attrs(node)

        def call(handler):
            out = handler(self, ins, attrs)
            return list(out) if isinstance(out, (list, tuple)) else [out]
        return self.dispatch(node, node.op_type, ins,
                             fold=lambda: self.fold(node, ins), call=call,
                             poison=poison)

    def record(self, node, reason):
        if hasattr(node, "op_type"):
            self.unsupported.append((node.op_type, node.name or
                                     node.output[0], "", reason))
        else:  # a graph output
            self.unsupported.append(("output", node.name, "", reason))

    def fold(self, node, ins) -> Optional[List[Any]]:
        from onnx import helper
        from onnx.reference import ReferenceEvaluator
        own = _NUMPY_FOLDS.get(node.op_type)
        if own is not None:
            return [own(ins, _attrs(node))]
        feeds, names = {}, []
        for i, v in enumerate(ins):
            name = f"in{i}" if node.input[i] else ""
            names.append(name)
            if name:
                feeds[name] = np.asarray(v)
        if sum(a.nbytes for a in feeds.values()) > FOLD_BYTES:
            return None
        outs = [f"out{i}" for i in range(len(node.output))]
        copy = helper.make_node(node.op_type, names, outs, domain=node.domain,
                                **_attrs(node))
        if self.fold_bytes(copy, feeds) > FOLD_BYTES:
            return None  # translated instead (and its size checked)
        graph = helper.make_graph(
            [copy], "fold",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
                a.dtype), a.shape) for n, a in feeds.items()],
            [helper.make_tensor_value_info(o, 0, None) for o in outs])
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            results = ReferenceEvaluator(model).run(None, feeds)
        except Exception:  # not computable here: translate it instead
            return None
        out = []
        for r in results:
            r = np.asarray(r)
            if r.dtype == np.float64:
                r = r.astype(np.float32)
            out.append(r)
        return out

    def fold_bytes(self, node, feeds) -> int:
        """The bytes `node` (reading `feeds`) would compute, as far as
        ONNX's shape inference knows them before computing anything (the
        small inputs' values given, for the shapes, repeats and ranges an
        output's size depends on); 0 when unknown."""
        from onnx import helper, numpy_helper, shape_inference
        initializers, inputs = [], []
        try:
            for n, a in feeds.items():
                if a.size <= 64:
                    initializers.append(numpy_helper.from_array(a, n))
                else:
                    inputs.append(helper.make_tensor_value_info(
                        n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape))
            graph = helper.make_graph(
                [node], "fold", inputs,
                [helper.make_tensor_value_info(o, 0, None)
                 for o in node.output if o], initializer=initializers)
            model = helper.make_model(
                graph, opset_imports=[helper.make_opsetid("", self.opset)])
            inferred = shape_inference.infer_shapes(model).graph.output
        except Exception:  # noqa: BLE001 - no estimate: fold as before
            return 0
        total = 0
        for out in inferred:
            tt = out.type.tensor_type
            dims = _declared(tt.shape.dim)
            if tt.HasField("shape") and all(isinstance(d, int) for d in dims):
                total += int(np.prod(dims, dtype=object)) * \
                    _itemsize(tt.elem_type)
        return total


def _gather_elements(ins, attrs):
    data, index = np.asarray(ins[0]), np.asarray(ins[1]).astype(np.int64)
    axis = attrs.get("axis", 0) % data.ndim
    index = np.where(index < 0, index + data.shape[axis], index)
    return np.take_along_axis(data, index, axis)


#: Constant folds done here rather than by the reference evaluator.
_NUMPY_FOLDS = {"GatherElements": _gather_elements}

_NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike",
               "RandomUniformLike", "Multinomial", "Bernoulli"}

_HANDLERS, _handles = handler_registry()


def _axis(a: int, rank: int) -> int:
    if not -max(rank, 1) <= a < max(rank, 1):
        raise Unsupported(f"axis {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


def _common(self, ins, float_only=False) -> str:
    dtypes = {self.dtype_of(x) for x in ins if x is not None}
    if len(dtypes) != 1:
        raise Unsupported(f"operands of different types {sorted(dtypes)}")
    dtype = dtypes.pop()
    if float_only and dtype not in FLOAT_TYPES:
        raise Unsupported(f"{dtype} operands")
    return dtype


def _rounds_once(handler):
    """For an op Flow builds from several: f16 and bf16 operands are computed
    in f32 and each result rounded once, as one op of its own would be (and
    as ONNX's reference computes)."""
    def wrapped(self, ins, attrs):
        halves = [x.dtype for x in ins
                  if isinstance(x, Value) and x.dtype in ("f16", "bf16")]
        if not halves:
            return handler(self, ins, attrs)
        wide = [self.e.cast(x, "f32") if isinstance(x, Value) and
                x.dtype in ("f16", "bf16") else x for x in ins]
        out = handler(self, wide, attrs)

        def narrow(y):
            if isinstance(y, Value) and y.dtype == "f32":
                return self.e.cast(y, halves[0])
            return y
        if isinstance(out, (tuple, list)):
            return type(out)(narrow(y) for y in out)
        return narrow(out)
    wrapped.__name__ = handler.__name__
    return wrapped


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
            n = int(e.reshape(-1)[0])
            result = self.e.broadcast_to(self.e.scalar(1, base.dtype),
                                         base.shape) if n == 0 else base
            for _ in range(abs(n) - 1):
                result = self.e.binary("mul", result, base)
            if n < 0:
                result = self.e.binary("div", self.e.scalar(1, base.dtype),
                                       result)
            return result
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
    return self.e.compare("eq", self.value(ins[0], "i1"),
                          self.e.scalar(False, "i1"))


@_handles("And", "Or")
def _and_or(self, ins, attrs):
    a, b = self.value(ins[0], "i1"), self.value(ins[1], "i1")
    shape = np.broadcast_shapes(a.shape, b.shape)
    a = self.e.broadcast_to(a, shape)
    if self.node.op_type == "And":
        return self.e.select(a, b, self.e.scalar(False, "i1"))
    return self.e.select(a, self.e.scalar(True, "i1"), b)


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
    v = self.value(ins[0])
    return self.e.binary("div", self.e.scalar(1, v.dtype), v)


@_handles("Gelu")
def _gelu(self, ins, attrs):
    v = self.value(ins[0])
    approximate = attrs.get("approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) \
        else approximate
    return self.e.unary("gelu", v, {"approximate": approximate})


@_handles("LeakyRelu")
def _leaky_relu(self, ins, attrs):
    v = self.value(ins[0])
    alpha = attrs.get("alpha", 0.01)
    scaled = self.e.binary("mul", v, self.e.scalar(alpha, v.dtype))
    positive = self.e.compare("gt", v, self.e.scalar(0, v.dtype))
    return self.e.select(positive, v, scaled)


@_handles("Softplus")
@_rounds_once
def _softplus(self, ins, attrs):
    v = self.value(ins[0])
    return self.e.log1p(self.e.unary("exp", v))


@_handles("HardSigmoid")
@_rounds_once
def _hard_sigmoid(self, ins, attrs):
    v = self.value(ins[0])
    y = self.e.binary("add", self.e.binary(
        "mul", v, self.e.scalar(attrs.get("alpha", 0.2), v.dtype)),
        self.e.scalar(attrs.get("beta", 0.5), v.dtype))
    y = self.e.binary("maximum", y, self.e.scalar(0, v.dtype))
    return self.e.binary("minimum", y, self.e.scalar(1, v.dtype))


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


@_handles("Clip")
def _clip(self, ins, attrs):
    v = self.value(ins[0])
    lo = ins[1] if len(ins) > 1 else None
    hi = ins[2] if len(ins) > 2 else None
    if lo is not None:
        v = self.e.binary("maximum", v, self.value(lo, v.dtype))
    if hi is not None:
        v = self.e.binary("minimum", v, self.value(hi, v.dtype))
    return v


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
    if alpha != 1.0:
        y = self.e.binary("mul", y, self.e.scalar(alpha, y.dtype))
    if len(ins) > 2 and ins[2] is not None and beta != 0:
        c = self.value(ins[2], y.dtype)
        if beta != 1.0:
            c = self.e.binary("mul", c, self.e.scalar(beta, y.dtype))
        y = self.e.binary("add", y, c)
    return y


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


# Activations and element-wise ops built from Flow's --------------------------

def _float_input(self, x) -> Value:
    v = self.value(x)
    if v.dtype not in FLOAT_TYPES:
        raise Unsupported(f"{v.dtype} input")
    return v


def _expm1_scaled(self, v, alpha):
    """alpha * (exp(v) - 1)."""
    return self.e.binary("mul", self.e.expm1(v), self.e.scalar(alpha, v.dtype))


@_handles("Elu", "Selu")
@_rounds_once
def _elu(self, ins, attrs):
    v = _float_input(self, ins[0])
    selu = self.node.op_type == "Selu"
    alpha = attrs.get("alpha", 1.67326319217681884765625 if selu else 1.0)
    positive = self.e.compare("gt", v, self.e.scalar(0, v.dtype))
    y = self.e.select(positive, v, _expm1_scaled(self, v, alpha))
    if selu:
        y = self.e.binary("mul", y, self.e.scalar(
            attrs.get("gamma", 1.05070102214813232421875), v.dtype))
    return y


@_handles("Celu")
@_rounds_once
def _celu(self, ins, attrs):
    v = _float_input(self, ins[0])
    alpha = attrs.get("alpha", 1.0)
    zero = self.e.scalar(0, v.dtype)
    scaled = self.e.binary("div", v, self.e.scalar(alpha, v.dtype))
    return self.e.binary("add", self.e.binary("maximum", v, zero),
                         self.e.binary("minimum", zero,
                                       _expm1_scaled(self, scaled, alpha)))


@_handles("Softsign")
@_rounds_once
def _softsign(self, ins, attrs):
    v = _float_input(self, ins[0])
    return self.e.binary("div", v, self.e.binary(
        "add", self.e.unary("abs", v), self.e.scalar(1, v.dtype)))


@_handles("ThresholdedRelu")
def _thresholded_relu(self, ins, attrs):
    v = _float_input(self, ins[0])
    above = self.e.compare("gt", v, self.e.scalar(attrs.get("alpha", 1.0),
                                                  v.dtype))
    return self.e.select(above, v, self.e.scalar(0, v.dtype))


@_handles("HardSwish")
@_rounds_once
def _hard_swish(self, ins, attrs):
    v = _float_input(self, ins[0])
    gate = self.e.binary("add", self.e.binary(
        "mul", v, self.e.scalar(1 / 6, v.dtype)), self.e.scalar(0.5, v.dtype))
    gate = self.e.binary("minimum", self.e.binary(
        "maximum", gate, self.e.scalar(0, v.dtype)), self.e.scalar(1, v.dtype))
    return self.e.binary("mul", v, gate)


@_handles("Mish")
@_rounds_once
def _mish(self, ins, attrs):
    v = _float_input(self, ins[0])
    softplus = self.e.log1p(self.e.unary("exp", v))
    return self.e.binary("mul", v, self.e.unary("tanh", softplus))


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


@_handles("Trilu")
def _trilu(self, ins, attrs):
    x = self.value(ins[0])
    if len(x.shape) < 2:
        raise Unsupported("a tensor of rank below 2")
    k = 0
    if len(ins) > 1 and ins[1] is not None:
        k = int(self.const(ins[1], "k").reshape(-1)[0])
    m, n = x.shape[-2:]
    rows, cols = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = (cols - rows >= k) if attrs.get("upper", 1) else (cols - rows <= k)
    zero = self.e.scalar(False, "i1") if x.dtype == "i1" else \
        self.e.scalar(0, x.dtype)
    return self.e.select(self.e.constant(keep), x, zero)


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


@_handles("OneHot")
def _one_hot(self, ins, attrs):
    idx = self.value(ins[0])
    depth = int(np.asarray(self.const(ins[1], "depth")).reshape(-1)[0])
    values = self.value(ins[2])
    if idx.dtype not in ("i64", "i32"):
        idx = self.e.cast(idx, "i64")
    rank = len(idx.shape) + 1
    axis = _axis(attrs.get("axis", -1), rank)
    # Negative indices count from the end; others outside [0, depth) are
    # all off.
    idx = self.e.wrap_negative(idx, depth)
    shape = list(idx.shape)
    shape.insert(axis, depth)
    self.check_shape(f"{self.node_label}'s result", shape,
                     numpy_dtype(values.dtype).itemsize)
    shape[axis] = 1
    idx = self.e.reshape(idx, shape)
    iota_shape = [1] * rank
    iota_shape[axis] = depth
    iota = self.e.constant(np.arange(depth).astype(
        numpy_dtype(idx.dtype)).reshape(iota_shape))
    hot = self.e.compare("eq", idx, iota)
    off = self.e.reshape(self.e.slice(values, [0], [1], [1]), ())
    on = self.e.reshape(self.e.slice(values, [1], [2], [1]), ())
    return self.e.select(hot, on, off)


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


@_handles("Tile")
def _tile(self, ins, attrs):
    x = self.value(ins[0])
    repeats = [int(r) for r in self.const(ins[1], "repeats").reshape(-1)]
    if len(repeats) != len(x.shape) or min(repeats, default=1) < 0:
        raise Unsupported(f"repeats {repeats} for rank {len(x.shape)}")
    return self.e.tile(x, repeats)


@_handles("DepthToSpace", "SpaceToDepth")
def _depth_space(self, ins, attrs):
    x = self.value(ins[0])
    if len(x.shape) != 4:
        raise Unsupported("an input of rank other than 4")
    b = int(attrs["blocksize"])
    n, c, h, w = x.shape
    mode = attrs.get("mode", b"DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("DCR", "CRD"):
        raise Unsupported(f"mode {mode!r}")
    if self.node.op_type == "SpaceToDepth":
        # DCR: output channel (bh * b + bw) * c + ci; CRD: ci * b * b + ...
        y = self.e.reshape(x, (n, c, h // b, b, w // b, b))
        y = self.e.transpose(y, (0, 3, 5, 1, 2, 4) if mode == "DCR"
                             else (0, 1, 3, 5, 2, 4))
        return self.e.reshape(y, (n, c * b * b, h // b, w // b))
    if mode == "DCR":
        y = self.e.reshape(x, (n, b, b, c // (b * b), h, w))
        y = self.e.transpose(y, (0, 3, 4, 1, 5, 2))
    else:
        y = self.e.reshape(x, (n, c // (b * b), b, b, h, w))
        y = self.e.transpose(y, (0, 1, 4, 2, 5, 3))
    return self.e.reshape(y, (n, c // (b * b), h * b, w * b))


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
    per_channel = (x.shape[1],) + (1,) * (len(x.shape) - 2)
    scale = self.e.reshape(self.value(ins[1], x.dtype), per_channel)
    bias = self.e.reshape(self.value(ins[2], x.dtype), per_channel)
    return self.e.binary("add", self.e.binary("mul", y, scale), bias)


@_handles("MeanVarianceNormalization")
@_rounds_once
def _mvn(self, ins, attrs):
    x = _float_input(self, ins[0])
    axes = [_axis(int(a), len(x.shape)) for a in attrs.get("axes", [0, 2, 3])]
    return self.e.normalize(x, axes, 1e-9)


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


# Layout ------------------------------------------------------------------------

@_handles("Reshape")
def _reshape(self, ins, attrs):
    x = self.value(ins[0])
    shape = [int(d) for d in self.const(ins[1], "the shape").reshape(-1)]
    if min(shape, default=0) < -1:
        raise self.invalid(f"{self.node_label} reshapes to {shape}; the "
                           "entries of a shape are -1 or more")
    allow_zero = attrs.get("allowzero", 0)
    for i, d in enumerate(shape):
        if d == 0 and not allow_zero:
            shape[i] = x.shape[i]
    if shape.count(-1) > 1:
        raise Unsupported("a shape with several -1")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        total = int(np.prod(x.shape))
        if known == 0 or total % known:
            raise Unsupported(f"reshape of {list(x.shape)} to {shape}")
        shape[shape.index(-1)] = total // known
    if int(np.prod(shape)) != int(np.prod(x.shape)):
        raise Unsupported(f"reshape of {list(x.shape)} to {shape}")
    return self.e.reshape(x, shape)


@_handles("Flatten")
def _flatten(self, ins, attrs):
    x = self.value(ins[0])
    axis = attrs.get("axis", 1)
    axis = axis + len(x.shape) if axis < 0 else axis
    lead = int(np.prod(x.shape[:axis]))
    return self.e.reshape(x, (lead, int(np.prod(x.shape[axis:]))))


@_handles("Transpose")
def _transpose(self, ins, attrs):
    x = self.value(ins[0])
    perm = attrs.get("perm", list(reversed(range(len(x.shape)))))
    return self.e.transpose(x, perm)


@_handles("Squeeze", "Unsqueeze")
def _squeeze(self, ins, attrs):
    x = self.value(ins[0])
    axes = ins[1] if len(ins) > 1 else None
    axes = None if axes is None else [int(a) for a in
                                      self.const(axes, "axes").reshape(-1)]
    shape = list(x.shape)
    if self.node.op_type == "Squeeze":
        if axes is None:
            shape = [d for d in shape if d != 1]
        else:
            axes = [_axis(a, len(shape)) for a in axes]
            if any(shape[a] != 1 for a in axes):
                raise Unsupported("squeezing a dimension that is not 1")
            shape = [d for i, d in enumerate(shape) if i not in axes]
    else:
        if axes is None:
            raise Unsupported("Unsqueeze without axes")
        rank = len(shape) + len(axes)
        for a in sorted(_axis(a, rank) for a in axes):
            shape.insert(a, 1)
    return self.e.reshape(x, shape)


@_handles("Concat")
def _concat(self, ins, attrs):
    _common(self, ins)
    values = [self.value(v) for v in ins]
    rank = len(values[0].shape)
    axis = _axis(attrs["axis"], rank)
    values = [v for v in values if v.shape[axis] != 0] or values[:1]
    return self.e.concat(values, axis)


@_handles("Slice")
def _slice(self, ins, attrs):
    x = self.value(ins[0])
    rank = len(x.shape)
    starts = self.const(ins[1], "starts").tolist()
    ends = self.const(ins[2], "ends").tolist()
    axes = self.const(ins[3], "axes").tolist() if len(ins) > 3 and \
        ins[3] is not None else list(range(len(starts)))
    steps = self.const(ins[4], "steps").tolist() if len(ins) > 4 and \
        ins[4] is not None else [1] * len(starts)
    lo, hi, st = [0] * rank, list(x.shape), [1] * rank
    reversed_axes = []
    for s, e, a, step in zip(starts, ends, axes, steps):
        a = _axis(int(a), rank)
        size = x.shape[a]
        if step == 0:
            raise Unsupported("a slice with a step of 0")
        s = s + size if s < 0 else s
        e = e + size if e < 0 else e
        if step > 0:
            s = min(max(s, 0), size)
            e = min(max(e, s), size)
            lo[a], hi[a], st[a] = s, e, step
            continue
        # A negative step walks from s down to just above e: reversed, the
        # axis is a forward slice from size - 1 - s up to size - 1 - e.
        s = min(max(s, 0), size - 1)
        e = min(max(e, -1), size - 1)
        first, stop = size - 1 - s, size - 1 - e
        lo[a], hi[a], st[a] = first, max(stop, first), -step
        reversed_axes.append(a)
    return self.e.slice(self.e.reverse(x, reversed_axes), lo, hi, st)


def _scatter_reduction(attrs) -> str:
    reduction = attrs.get("reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) \
        else reduction
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise Unsupported(f"reduction '{reduction}'")
    return reduction


@_handles("ScatterND")
def _scatter_nd(self, ins, attrs):
    x, idx = self.value(ins[0]), self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    q = idx.shape[-1] if idx.shape else 0
    if not 1 <= q <= len(x.shape):
        raise Unsupported(f"index tuples of {q} coordinates")
    dims = self.e.constant(np.array(x.shape[:q], dtype=np.int64))
    idx = self.e.wrap_negative(self.e.cast(idx, "i64"), dims)
    return self.e.scatter_nd(x, idx, self.value(ins[2], x.dtype),
                             _scatter_reduction(attrs))


@_handles("ScatterElements")
def _scatter_elements(self, ins, attrs):
    x, idx = self.value(ins[0]), self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    idx = self.e.wrap_negative(idx, x.shape[axis])
    return self.e.scatter_elements(x, idx, self.value(ins[2], x.dtype), axis,
                                   _scatter_reduction(attrs))


@_handles("Gather")
def _gather(self, ins, attrs):
    x = self.value(ins[0])
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    size = x.shape[axis]
    idx = ins[1]
    if isinstance(idx, Value):
        if idx.dtype not in ("i64", "i32"):
            raise Unsupported(f"{idx.dtype} indices")
        i = self.e.wrap_negative(idx, size)
    else:
        arr = np.asarray(idx).astype(np.int64)
        arr = np.where(arr < 0, arr + size, arr)
        if arr.size and (arr.min() < 0 or arr.max() >= size):
            raise Unsupported(f"index out of range for a dimension of {size}")
        i = self.e.constant(arr, None)
    return self.e.gather(x, i, axis)


@_handles("GatherElements")
def _gather_elements(self, ins, attrs):
    x = self.value(ins[0])
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    idx = self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    return self.e.gather_elements(
        x, self.e.wrap_negative(idx, x.shape[axis]), axis)


@_handles("TopK")
def _topk(self, ins, attrs):
    x = self.value(ins[0])
    if x.dtype == "i1":
        raise Unsupported("bool input")
    k = int(np.asarray(self.const(ins[1], "K")).reshape(-1)[0])
    axis = _axis(attrs.get("axis", -1), len(x.shape))
    return self.e.topk(x, k, axis, bool(attrs.get("largest", 1)))


@_handles("GatherND")
def _gather_nd(self, ins, attrs):
    """data[indices[..., 0], indices[..., 1], ...] (the first b dimensions
    shared as batch): the indexed dimensions are flattened into one and
    gathered with the linearized index."""
    x = self.value(ins[0])
    idx = self.value(ins[1])
    if idx.dtype not in ("i64", "i32"):
        raise Unsupported(f"{idx.dtype} indices")
    idx = self.e.cast(idx, "i64")
    b = int(attrs.get("batch_dims", 0))
    m = idx.shape[-1] if idx.shape else 0
    if not idx.shape or not 1 <= m <= len(x.shape) - b or \
            tuple(idx.shape[:b]) != tuple(x.shape[:b]):
        raise Unsupported(f"indices of shape {list(idx.shape)} for data of "
                          f"shape {list(x.shape)} and batch_dims {b}")
    lead = idx.shape[:-1]
    indexed = x.shape[b:b + m]
    block = int(np.prod(indexed))
    flat = None
    stride = block
    for j, size in enumerate(indexed):
        stride //= size
        comp = self.e.reshape(self.e.slice(
            idx, [0] * (len(idx.shape) - 1) + [j],
            list(idx.shape[:-1]) + [j + 1], [1] * len(idx.shape)), lead)
        comp = self.e.wrap_negative(comp, size)
        term = self.e.binary("mul", comp, self.e.scalar(stride, "i64"))
        flat = term if flat is None else self.e.binary("add", flat, term)
    if b:
        batches = int(np.prod(x.shape[:b]))
        base = (np.arange(batches, dtype=np.int64) * block).reshape(
            tuple(x.shape[:b]) + (1,) * (len(lead) - b))
        flat = self.e.binary("add", flat, self.e.constant(base))
    rest = x.shape[b + m:]
    table = self.e.reshape(x, (int(np.prod(x.shape[:b + m])),) + tuple(rest))
    return self.e.gather(table, flat, 0)


@_handles("Split")
def _split(self, ins, attrs):
    x = self.value(ins[0])
    axis = _axis(attrs.get("axis", 0), len(x.shape))
    size = x.shape[axis]
    split = ins[1] if len(ins) > 1 else None
    count = len(self.node.output)
    if split is not None:
        sizes = [int(s) for s in self.const(split, "split")]
    else:
        n = attrs.get("num_outputs", count)
        chunk = -(-size // n)
        sizes = [min(chunk, size - i * chunk) for i in range(n)]
    out, offset = [], 0
    for s in sizes:
        lo = [0] * len(x.shape)
        hi = list(x.shape)
        lo[axis], hi[axis] = offset, offset + s
        out.append(self.e.slice(x, lo, hi, [1] * len(x.shape)))
        offset += s
    return out


@_handles("Expand")
def _expand(self, ins, attrs):
    x = self.value(ins[0])
    shape = [int(d) for d in self.const(ins[1], "the shape").reshape(-1)]
    if min(shape, default=0) < 0:
        raise self.invalid(f"{self.node_label} expands to {shape}; the "
                           "entries of a shape are 0 or more")
    try:
        shape = np.broadcast_shapes(x.shape, tuple(shape))
    except ValueError:
        raise Unsupported(f"expanding {list(x.shape)} to {shape}") from None
    return self.e.broadcast_to(x, shape)


@_handles("Pad")
def _pad(self, ins, attrs):
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    x = self.value(ins[0])
    rank = len(x.shape)
    pads = [int(p) for p in self.const(ins[1], "pads")]
    value = 0.0
    if len(ins) > 2 and ins[2] is not None:
        value = float(np.asarray(self.const(ins[2], "the pad value")).
                      reshape(-1)[0]) if np.size(ins[2]) else 0.0
    axes = list(range(rank))
    if len(ins) > 3 and ins[3] is not None:
        axes = [_axis(int(a), rank) for a in self.const(ins[3], "axes")]
    low, high = [0] * rank, [0] * rank
    n = len(axes)
    for i, a in enumerate(axes):
        low[a], high[a] = pads[i], pads[i + n]
    if min(low + high) < 0:
        raise Unsupported("negative pads")
    if x.dtype == "i1":
        raise Unsupported("padding a bool tensor")
    return self.e.pad(x, low, high, mode, value)


# Recurrent layers -----------------------------------------------------------

def _rnn_activation(self, name, alpha, beta):
    """One of ONNX's recurrent activations as a function of a Value."""
    e = self.e

    def scal(v, x):
        return e.scalar(v, x.dtype)
    table = {
        "Sigmoid": lambda x: e.unary("sigmoid", x),
        "Tanh": lambda x: e.unary("tanh", x),
        "Relu": lambda x: e.unary("relu", x),
        "Affine": lambda x: e.binary("add", e.binary(
            "mul", x, scal(alpha, x)), scal(beta, x)),
        "LeakyRelu": lambda x: e.select(
            e.compare("gt", x, scal(0, x)), x,
            e.binary("mul", x, scal(alpha, x))),
        "ThresholdedRelu": lambda x: e.select(
            e.compare("gt", x, scal(alpha, x)), x, scal(0, x)),
        "ScaledTanh": lambda x: e.binary("mul", scal(alpha, x), e.unary(
            "tanh", e.binary("mul", x, scal(beta, x)))),
        "HardSigmoid": lambda x: e.binary("minimum", e.binary(
            "maximum", e.binary("add", e.binary("mul", x, scal(alpha, x)),
                                scal(beta, x)), scal(0, x)), scal(1, x)),
        "Elu": lambda x: e.select(
            e.compare("gt", x, scal(0, x)), x,
            e.binary("mul", e.expm1(x), scal(alpha, x))),
        "Softsign": lambda x: e.binary("div", x, e.binary(
            "add", e.unary("abs", x), scal(1, x))),
        "Softplus": lambda x: e.log1p(e.unary("exp", x)),
    }
    if name not in table:
        raise Unsupported(f"activation {name}")
    return table[name]


# Activations that read activation_alpha (and _beta), and their defaults.
_RNN_ALPHA = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, None),
              "ThresholdedRelu": (1.0, None), "ScaledTanh": (1.0, 1.0),
              "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}


def _recurrent(kind):
    """ONNX RNN, GRU and LSTM, unrolled over the (static) sequence: the
    input projection of every step is one matmul; each step adds the
    recurrent projection and applies the gates. sequence_lens masks the
    steps past each batch element's length (state kept, output 0), which
    also runs a reverse direction from each element's own last step."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    default_acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                    "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]

    def handler(self, ins, attrs):
        e = self.e

        def opt(i):
            return ins[i] if len(ins) > i and ins[i] is not None and \
                (not isinstance(ins[i], np.ndarray) or ins[i].size) else None
        x = _float_input(self, ins[0])
        dtype = x.dtype
        layout = int(attrs.get("layout", 0))
        if layout:
            x = e.transpose(x, (1, 0, 2))
        seq, batch, _ = x.shape
        w, r = self.value(ins[1], dtype), self.value(ins[2], dtype)
        hidden = int(attrs.get("hidden_size", r.shape[-1]))
        direction = attrs.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) \
            else direction
        if direction not in ("forward", "reverse", "bidirectional"):
            raise Unsupported(f"direction '{direction}'")
        dirs = 2 if direction == "bidirectional" else 1
        names = [a.decode() if isinstance(a, bytes) else a
                 for a in attrs.get("activations", [])] or \
            default_acts * dirs
        alphas = list(attrs.get("activation_alpha", []))
        betas = list(attrs.get("activation_beta", []))
        acts = []
        for name in names:
            alpha, beta = _RNN_ALPHA.get(name, (None, None))
            if alpha is not None and alphas:
                alpha = alphas.pop(0)
            if beta is not None and betas:
                beta = betas.pop(0)
            acts.append(_rnn_activation(self, name, alpha, beta))
        per_dir = len(default_acts)
        clip = attrs.get("clip")
        input_forget = bool(attrs.get("input_forget", 0))
        before_reset = bool(attrs.get("linear_before_reset", 0))

        def clipped(v):
            if clip is None:
                return v
            return e.binary("minimum", e.binary(
                "maximum", v, e.scalar(-clip, dtype)), e.scalar(clip, dtype))

        def state(i):
            v = opt(i)
            if v is None:
                return None
            v = self.value(v, dtype)
            return e.transpose(v, (1, 0, 2)) if layout else v

        bias = opt(3)
        bias = self.value(bias, dtype) if bias is not None else None
        init_h, init_c = state(5), state(6) if kind == "LSTM" else None
        peep = opt(7) if kind == "LSTM" else None
        peep = self.value(peep, dtype) if peep is not None else None
        lens = opt(4)
        masks = None
        if lens is not None:
            if not isinstance(lens, Value) and (np.asarray(lens) == seq).all():
                lens = None
            else:
                lens = e.reshape(self.value(lens, "i64"), (batch, 1))
                masks = [e.compare("lt", e.scalar(t, "i64"), lens)
                         for t in range(seq)]

        def row(v, d, lo, hi):
            """v[d, lo:hi] of a [dirs, n, ...] tensor as [hi - lo, ...]."""
            starts = [d, lo] + [0] * (len(v.shape) - 2)
            limits = [d + 1, hi] + list(v.shape[2:])
            part = e.slice(v, starts, limits, [1] * len(v.shape))
            return e.reshape(part, part.shape[1:])

        def cols(v, g):
            """Gate g's columns of a [batch, gates * hidden] value."""
            return e.slice(v, [0, g * hidden], [batch, (g + 1) * hidden],
                           [1, 1])

        flat = e.reshape(x, (seq * batch, x.shape[2]))
        ys, hs, cs = [], [], []
        zero = e.broadcast_to(e.scalar(0, dtype), (batch, hidden))
        for d in range(dirs):
            f, g, h_act = (acts[d * per_dir:(d + 1) * per_dir] +
                           [None] * 3)[:3]
            wd = row(w, d, 0, gates * hidden)
            rd = row(r, d, 0, gates * hidden)
            proj = e.matmul(flat, wd, transpose_rhs=True)
            if bias is not None:
                wb = row(bias, d, 0, gates * hidden)
                rb = row(bias, d, gates * hidden, 2 * gates * hidden)
                # GRU's candidate keeps its recurrent bias inside the reset
                # with linear_before_reset.
                if kind == "GRU":
                    proj = e.binary("add", proj, wb)
                else:
                    proj = e.binary("add", proj, e.binary("add", wb, rb))
            proj = e.reshape(proj, (seq, batch, gates * hidden))
            h = row(init_h, d, 0, batch) if init_h is not None else zero
            c = row(init_c, d, 0, batch) if init_c is not None else zero
            outs = [None] * seq
            steps = range(seq) if direction == "forward" or \
                (direction == "bidirectional" and d == 0) else \
                range(seq - 1, -1, -1)
            for t in steps:
                xt = e.reshape(e.slice(proj, [t, 0, 0],
                                       [t + 1, batch, gates * hidden],
                                       [1, 1, 1]), (batch, gates * hidden))
                if kind == "GRU":
                    hr = e.matmul(h, e.slice(rd, [0, 0], [2 * hidden, hidden],
                                             [1, 1]), transpose_rhs=True)
                    if bias is not None:
                        hr = e.binary("add", hr, e.slice(
                            rb, [0], [2 * hidden], [1]))
                    z = f(clipped(e.binary("add", cols(xt, 0), cols(hr, 0))))
                    rg = f(clipped(e.binary("add", cols(xt, 1), cols(hr, 1))))
                    rh = e.slice(rd, [2 * hidden, 0], [3 * hidden, hidden],
                                 [1, 1])
                    rbh = e.slice(rb, [2 * hidden], [3 * hidden], [1]) \
                        if bias is not None else None
                    if before_reset:
                        lin = e.matmul(h, rh, transpose_rhs=True)
                        if rbh is not None:
                            lin = e.binary("add", lin, rbh)
                        cand = e.binary("mul", rg, lin)
                    else:
                        cand = e.matmul(e.binary("mul", rg, h), rh,
                                        transpose_rhs=True)
                        if rbh is not None:
                            cand = e.binary("add", cand, rbh)
                    n = g(clipped(e.binary("add", cols(xt, 2), cand)))
                    one = e.scalar(1, dtype)
                    new_h = e.binary("add", e.binary("mul", e.binary(
                        "sub", one, z), n), e.binary("mul", z, h))
                    new_c = None
                else:
                    pre = e.binary("add", xt,
                                   e.matmul(h, rd, transpose_rhs=True))
                    if kind == "RNN":
                        new_h, new_c = f(clipped(pre)), None
                    else:
                        def peeped(gate, k, cell):
                            v = cols(pre, gate)
                            if peep is not None:
                                p = e.slice(peep, [d, k * hidden],
                                            [d + 1, (k + 1) * hidden], [1, 1])
                                v = e.binary("add", v, e.binary("mul", p,
                                                                cell))
                            return f(clipped(v))
                        i = peeped(0, 0, c)
                        forget = e.binary("sub", e.scalar(1, dtype), i) \
                            if input_forget else peeped(2, 2, c)
                        cand = g(clipped(cols(pre, 3)))
                        new_c = e.binary("add", e.binary("mul", forget, c),
                                         e.binary("mul", i, cand))
                        o = peeped(1, 1, new_c)
                        new_h = e.binary("mul", o, h_act(new_c))
                out = new_h
                if masks is not None:
                    new_h = e.select(masks[t], new_h, h)
                    if new_c is not None:
                        new_c = e.select(masks[t], new_c, c)
                    out = e.select(masks[t], out, zero)
                h = new_h
                c = new_c if new_c is not None else c
                outs[t] = e.reshape(out, (1, 1, batch, hidden))
            ys.append(e.concat(outs, 0))
            hs.append(e.reshape(h, (1, batch, hidden)))
            if kind == "LSTM":
                cs.append(e.reshape(c, (1, batch, hidden)))
        results = [e.concat(ys, 1), e.concat(hs, 0)]
        if kind == "LSTM":
            results.append(e.concat(cs, 0))
        if layout:  # batch first: Y [batch, seq, dirs, H], states [batch, ...]
            results = [e.transpose(r, (2, 0, 1, 3) if len(r.shape) == 4
                                   else (1, 0, 2)) for r in results]
        return tuple(results)
    return handler


for _kind in ("RNN", "GRU", "LSTM"):
    _handles(_kind)(_rounds_once(_recurrent(_kind)))


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


#: The ONNX ops this importer translates (others fold only when constant).
SUPPORTED_OPS = sorted(_HANDLERS)


def _load(model):
    import onnx
    if isinstance(model, (str, os.PathLike)):
        try:
            return onnx.load(os.fspath(model))
        except Exception as e:
            raise ValueError(f"cannot read ONNX model '{os.fspath(model)}': "
                             f"{e}") from e
    return model


def import_program(model, *, parameters=None, input_shapes=None,
                   constants=None, function="main",
                   archive_name=None, placements=None) -> ImportedOnnx:
    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) \
        else None
    model = _load(model)
    if not hasattr(model, "graph"):
        raise ValueError(f"not an ONNX model: {type(model).__name__}")
    return _OnnxImporter(model, input_shapes, function, constants,
                         placements, source).run(
        os.fspath(parameters) if parameters is not None else None,
        archive_name)


def import_onnx(model, *, parameters=None, input_shapes=None, constants=None,
                function="main") -> str:
    """Returns flow-dialect text for an ONNX model (a path or ModelProto).

    Initializers above a few hundred bytes go to the safetensors file
    `parameters` (a temporary file when None). `input_shapes` fixes
    symbolic input dimensions: {"input": (1, 3, 224, 224)}; `constants`
    freezes inputs to given values ({"axes": np.array([1])}), which is how
    a shape, axes or pads input becomes known at compile time. Raises
    UnsupportedOpsError naming every op Flow cannot import.
    """
    return import_program(model, parameters=parameters,
                          input_shapes=input_shapes, constants=constants,
                          function=function).text


def _shape_arg(text: str):
    name, _, dims = text.rpartition("=")
    if not name:
        raise ValueError(f"--input-shape wants NAME=DIMS, got '{text}'")
    return name, tuple(int(d) for d in dims.split("x") if d)


def main(argv=None) -> int:
    """python -m flow.onnx_import MODEL.onnx [-o OUT.mlir]
    [--parameters W.safetensors] [--input-shape NAME=1x3x224x224]..."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(
        prog="python -m flow.onnx_import",
        description="Imports an ONNX model as flow-dialect MLIR.")
    parser.add_argument("model")
    parser.add_argument("-o", "--output", default="-")
    parser.add_argument("--parameters", help="safetensors archive to write "
                        "(default: the output with a .safetensors extension)")
    parser.add_argument("--archive-name", help="how the IR names the archive "
                        "(default: the --parameters path)")
    parser.add_argument("--input-shape", action="append", default=[],
                        type=_shape_arg, help="NAME=DxDxD for a symbolic input")
    args = parser.parse_args(argv)
    parameters = args.parameters
    if parameters is None:
        base = args.model if args.output == "-" else args.output
        parameters = os.path.splitext(base)[0] + ".safetensors"
    try:
        program = import_program(args.model, parameters=parameters,
                                 input_shapes=dict(args.input_shape),
                                 archive_name=args.archive_name)
    except (UnsupportedOpsError, FlowError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(program.text)
    else:
        with open(args.output, "w") as f:
            f.write(program.text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
