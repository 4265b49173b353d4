"""The ONNX importer itself: the model being imported (`_OnnxImporter`,
its checks of the model and the driver over its graph), element types, and
the op table the op-family modules register their handlers in
(`_HANDLERS`: ONNX op type -> handler(importer, inputs, attributes)).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._emitter import (ELEMENT_TYPES, FLOAT_TYPES, NUMPY_TO_FLOW,
                        TYPES_TEXT, Unsupported, UnsupportedOpsError, Value,
                        handler_registry, is_symbol_name, numpy_dtype)
from .._flow import FlowError
from .._importer import FOLD_BYTES, GraphImporter, Poison

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


def _check_onnx_dynamic(dynamic) -> Dict[str, Tuple[int, int]]:
    """dynamic= for an ONNX model: {dim_param name: (min, max)}."""
    if dynamic is None:
        return {}
    if not isinstance(dynamic, dict):
        raise ValueError("dynamic= for an ONNX model is a dict {dim_param "
                         "name: (min, max)}, got "
                         f"{type(dynamic).__name__}")
    for name, bounds in dynamic.items():
        if not is_symbol_name(name):
            raise ValueError(f"dynamic= key {name!r} cannot name a size "
                             "symbol: a letter or '_', then letters, digits "
                             "or '_' (fix such a dimension with "
                             "input_shapes=)")
        if not (isinstance(bounds, tuple) and len(bounds) == 2 and
                all(isinstance(b, int) and not isinstance(b, bool)
                    for b in bounds) and 1 <= bounds[0] <= bounds[1]):
            raise ValueError(f"dynamic[{name!r}] is (min, max) with "
                             f"1 <= min <= max, got {bounds!r}")
    return dict(dynamic)


class _OnnxImporter(GraphImporter):
    frontend = "ONNX"

    def __init__(self, model, input_shapes, function, constants=None,
                 placements=None, source=None, dynamic=None):
        super().__init__(function, placements=placements)
        #: Bounds of the dim_param names kept as size symbols.
        self.dynamic = _check_onnx_dynamic(dynamic)
        #: The symbols the inputs use, in order of first use.
        self.used_symbols: Dict[str, Tuple[int, int]] = {}
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
                    elif d.dim_param in self.dynamic:
                        shape.append(d.dim_param)
                        self.used_symbols[d.dim_param] = \
                            self.dynamic[d.dim_param]
                    else:
                        raise ValueError(
                            f"ONNX input '{inp.name}' has the symbolic "
                            f"dimension '{d.dim_param or '?'}': pass "
                            f"input_shapes={{'{inp.name}': (...)}}, or "
                            "keep it symbolic with its bounds in "
                            f"dynamic={{'{d.dim_param or '?'}': (min, max)}}")
            self.check_shape(f"input '{inp.name}'", shape,
                             numpy_dtype(dtype).itemsize)
            self.e.locate(name=inp.name)
            self.env[inp.name] = self.e.argument(shape, dtype)
            inputs.append(inp.name)

        params = {d.dim_param for i in self.graph.input
                  for d in i.type.tensor_type.shape.dim
                  if not d.HasField("dim_value") and d.dim_param}
        unknown = sorted(set(self.dynamic) - params)
        if unknown:
            raise ValueError(f"dynamic= names {unknown}, which no input of "
                             "the model has as a dimension; its symbolic "
                             f"dimensions are {sorted(params)}")
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
        if self.used_symbols:
            self.e.function_attribute(
                "flow.dims", "[" + ", ".join(
                    f'#flow.dim<"{n}", {lo}, {hi}>'
                    for n, (lo, hi) in self.used_symbols.items()) + "]")
        text, archive = self.finish(results, archive, archive_name, inputs)
        return ImportedOnnx(text, archive, inputs, names)

    def has_symbols(self) -> bool:
        return bool(self.used_symbols)

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


def _float_input(self, x) -> Value:
    """The value of `x`, which must be of a float type."""
    v = self.value(x)
    if v.dtype not in FLOAT_TYPES:
        raise Unsupported(f"{v.dtype} input")
    return v
