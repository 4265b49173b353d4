"""Importing PyTorch programs: torch.export, core-ATen decompositions (unless
Flow imports every op as exported), then flow-dialect text.

    text = flow.import_torch(model, (x,), parameters="model.safetensors")

The module is exported in eval mode and, when some op needs it, decomposed
to core ATen (the decompositions retrace the program; a program whose ops
all have handlers is imported as exported, its in-place ops as their
functional twins when they write only over results that nothing reads
afterwards, its batch norms folded into the convolutions before them). Every
node whose inputs are all known at import time (weights, buffers, literals,
`arange`, masks built from them) is computed here with PyTorch itself and
becomes a constant; the rest is translated op by op. Weights larger than
`_emitter.INLINE_BYTES` go to the safetensors archive as `flow.parameter`s.
Ops Flow cannot import are all reported together, each with its node and
the Python source line that produced it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._emitter import (ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, TYPES_TEXT,
                       Unsupported, UnsupportedOpsError, Value,
                       handler_registry, i64, numpy_dtype)
from ._importer import FOLD_BYTES, GraphImporter, Poison

__all__ = ["import_torch", "ImportedProgram", "UnsupportedOpsError"]

@dataclasses.dataclass
class ImportedProgram:
    """The result of an import: flow text plus what flow.compile needs to
    call the executable like the model."""
    text: str
    #: Safetensors archive the text names ("" when there are no parameters).
    archive: str
    #: Positions (in the flattened (args, kwargs) leaves) of the tensors the
    #: function takes, in order.
    input_leaves: List[int]
    #: Pytree spec of the model's output, and for each output leaf either
    #: ("result", i) or ("constant", value).
    out_spec: Any
    output_leaves: List[Tuple[str, Any]]
    in_spec: Any = None
    #: The function's arguments, by the model's input names.
    input_names: List[str] = dataclasses.field(default_factory=list)
    #: The model's run-time assertions (torch's `_assert_async`): the
    #: function returns each condition as an extra bool result after the
    #: model's own, (result index, message) here; a call checks them.
    assertions: List[Tuple[int, str]] = dataclasses.field(
        default_factory=list)
    #: A training step's parameters: (argument index, state name) of each,
    #: in argument order, and their first values.
    state_arguments: List[Tuple[int, str]] = dataclasses.field(
        default_factory=list)
    initial_state: Dict[str, Any] = dataclasses.field(default_factory=dict)


# ---------------------------------------------------------------------------
# dtype helpers
# ---------------------------------------------------------------------------

def _flow_dtype(dtype) -> str:
    table = _torch_types()
    if dtype not in table:
        raise Unsupported(f"element type {dtype} (Flow computes in "
                          f"{TYPES_TEXT})")
    return table[dtype]


@functools.lru_cache(maxsize=None)
def _torch_types():
    """torch dtype -> flow element type, for the types this torch has."""
    import torch
    return {getattr(torch, name): flow
            for flow, (name, _) in ELEMENT_TYPES.items()
            if hasattr(torch, name)}


def _torch_dtype(flow_type: str):
    return {v: k for k, v in _torch_types().items()}[flow_type]


def _to_numpy(t) -> np.ndarray:
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _source_line(node) -> Tuple[Optional[str], Optional[int], str]:
    """(file, line, "file:line: code") of the user code behind `node`."""
    trace = node.meta.get("stack_trace") or ""
    matches = re.findall(r'File "([^"]+)", line (\d+), in [^\n]*\n\s*([^\n]*)',
                         trace)
    if not matches:
        return None, None, ""
    # The innermost frame outside PyTorch itself is the model's own code.
    torch_dir = os.path.dirname(os.path.dirname(os.path.abspath(
        __import__("torch").__file__)))
    user = [m for m in matches
            if not os.path.abspath(m[0]).startswith(
                os.path.join(torch_dir, "torch") + os.sep)]
    file, line, code = (user or matches)[-1]
    return file, int(line), f"{file}:{line}: {code.strip()}"


def _is_int_dtype(dtype: str) -> bool:
    return dtype in INT_TYPES


# ---------------------------------------------------------------------------
# The importer
# ---------------------------------------------------------------------------

class _TorchImporter(GraphImporter):
    frontend = "PyTorch"

    def __init__(self, ep, function: str, shared=None, placements=None,
                 training=None):
        super().__init__(function, shared, placements)
        self.handlers = _HANDLERS
        self.never_fold = _NEVER_FOLD
        self.ep = ep
        self.assertions: List[Tuple[Value, str]] = []
        #: (state name by parameter target, flow.optimizer text): the
        #: parameters become arguments a training step differentiates.
        self.training = training
        #: The training step's random-number state (rng.seed, rng.offset
        #: arguments), made by the first random op; each op a stream.
        self.rng: Optional[Tuple[Value, Value]] = None
        self.random_streams = 0
        #: Each argument's name (a user input's, or a state's), and the
        #: argument of each user input.
        self.argument_names: List[Optional[str]] = []
        self.input_arguments: List[int] = []

    def state_argument(self, name: str, shape, dtype: str,
                       attributes=()) -> Value:
        """A new argument holding the training step's state `name` (its
        next value is the result of the same `flow.state`), with further
        (attribute, text) pairs."""
        v = self.e.argument(tuple(shape), dtype)
        index = len(self.e.arguments) - 1
        self.argument_names.append(name)
        for attribute, text in (("flow.state", json.dumps(name)),
                                *attributes):
            self.e.argument_attribute(index, attribute, text)
        return v

    # Randomness -----------------------------------------------------------
    def random_uniform(self, shape) -> Value:
        """f32 numbers uniform in [0, 1) of `shape`, drawn from the training
        step's counter-based random state: a new stream of (rng.seed,
        rng.offset), the offset advancing once per step."""
        if not self.training:
            raise Unsupported(
                "random numbers (dropout in training mode) outside a "
                "training step: export the model in eval mode, or compile "
                "it with flow.compile_train")
        if self.rng is None:
            self.e.locate(name="rng")
            zeros = [("flow.state_init", '"zeros"')]
            self.rng = (self.state_argument("rng.seed", (), "i64", zeros),
                        self.state_argument("rng.offset", (), "i64", zeros))
            file, line, _ = _source_line(self.node)
            self.e.locate(file, line, self.node.name)
        stream = self.random_streams
        self.random_streams += 1
        return self.e.op("flow.random_uniform", list(self.rng),
                         {"stream": i64(stream)}, result=(shape, "f32"))

    # Values -------------------------------------------------------------
    def meta(self, node=None):
        node = node or self.node
        return node.meta.get("val")

    def out_dtype(self) -> str:
        return _flow_dtype(self.meta().dtype)

    def out_shape(self) -> Tuple[int, ...]:
        shape = self.meta().shape
        if not all(type(d) is int for d in shape):
            raise Unsupported("dynamic shapes (Flow compiles static shapes; "
                              "export without dynamic_shapes)")
        return tuple(shape)

    def to_array(self, x) -> Optional[np.ndarray]:
        import torch
        if isinstance(x, torch.Tensor):
            return _to_numpy(x)
        return super().to_array(x)

    # Driver ---------------------------------------------------------------
    def run(self, archive: Optional[str]) -> ImportedProgram:
        import torch
        ep = self.ep
        sig = ep.graph_signature
        state = dict(ep.state_dict)
        constants = dict(getattr(ep, "constants", {}) or {})
        user_index = 0
        input_leaves = []
        input_names = []
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        trainable = self.training[0] if self.training else {}
        # Buffers a training step updates (batch norm's running statistics)
        # are state too, without gradients.
        mutated = (set(sig.buffers_to_mutate.values()) if self.training
                   else set())
        state_arguments, initial_state, state_nodes = [], {}, {}
        for node, spec in zip(placeholders, sig.input_specs):
            kind = spec.kind.name
            if kind == "PARAMETER" and spec.target in trainable:
                # A trained parameter: an argument whose next value the
                # training step returns (flow-autodiff, flow-apply-optimizer).
                name = trainable[spec.target]
                if name in initial_state:  # a tied parameter: one argument
                    self.env[node] = self.env[state_nodes[name]]
                    continue
                tensor = state[spec.target].detach()
                state_nodes[name] = node
                self.e.locate(name=name)
                self.env[node] = self.state_argument(
                    name, tensor.shape, _flow_dtype(tensor.dtype),
                    [("flow.requires_grad", "unit")])
                state_arguments.append((len(self.e.arguments) - 1, name))
                initial_state[name] = tensor
                continue
            if kind == "USER_INPUT":
                position = user_index
                user_index += 1
                val = node.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    self.env[node] = val
                    continue
                self.node = node
                self.e.locate(name=spec.arg.name)
                try:
                    v = self.e.argument(self.out_shape(),
                                        _flow_dtype(val.dtype))
                except Unsupported as u:
                    self.record(node, str(u))
                    self.env[node] = Poison()
                    continue
                self.env[node] = v
                input_leaves.append(position)
                input_names.append(spec.arg.name)
                self.argument_names.append(spec.arg.name)
                self.input_arguments.append(len(self.e.arguments) - 1)
            elif kind == "BUFFER" and spec.target in mutated:
                tensor = state[spec.target].detach()
                name = _state_name(spec.target)
                self.e.locate(name=name)
                self.env[node] = self.state_argument(
                    name, tensor.shape, _flow_dtype(tensor.dtype))
                initial_state[name] = tensor
            elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                tensor = state.get(spec.target)
                if tensor is None:
                    tensor = constants.get(spec.target)
                if tensor is None:
                    raise ValueError(f"exported program has no value for "
                                     f"'{spec.target}'")
                tensor = tensor.detach()
                self.env[node] = tensor
                self.names[id(tensor)] = spec.target
            else:
                raise UnsupportedOpsError(
                    [(f"input of kind {kind}", node.name, "", "")], "PyTorch")

        for node in ep.graph.nodes:
            if node.op != "call_function":
                continue
            self.node = node
            file, line, _ = _source_line(node)
            self.e.locate(file, line, node.name)
            self.env[node] = self.visit(node)

        output = next(n for n in ep.graph.nodes if n.op == "output")
        outs = output.args[0]
        results: List[Value] = []
        output_leaves: List[Tuple[str, Any]] = []
        mutations: List[Tuple[str, Any]] = []
        self.e.locate()
        for out, spec in zip(outs, sig.output_specs):
            if spec.kind.name == "BUFFER_MUTATION" and \
                    spec.target in mutated:
                mutations.append((_state_name(spec.target), out))
                continue
            if spec.kind.name != "USER_OUTPUT":
                continue
            if not isinstance(out, torch.fx.Node):
                output_leaves.append(("constant", out))
                continue
            value = self.env.get(out)
            if isinstance(value, Poison):
                continue
            if isinstance(value, (Value, torch.Tensor)):
                v = self.result(value, out)
                if v is not None:
                    output_leaves.append(("result", len(results)))
                    results.append(v)
            else:
                output_leaves.append(("constant", value))
        assertions = []
        if not self.unsupported:
            for condition, message in self.assertions:
                assertions.append((len(results), message))
                results.append(condition)
        for name, out in mutations:
            # A buffer's next value, written over it by the step.
            value = self.result(self.env.get(out), out)
            if value is not None:
                self.e.result_attribute(len(results), "flow.state",
                                        json.dumps(name))
                results.append(value)
        if self.rng is not None:
            # Every step draws new numbers: the offset advances by one.
            seed, offset = self.rng
            self.e.result_attribute(len(results), "flow.state",
                                    json.dumps("rng.offset"))
            results.append(self.e.binary("add", offset,
                                         self.e.scalar(1, "i64")))
            initial_state["rng.seed"] = np.array(0, np.int64)
            initial_state["rng.offset"] = np.array(0, np.int64)
        if self.training:
            self.e.function_attribute("flow.optimizer", self.training[1])
            recompute = self.training[2] if len(self.training) > 2 else ()
            if recompute:
                self.e.function_attribute(
                    "flow.recompute",
                    "[" + ", ".join(json.dumps(n) for n in recompute) + "]")
        text, archive = self.finish(results, archive,
                                    input_names=self.argument_names,
                                    input_positions=self.input_arguments)
        out_spec = ep.call_spec.out_spec if ep.call_spec else None
        in_spec = ep.call_spec.in_spec if ep.call_spec else None
        return ImportedProgram(text, archive, input_leaves, out_spec,
                               output_leaves, in_spec, input_names,
                               assertions, state_arguments, initial_state)

    def record(self, node, reason: str):
        _, _, source = _source_line(node)
        self.unsupported.append((str(node.target), node.name, source, reason))

    def visit(self, node):
        import torch
        args = torch.fx.node.map_arg(node.args, lambda n: self.env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: self.env[n])
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        return self.dispatch(
            node, _op_key(node.target), leaves,
            fold=lambda: self.fold(node, args, kwargs),
            call=lambda handler: self.checked(handler(self, *args, **kwargs)),
            poison=Poison)

    def checked(self, out):
        """A handler's result, checked against the shapes torch.export
        recorded for the node: an importer that computes a different shape
        than the model would be a wrong answer, so it is a refusal."""
        import torch
        meta = self.meta()
        pairs = (zip(out, meta) if isinstance(out, (tuple, list)) and
                 isinstance(meta, (tuple, list)) else [(out, meta)])
        for v, m in pairs:
            if isinstance(v, Value) and isinstance(m, torch.Tensor) and \
                    all(type(d) is int for d in m.shape) and \
                    v.shape != tuple(m.shape):
                raise Unsupported(f"Flow's result has shape {list(v.shape)}, "
                                  f"the exported program's {list(m.shape)}")
            if isinstance(v, Value) and isinstance(m, torch.Tensor) and \
                    m.dtype in _torch_types() and \
                    v.dtype != _torch_types()[m.dtype]:
                raise Unsupported(f"Flow's result is {v.dtype}, the exported "
                                  f"program's {m.dtype}")
        return out

    def fold(self, node, args, kwargs):
        import torch
        val = node.meta.get("val")
        vals = val if isinstance(val, (tuple, list)) else [val]
        size = 0
        for v in vals:
            if isinstance(v, torch.Tensor):
                try:
                    size += int(v.numel()) * v.element_size()
                except TypeError:
                    return None
        if size > FOLD_BYTES:
            return None
        target = node.target
        if target is operator.getitem:
            return args[0][args[1]]
        # A weight placed by name (sbp=) keeps its placement: a permutation
        # of it folds into a weight placed alike (a split follows its
        # dimension); anything else is computed in the program, from the
        # placed weight.
        placed = next((self.names[id(x)] for x in
                       torch.utils._pytree.tree_leaves((args, kwargs))
                       if isinstance(x, torch.Tensor) and id(x) in self.names
                       and self._parameter_sbp_of(self.names[id(x)])
                       is not None), None)
        permutation = _permutation(target, args) if placed else None
        if placed and permutation is None:
            return None
        try:
            with torch.no_grad():
                result = target(*args, **kwargs)
        except Exception:  # not computable here: translate it instead
            return None
        # Name folded weights after the weight they came from.
        source = next((self.names[id(x)] for x in
                       torch.utils._pytree.tree_leaves((args, kwargs))
                       if isinstance(x, torch.Tensor) and id(x) in self.names),
                      None)
        op = getattr(target, "__name__", "fold").split(".")[0]
        for i, r in enumerate(torch.utils._pytree.tree_leaves(result)):
            if isinstance(r, torch.Tensor) and id(r) not in self.names:
                base = f"{source}.{op}" if source else f"folded.{node.name}"
                self.names[id(r)] = base if i == 0 else f"{base}.{i}"
        if placed:
            self.place_like(placed, self.names[id(result)], permutation)
        return result


def _permutation(target, args) -> Optional[List[int]]:
    """The dimension order of a permuting op (result dimension i is input
    dimension p[i]); None for any other op."""
    name = str(target)
    rank = args[0].dim() if hasattr(args[0], "dim") else None
    if rank is None:
        return None
    if name in ("aten.permute.default", "aten.permute_copy.default"):
        return [int(d) % rank for d in args[1]]
    if name in ("aten.t.default", "aten.t_copy.default") and rank == 2:
        return [1, 0]
    if name in ("aten.transpose.int", "aten.transpose_copy.int"):
        p = list(range(rank))
        a, b = int(args[1]) % rank, int(args[2]) % rank
        p[a], p[b] = p[b], p[a]
        return p
    return None


def _op_key(target) -> str:
    if target is operator.getitem:
        return "getitem"
    return str(target)


# Ops whose results must not be computed at import time.
_NEVER_FOLD = {"aten._assert_tensor_metadata.default",
               "aten._assert_async.msg", "aten._assert_async.default",
               "aten._assert_scalar.default",
               "aten.sym_constrain_range_for_size.default",
               # Random ops draw anew each call: never a constant.
               "aten.dropout.default", "aten.native_dropout.default",
               "aten.feature_dropout.default",
               "aten.scaled_dot_product_attention.default",
               "aten.rand.default", "aten.randn.default",
               "aten.rand_like.default", "aten.randn_like.default",
               "aten.randint.default", "aten.randint.low",
               "aten.randint_like.default", "aten.randperm.default",
               "aten.bernoulli.default", "aten.bernoulli.p",
               "aten.normal.Tensor_float", "aten.normal.float_Tensor",
               "aten.normal.Tensor_Tensor", "aten.normal.float_float",
               "aten.uniform.default", "aten.multinomial.default"}


# ---------------------------------------------------------------------------
# Op handlers: (importer, *args, **kwargs) -> Value | tuple | None
# ---------------------------------------------------------------------------

_HANDLERS, _handles = handler_registry()


def _norm_dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def _promoted(self: _TorchImporter, *xs) -> str:
    """The dtype PyTorch computes `xs` in (for comparisons)."""
    import torch
    metas = []
    for x in xs:
        if isinstance(x, Value):
            metas.append(torch.empty(x.shape, dtype=_torch_dtype(x.dtype),
                                     device="meta"))
        elif isinstance(x, torch.Tensor):
            metas.append(torch.empty(x.shape, dtype=x.dtype, device="meta"))
        else:
            metas.append(x)
    if len(metas) == 1:
        return _flow_dtype(metas[0].dtype)
    return _flow_dtype(torch.result_type(metas[0], metas[1]))


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
        x = self.value(a, dtype)
        n = int(b)
        if n == 0:
            return self.e.broadcast_to(self.e.scalar(1, dtype), x.shape)
        result = x
        for _ in range(abs(n) - 1):
            result = self.e.binary("mul", result, x)
        if n < 0:
            result = self.e.binary("div", self.e.scalar(1, dtype), result)
        return result
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
    return self.e.compare("eq", v, self.e.scalar(False, "i1"))


@_handles("aten.logical_and.default", "aten.bitwise_and.Tensor")
def _and(self, a, b):
    av, bv = self.value(a, "i1"), self.value(b, "i1")
    if self.out_dtype() != "i1":
        raise Unsupported("bitwise and of integer tensors")
    shape = np.broadcast_shapes(av.shape, bv.shape)
    return self.e.select(self.e.broadcast_to(av, shape), bv,
                         self.e.scalar(False, "i1"))


@_handles("aten.logical_or.default", "aten.bitwise_or.Tensor")
def _or(self, a, b):
    av, bv = self.value(a, "i1"), self.value(b, "i1")
    if self.out_dtype() != "i1":
        raise Unsupported("bitwise or of integer tensors")
    shape = np.broadcast_shapes(av.shape, bv.shape)
    return self.e.select(self.e.broadcast_to(av, shape),
                         self.e.scalar(True, "i1"), bv)


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
    dtype = self.out_dtype()
    return self.e.binary("div", self.e.scalar(1, dtype), self.value(x, dtype))


@_handles("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(self, x, hi):
    return _clamp(self, x, None, hi)


@_handles("aten.clamp.default", "aten.clamp.Tensor", "aten.clamp_min.default",
          "aten.clamp_min.Tensor")
def _clamp(self, x, lo=None, hi=None):
    dtype = self.out_dtype()
    v = self.value(x, dtype)
    if lo is not None:
        v = self.e.binary("maximum", v, self.value(lo, dtype))
    if hi is not None:
        v = self.e.binary("minimum", v, self.value(hi, dtype))
    return v


@_handles("aten.hardtanh.default")
def _hardtanh(self, x, lo=-1.0, hi=1.0):
    return _clamp(self, x, lo, hi)


@_handles("aten.relu6.default")
def _relu6(self, x):
    return _clamp(self, x, 0.0, 6.0)


# Layout -------------------------------------------------------------------

@_handles("aten.view.default", "aten._unsafe_view.default",
          "aten.reshape.default", "aten.unsqueeze.default",
          "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
          "aten.flatten.using_ints", "aten.view_copy.default",
          "aten.unflatten.int")
def _reshape(self, x, *_, **__):
    return self.e.reshape(self.value(x), self.out_shape())


@_handles("aten.as_strided.default", "aten.as_strided_copy.default")
def _as_strided(self, x, size, stride, storage_offset=None):
    """A strided view that reads the input in row-major order is a reshape
    (decompositions write these for size-1 dimensions); others are not
    supported."""
    source = self.node.args[0]
    val = source.meta.get("val") if hasattr(source, "meta") else None
    contiguous = val is None or val.is_contiguous()
    expected, step = [], 1
    for d in reversed(list(size)):
        expected.append(step)
        step *= int(d)
    expected.reverse()
    matches = all(int(n) == 1 or int(s) == e
                  for n, s, e in zip(size, stride, expected))
    if not contiguous or (storage_offset or 0) != 0 or not matches:
        raise Unsupported("a strided view that is not a reshape")
    return self.e.reshape(self.value(x), self.out_shape())


@_handles("aten.permute.default", "aten.permute_copy.default")
def _permute(self, x, dims):
    v = self.value(x)
    return self.e.transpose(v, [_norm_dim(d, len(v.shape)) for d in dims])


@_handles("aten.t.default", "aten.transpose.int")
def _transpose(self, x, d0=0, d1=1):
    v = self.value(x)
    rank = len(v.shape)
    if rank < 2:
        return v
    perm = list(range(rank))
    d0, d1 = _norm_dim(d0, rank), _norm_dim(d1, rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return self.e.transpose(v, perm)


@_handles("aten.expand.default", "aten.expand_copy.default")
def _expand(self, x, *_, **__):
    return self.e.broadcast_to(self.value(x), self.out_shape())


@_handles("aten.clone.default", "aten.alias.default", "aten.detach.default",
          "aten.lift_fresh_copy.default", "aten.contiguous.default",
          "aten.alias_copy.default")
def _identity(self, x, *_, **__):
    return self.value(x)


def _state_name(target: str) -> str:
    """A buffer's state name: its name in the trained model (training steps
    export the model as the `model` attribute of a loss module)."""
    return target[len("model."):] if target.startswith("model.") else target


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
          "aten._to_dtype.default")
def _to_copy(self, x, *_, **__):
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


@_handles("aten.cat.default", "aten.concat.default")
def _cat(self, tensors, dim=0):
    dtype = self.out_dtype()
    shape = self.out_shape()
    values = [self.value(t, dtype) for t in tensors]
    values = [v for v in values if not (len(v.shape) == 1 and v.shape[0] == 0
                                        and len(shape) != 1)]
    if len(values) == 1:
        return values[0]
    return self.e.concat(values, _norm_dim(dim, len(shape)))


def _slice_bounds(size, start, end, step):
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, step


@_handles("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(self, x, dim=0, start=None, end=None, step=1):
    v = self.value(x)
    rank = len(v.shape)
    dim = _norm_dim(dim, rank)
    s, e, st = _slice_bounds(v.shape[dim], start, end, step)
    starts = [0] * rank
    limits = list(v.shape)
    strides = [1] * rank
    starts[dim], limits[dim], strides[dim] = s, e, st
    return self.e.slice(v, starts, limits, strides)


@_handles("aten.flip.default")
def _flip(self, x, dims):
    v = self.value(x)
    rank = len(v.shape)
    return self.e.reverse(v, [_norm_dim(d, rank) for d in dims])


@_handles("aten.select.int", "aten.select_copy.int")
def _select(self, x, dim, index):
    v = self.value(x)
    rank = len(v.shape)
    dim = _norm_dim(dim, rank)
    index = index + v.shape[dim] if index < 0 else index
    starts = [0] * rank
    limits = list(v.shape)
    starts[dim], limits[dim] = index, index + 1
    return self.e.reshape(self.e.slice(v, starts, limits, [1] * rank),
                          self.out_shape())


@_handles("aten.split_with_sizes.default", "aten.split.Tensor",
          "aten.split_with_sizes_copy.default", "aten.split_copy.Tensor")
def _split(self, x, sizes, dim=0):
    v = self.value(x)
    rank = len(v.shape)
    dim = _norm_dim(dim, rank)
    total = v.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    out, offset = [], 0
    for size in sizes:
        starts = [0] * rank
        limits = list(v.shape)
        starts[dim], limits[dim] = offset, offset + size
        out.append(self.e.slice(v, starts, limits, [1] * rank))
        offset += size
    return tuple(out)


@_handles("getitem")
def _getitem(self, seq, index):
    if not isinstance(seq, (tuple, list)):
        raise Unsupported("indexing a non-sequence value")
    item = seq[index]
    if item is None:
        raise Unsupported(f"result {index} of this op is not computed by Flow")
    return item


def _gather(self, table, indices, axis):
    t = self.value(table)
    i = self.value(indices)
    if i.dtype not in ("i64", "i32"):
        raise Unsupported(f"indices of type {i.dtype}")
    return self.e.gather(t, i, axis)


@_handles("aten.embedding.default")
def _embedding(self, weight, indices, *_, **__):
    return _gather(self, weight, indices, 0)


@_handles("aten.index_select.default")
def _index_select(self, x, dim, index):
    return _gather(self, x, index, _norm_dim(dim, len(self.value(x).shape)))


@_handles("aten.gather.default")
def _gather_elements(self, x, dim, index, sparse_grad=False):
    v, i = self.value(x), self.value(index)
    if i.dtype not in ("i64", "i32"):
        raise Unsupported(f"indices of type {i.dtype}")
    if not v.shape:
        raise Unsupported("gather from a 0-d tensor")
    return self.e.gather_elements(v, i, _norm_dim(dim, len(v.shape)))


@_handles("aten.index.Tensor")
def _index(self, x, indices):
    """x[i0, i1, ...] with index tensors (None for a full slice): the
    indexed dimensions are flattened into one and gathered with the
    linearized index."""
    used = [(d, t) for d, t in enumerate(indices) if t is not None]
    if len(used) == 1:
        return _gather(self, x, used[0][1], used[0][0])
    v = self.value(x)
    rank = len(v.shape)
    dims = [d for d, _ in used]
    index_values = [self.value(t) for _, t in used]
    if any(i.dtype not in ("i64", "i32") for i in index_values):
        raise Unsupported("boolean-mask indexing (its result shape depends "
                          "on the data)")
    if dims == list(range(dims[0], dims[0] + len(dims))):
        axis = dims[0]
    else:  # non-adjacent: PyTorch puts the indexed dimensions first
        rest = [d for d in range(rank) if d not in dims]
        v = self.e.transpose(v, dims + rest)
        dims, axis = list(range(len(dims))), 0
    sizes = [v.shape[d] for d in dims]
    flat = v.shape[:axis] + (int(np.prod(sizes)),) + v.shape[axis + len(dims):]
    v = self.e.reshape(v, flat)
    linear = None
    stride = 1
    for size, i in reversed(list(zip(sizes, index_values))):
        i = self.e.wrap_negative(self.e.cast(i, "i64"), size)
        term = i if stride == 1 else self.e.binary(
            "mul", i, self.e.scalar(stride, "i64"))
        linear = term if linear is None else self.e.binary("add", linear, term)
        stride *= size
    return self.e.gather(v, linear, axis)


# Scatters -----------------------------------------------------------------

def _put(self, v: Value, indices, values, accumulate=False) -> Value:
    """v[indices] = values (or += with `accumulate`), PyTorch's advanced
    indexing: `indices` per leading dimension, None for a whole one; the
    index tensors broadcast together."""
    rank = len(v.shape)
    used = [(d, self.value(t)) for d, t in enumerate(indices)
            if t is not None]
    if not used:
        raise Unsupported("index_put without an index tensor")
    if any(i.dtype == "i1" for _, i in used):
        return _masked_put(self, v, used, values, accumulate)
    if any(i.dtype not in INT_TYPES for _, i in used):
        raise Unsupported("index tensors of type "
                          f"{[i.dtype for _, i in used]}")
    dims = [d for d, _ in used]
    rest = [d for d in range(rank) if d not in dims]
    bshape = tuple(np.broadcast_shapes(*[i.shape for _, i in used]))
    # The shape of v[indices], which `values` broadcasts to: the index
    # dimensions in place when the indexed dimensions are adjacent, first
    # otherwise.
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    pre = [d for d in rest if adjacent and d < dims[0]]
    post = [d for d in rest if d not in pre]
    indexed = tuple(v.shape[d] for d in pre) + bshape + \
        tuple(v.shape[d] for d in post)
    u = self.e.broadcast_to(self.value(values, v.dtype), indexed)
    # As scatter_nd takes them: index dimensions first, then v's others.
    nb = len(bshape)
    u = self.e.transpose(u, list(range(len(pre), len(pre) + nb)) +
                         list(range(len(pre))) +
                         list(range(len(pre) + nb, len(indexed))))
    perm = dims + pre + post
    vt = self.e.transpose(v, perm)
    columns = [self.e.reshape(self.e.broadcast_to(self.e.wrap_negative(
        self.e.cast(i, "i64"), v.shape[d]), bshape), bshape + (1,))
        for d, i in used]
    out = self.e.scatter_nd(vt, self.e.concat(columns, nb), u,
                            "add" if accumulate else "none")
    return self.e.transpose(out, list(np.argsort(perm)))


def _masked_put(self, v: Value, used, values, accumulate) -> Value:
    """x[mask] = value (or += with `accumulate`): with one value for every
    masked position, a select over the positions the mask covers. A tensor
    of values, one per True, has a data-dependent layout and is refused."""
    if len(used) != 1:
        raise Unsupported("a boolean mask together with other indices")
    d, mask = used[0]
    u = self.value(values, v.dtype)
    if int(np.prod(u.shape)) != 1:
        raise Unsupported("boolean-mask assignment of one value per True "
                          "(the positions depend on the data); a single "
                          "value is supported")
    rank = len(v.shape)
    mask = self.e.reshape(mask, (1,) * d + mask.shape +
                          (1,) * (rank - d - len(mask.shape)))
    u = self.e.reshape(u, ())
    new = self.e.binary("add", v, u) if accumulate else \
        self.e.broadcast_to(u, v.shape)
    return self.e.select(mask, new, v)


@_handles("aten.index_put.default")
def _index_put(self, x, indices, values, accumulate=False):
    return _put(self, self.value(x), indices, values, accumulate)


@_handles("aten.index_copy.default", "aten.index_add.default")
def _index_copy(self, x, dim, index, source, alpha=1):
    v = self.value(x)
    d = _norm_dim(dim, max(len(v.shape), 1))
    add = "index_add" in str(self.node.target)
    s = self.value(source, v.dtype)
    if add and alpha != 1:
        s = self.e.binary("mul", s, self.e.scalar(alpha, v.dtype))
    return _put(self, v, [None] * d + [index], s, accumulate=add)


@_handles("aten.copy.default")
def _copy(self, x, src, non_blocking=False):
    """x's shape and type with src's values (functionalized `x[...] = src`
    copies into a slice, then scatters the slice back)."""
    v = self.value(x)
    return self.e.broadcast_to(self.value(src, v.dtype), v.shape)


@_handles("aten.slice_scatter.default")
def _slice_scatter(self, x, src, dim=0, start=None, end=None, step=1):
    v = self.value(x)
    d = _norm_dim(dim, len(v.shape))
    positions = np.arange(v.shape[d])[slice(start, end, step)]
    return _put(self, v, [None] * d + [self.e.constant(positions)], src)


@_handles("aten.select_scatter.default")
def _select_scatter(self, x, src, dim, index):
    v = self.value(x)
    d = _norm_dim(dim, len(v.shape))
    s = self.value(src, v.dtype)
    s = self.e.reshape(s, s.shape[:d] + (1,) + s.shape[d:])
    at = self.e.constant(np.array([_norm_dim(index, v.shape[d])], np.int64))
    return _put(self, v, [None] * d + [at], s)


_SCATTER_REDUCE = {"sum": "add", "add": "add", "prod": "mul",
                   "multiply": "mul", "amax": "max", "amin": "min"}


@_handles("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
          "aten.scatter.value_reduce", "aten.scatter_add.default")
def _scatter(self, x, dim, index, src, reduce=None):
    v, i = self.value(x), self.value(index)
    if not v.shape:
        raise Unsupported("scatter into a 0-d tensor")
    if i.dtype not in INT_TYPES:
        raise Unsupported(f"indices of type {i.dtype}")
    d = _norm_dim(dim, len(v.shape))
    kind = "add" if "scatter_add" in str(self.node.target) else \
        _SCATTER_REDUCE[reduce] if reduce else "none"
    u = self.value(src, v.dtype)
    if not u.shape:  # a scalar value
        u = self.e.broadcast_to(u, i.shape)
    return self.e.scatter_elements(
        v, self.e.wrap_negative(i, v.shape[d]), u, d, kind)


@_handles("aten.scatter_reduce.two")
def _scatter_reduce(self, x, dim, index, src, reduce, include_self=True):
    v, i = self.value(x), self.value(index)
    if i.dtype not in INT_TYPES:
        raise Unsupported(f"indices of type {i.dtype}")
    d = _norm_dim(dim, max(len(v.shape), 1))
    i = self.e.wrap_negative(i, v.shape[d])
    u = self.value(src, v.dtype)
    if reduce == "mean":
        if v.dtype not in FLOAT_TYPES:
            raise Unsupported(f"scatter mean of {v.dtype}")
        # (v + sum of updates) / (1 + count), or without v: sum / count
        # where anything landed.
        zeros = self.e.broadcast_to(self.e.scalar(0, v.dtype), v.shape)
        ones = self.e.broadcast_to(self.e.scalar(1, v.dtype), i.shape)
        count = self.e.scatter_elements(zeros, i, ones, d, "add")
        base = v if include_self else self.e.scatter_elements(
            v, i, self.e.broadcast_to(self.e.scalar(0, v.dtype), i.shape), d)
        total = self.e.scatter_elements(base, i, u, d, "add")
        if include_self:
            count = self.e.binary("add", count, self.e.scalar(1, v.dtype))
        hit = self.e.compare("gt", count, self.e.scalar(0, v.dtype))
        return self.e.select(hit, self.e.binary("div", total, count), v)
    if reduce not in _SCATTER_REDUCE:
        raise Unsupported(f"scatter reduction '{reduce}'")
    kind = _SCATTER_REDUCE[reduce]
    if not include_self:
        # Where an update lands, start from the reduction's identity.
        if kind == "add":
            identity = 0
        elif kind == "mul":
            identity = 1
        elif v.dtype in FLOAT_TYPES:
            identity = -np.inf if kind == "max" else np.inf
        else:
            info = np.iinfo(numpy_dtype(v.dtype))
            identity = info.min if kind == "max" else info.max
        v = self.e.scatter_elements(v, i, self.e.broadcast_to(
            self.e.scalar(identity, v.dtype), i.shape), d)
    return self.e.scatter_elements(v, i, u, d, kind)


def _torch_pads(rank, pad):
    """torch's pad list (last dimension first, low then high) as low and
    high per dimension."""
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return low, high


@_handles("aten.constant_pad_nd.default")
def _pad(self, x, pad, value=0.0):
    v = self.value(x)
    low, high = _torch_pads(len(v.shape), pad)
    return self.e.pad(v, low, high, "constant", value)


def _indexed_pad(mode):
    def handler(self, x, pad):
        v = self.value(x)
        low, high = _torch_pads(len(v.shape), pad)
        return self.e.pad(v, low, high, mode)
    return handler


for _n in (1, 2, 3):
    _handles(f"aten.reflection_pad{_n}d.default")(_indexed_pad("reflect"))
    _handles(f"aten.replication_pad{_n}d.default")(_indexed_pad("edge"))
_handles("aten._pad_circular.default")(_indexed_pad("wrap"))


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
    dtype = y.dtype
    if alpha != 1:
        y = self.e.binary("mul", y, self.e.scalar(alpha, dtype))
    if beta == 0:
        return y
    c = self.value(bias, dtype)
    if beta != 1:
        c = self.e.binary("mul", c, self.e.scalar(beta, dtype))
    return self.e.binary("add", y, c)


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
    v = _float_value(self, x)
    inner = self.e.binary("mul", v, self.e.scalar(input_scale, v.dtype))
    negative = self.e.binary("mul", self.e.expm1(inner),
                             self.e.scalar(alpha, v.dtype))
    y = self.e.select(self.e.compare("gt", v, self.e.scalar(0, v.dtype)), v,
                      negative)
    return self.e.binary("mul", y, self.e.scalar(scale, v.dtype))


@_handles("aten.leaky_relu.default")
def _leaky_relu(self, x, negative_slope=0.01):
    v = self.value(x, self.out_dtype())
    scaled = self.e.binary("mul", v, self.e.scalar(negative_slope, v.dtype))
    return self.e.select(self.e.compare("gt", v, self.e.scalar(0, v.dtype)),
                         v, scaled)


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


@_handles("aten.repeat.default")
def _repeat(self, x, repeats):
    v = self.value(x)
    repeats = [int(r) for r in repeats]
    v = self.e.reshape(v, (1,) * (len(repeats) - len(v.shape)) + tuple(v.shape))
    return self.e.tile(v, repeats)


@_handles("aten.topk.default")
def _topk(self, x, k, dim=-1, largest=True, sorted=True):
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    values, indices = self.e.topk(v, int(k), _norm_dim(dim, len(v.shape)),
                                  bool(largest))
    return (self.e.cast(values, _flow_dtype(self.meta()[0].dtype)), indices)


def _sort_args(self, args, kwargs):
    """(dim, descending) of sort/argsort: positional in the .default
    overloads, keywords in .stable (x, *, stable, dim, descending)."""
    if str(self.node.target).endswith(".default"):
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending",
                                                              False)
        return dim, descending
    return kwargs.get("dim", -1), kwargs.get("descending", False)


@_handles("aten.sort.default", "aten.sort.stable")
def _sort(self, x, *args, **kwargs):
    """flow.sort: stable (equal values keep their order), NaN last
    ascending and first descending, as PyTorch sorts."""
    dim, descending = _sort_args(self, args, kwargs)
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    if not v.shape:
        return v, self.e.scalar(0, "i64")
    values, indices = self.e.sort(v, _norm_dim(dim, len(v.shape)),
                                  bool(descending))
    return (self.e.cast(values, _flow_dtype(self.meta()[0].dtype)), indices)


@_handles("aten.argsort.default", "aten.argsort.stable")
def _argsort(self, x, *args, **kwargs):
    dim, descending = _sort_args(self, args, kwargs)
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    return self.e.sort(v, _norm_dim(dim, len(v.shape)), bool(descending))[1]


@_handles("aten.max.dim", "aten.min.dim")
def _max_min_dim(self, x, dim, keepdim=False):
    v = self.value(x)
    if v.dtype == "i1":
        v = self.e.cast(v, "i32")
    d = _norm_dim(dim, max(len(v.shape), 1))
    is_max = "max" in str(self.node.target)
    if is_max:
        values = self.e.reduce("max", v, [d], keepdim)
    else:
        values = self.e.reduce_min(v, [d], keepdim)
    values = self.e.cast(values, _flow_dtype(self.meta()[0].dtype))
    return (values, self.e.arg_reduce("max" if is_max else "min", v, d,
                                      keepdim))


@_handles("aten.var.correction", "aten.var.dim")
def _var(self, x, dims=None, *args, correction=None, keepdim=False,
         unbiased=None):
    v = self.value(x, self.out_dtype())
    if args:  # var.dim(x, dims, unbiased, keepdim)
        unbiased = args[0]
        keepdim = args[1] if len(args) > 1 else keepdim
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        dims = list(range(len(v.shape)))
    if isinstance(dims, int):
        dims = [dims]
    dims = [_norm_dim(d, max(len(v.shape), 1)) for d in dims]
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    count = int(np.prod([v.shape[d] for d in dims]))
    mean = self.e.reduce("mean", v, dims, True)
    centered = self.e.binary("sub", v, mean)
    total = self.e.reduce("sum", self.e.binary("mul", centered, centered),
                          dims, keepdim)
    return self.e.binary("div", total, self.e.scalar(
        max(count - correction, 0), v.dtype))


def _per_channel(self, w, dtype, rank):
    wv = self.value(w, dtype)
    return self.e.reshape(wv, (wv.shape[0],) + (1,) * (rank - 2))


@_handles("aten.native_group_norm.default")
def _group_norm(self, x, w, b, n, c, hw, groups, eps):
    dtype = _flow_dtype(self.meta()[0].dtype)
    v = self.value(x, dtype)
    shape = v.shape
    grouped = self.e.reshape(
        v, (shape[0], groups, int(np.prod(shape[1:])) // groups))
    y = self.e.reshape(self.e.normalize(grouped, [2], eps), shape)
    if w is not None:
        y = self.e.binary("mul", y, _per_channel(self, w, dtype, len(shape)))
    if b is not None:
        y = self.e.binary("add", y, _per_channel(self, b, dtype, len(shape)))
    return (y, None, None)


@_handles("aten._native_batch_norm_legit.no_stats")
def _batch_norm_batch_stats(self, x, w, b, training, momentum, eps):
    """Normalization by the batch's own statistics (instance norm, and
    batch norm in training mode without running statistics)."""
    dtype = _flow_dtype(self.meta()[0].dtype)
    v = self.value(x, dtype)
    axes = [0] + list(range(2, len(v.shape)))
    y = self.e.normalize(v, axes, eps)
    if w is not None:
        y = self.e.binary("mul", y, _per_channel(self, w, dtype, len(v.shape)))
    if b is not None:
        y = self.e.binary("add", y, _per_channel(self, b, dtype, len(v.shape)))
    return (y, None, None)


@_handles("aten._native_batch_norm_legit_functional.default")
def _batch_norm_functional(self, x, w, b, mean, var, training, momentum,
                           eps):
    """Batch norm with its running statistics' next values as results
    (out, batch mean, batch rstd, running mean, running var). In training:
    normalized by the batch's statistics (biased variance); the running
    statistics become (1 - momentum) old + momentum batch, the variance
    unbiased (n / (n - 1)), as PyTorch updates them."""
    dtype = _flow_dtype(self.meta()[0].dtype)
    if not training:
        y = _inference_batch_norm(self, dtype, x, w, b, mean, var, eps)
        return (y, None, None, self.value(mean), self.value(var))
    v = self.value(x, dtype)
    rank = len(v.shape)
    axes = [0] + list(range(2, rank))
    count = int(np.prod([v.shape[a] for a in axes]))
    y, batch_mean, batch_var, rstd = self.e.normalize_with_statistics(
        v, axes, eps)
    if w is not None:
        y = self.e.binary("mul", y, _per_channel(self, w, dtype, rank))
    if b is not None:
        y = self.e.binary("add", y, _per_channel(self, b, dtype, rank))
    c = v.shape[1]
    flat = [self.e.reshape(t, (c,)) for t in (batch_mean, batch_var, rstd)]
    outs = [y, flat[0], flat[2]]
    unbiased = count / (count - 1) if count > 1 else float("inf")
    for running, batch, factor in ((mean, flat[0], 1.0),
                                    (var, flat[1], unbiased)):
        if running is None:
            outs.append(None)
            continue
        r = self.value(running)
        bv = self.e.cast(batch, r.dtype)
        update = self.e.binary("mul", bv, self.e.scalar(momentum * factor,
                                                          r.dtype))
        keep = self.e.binary("mul", r, self.e.scalar(1 - momentum, r.dtype))
        outs.append(self.e.binary("add", keep, update))
    return tuple(outs)


@_handles("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest(self, x, *_, **__):
    """Nearest neighbour: output row i reads input row floor(i * in / out)
    (PyTorch's rule), as two gathers with constant indices."""
    v = self.value(x)
    out = self.out_shape()
    for axis in (2, 3):
        size_in, size_out = v.shape[axis], out[axis]
        if size_in == size_out:
            continue
        idx = np.minimum(np.floor(np.arange(size_out) * (size_in / size_out)),
                         size_in - 1).astype(np.int64)
        v = self.e.gather(v, self.e.constant(idx), axis)
    return v


# Normalization and reductions ---------------------------------------------

@_handles("aten.native_layer_norm.default")
def _layer_norm(self, x, normalized_shape, w, b, eps):
    dtype = _flow_dtype(self.meta()[0].dtype)
    xv = self.value(x, dtype)
    axis = len(xv.shape) - len(normalized_shape)
    wv = self.value(w, dtype) if w is not None else None
    bv = self.value(b, dtype) if b is not None else None
    y = self.e.layer_norm(xv, wv, bv, axis, eps)
    return (y, None, None)


@_handles("aten.layer_norm.default")
def _layer_norm_as_exported(self, x, normalized_shape, w=None, b=None,
                            eps=1e-5, cudnn_enable=True):
    """torch.export's own layer_norm (before decompositions): the normalized
    tensor only."""
    return _layer_norm(self, x, normalized_shape, w, b, eps)[0]


def _inference_batch_norm(self, dtype, x, w, b, mean, var, eps):
    """flow.batch_norm of `x` with running statistics (a missing weight is
    ones, a missing bias zeros)."""
    xv = self.value(x, dtype)
    c = xv.shape[1]
    ones = np.ones(c, dtype=np.float32)
    wv = self.value(w, dtype) if w is not None else self.e.cast(
        self.e.constant(ones), dtype)
    bv = self.value(b, dtype) if b is not None else self.e.cast(
        self.e.constant(ones * 0), dtype)
    return self.e.batch_norm(xv, wv, bv, self.value(mean, dtype),
                             self.value(var, dtype), eps)


@_handles("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(self, x, w, b, mean, var, momentum, eps):
    dtype = _flow_dtype(self.meta()[0].dtype)
    return (_inference_batch_norm(self, dtype, x, w, b, mean, var, eps),
            None, None)


@_handles("aten.batch_norm.default")
def _batch_norm_as_exported(self, x, w, b, mean, var, training, momentum, eps,
                            cudnn_enabled=True):
    """torch.export's own batch_norm (before decompositions), in inference:
    the running statistics. (One after a convolution is folded into it by
    _fold_batch_norms first.)"""
    if training or mean is None or var is None:
        raise Unsupported("batch norm with batch statistics")
    return _inference_batch_norm(self, self.out_dtype(), x, w, b, mean, var,
                                 eps)


def _softmax_like(op):
    def handler(self, x, dim, *_):
        v = self.value(x, self.out_dtype())
        return self.e.softmax(op, v, _norm_dim(dim, len(v.shape)))
    return handler


_handles("aten._softmax.default", "aten.softmax.int")(_softmax_like("softmax"))
_handles("aten._log_softmax.default", "aten.log_softmax.int")(
    _softmax_like("log_softmax"))


def _reduction(kind):
    def handler(self, x, dims=None, keepdim=False, *_, **kwargs):
        dtype = self.out_dtype()
        v = self.value(x, dtype)
        if dims is None or (isinstance(dims, (list, tuple)) and not dims):
            dims = list(range(len(v.shape)))
        if isinstance(dims, int):
            dims = [dims]
        dims = [_norm_dim(d, len(v.shape)) for d in dims]
        if kind == "min":
            return self.e.reduce_min(v, dims, keepdim)
        return self.e.reduce(kind, v, dims, keepdim)
    return handler


_handles("aten.sum.dim_IntList", "aten.sum.default")(_reduction("sum"))
_handles("aten.mean.dim", "aten.mean.default")(_reduction("mean"))
_handles("aten.amax.default", "aten.max.default")(_reduction("max"))
_handles("aten.amin.default", "aten.min.default")(_reduction("min"))


@_handles("aten.cumsum.default")
def _cumsum(self, x, dim, dtype=None):
    # Integer and bool inputs sum in int64, as in PyTorch.
    v = self.value(x, self.out_dtype())
    return self.e.cumsum(v, _norm_dim(dim, max(len(v.shape), 1)))


def _arg_reduction(kind):
    def handler(self, x, dim=None, keepdim=False):
        v = self.value(x)
        if v.dtype == "i1":
            v = self.e.cast(v, "i32")
        if dim is None:
            # Over every element: the index into the flattened tensor.
            flat = self.e.reshape(v, (int(np.prod(v.shape)),))
            r = self.e.arg_reduce(kind, flat, 0, False)
            return self.e.reshape(r, self.out_shape()) if keepdim else r
        return self.e.arg_reduce(kind, v, _norm_dim(dim, max(len(v.shape), 1)),
                                 keepdim)
    return handler


_handles("aten.argmax.default")(_arg_reduction("max"))
_handles("aten.argmin.default")(_arg_reduction("min"))


@_handles("aten.any.dim", "aten.any.dims", "aten.any.default")
def _any(self, x, dims=None, keepdim=False):
    v = self.value(x)
    as_int = self.e.cast(v, "i32")
    if dims is None:
        dims = list(range(len(v.shape)))
    if isinstance(dims, int):
        dims = [dims]
    m = self.e.reduce("max", as_int, [_norm_dim(d, len(v.shape))
                                      for d in dims], keepdim)
    return self.e.compare("ne", m, self.e.scalar(0, "i32"))


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


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------

def export(module, args=(), kwargs=None):
    """torch.export in eval mode plus core-ATen decompositions."""
    return _decompose(_export(module, args, kwargs))


def _export(module, args=(), kwargs=None, train=False):
    """torch.export in eval mode (ATen ops as exported, not decomposed);
    with `train`, in the modes the module and its submodules are in (a
    training step drops out where the model is in training mode)."""
    import torch
    if isinstance(module, torch.export.ExportedProgram):
        ep = module
    else:
        if not isinstance(args, tuple):
            args = (args,)
        # Exported in eval mode; the caller's module and each of its
        # submodules keep their own modes (a wrapper in training mode around
        # a model in eval mode must not leave the model training).
        modes = ([(m, m.training) for m in module.modules()]
                 if isinstance(module, torch.nn.Module) else [])
        if isinstance(module, torch.nn.Module) and not train:
            module.eval()
        _register_cache_pytrees(module)
        try:
            with torch.no_grad():
                ep = torch.export.export(module, args, kwargs=kwargs or {})
        finally:
            for m, training in modes:
                m.training = training
    return ep


def _decompose(ep):
    """`ep` decomposed to core ATen."""
    import torch
    # Attention stays one op: Flow lowers it itself (and PyTorch's own
    # decomposition of it can produce views the rest of the table rejects).
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if "scaled_dot_product" in str(op):
            del table[op]
    return ep.run_decompositions(table)


def _register_cache_pytrees(module) -> None:
    """Lets torch.export flatten the cache objects a Hugging Face model
    returns by default (a decoder's DynamicCache of keys and values), so the
    model compiles with its default config, as torch.compile takes it. The
    registration is transformers' own, where this version has one; the
    compiled model then returns the same cache type, rebuilt from Flow's
    tensors."""
    cls = type(module)
    if not cls.__module__.startswith("transformers."):
        return
    try:
        from transformers.exporters.exporter_dynamo import \
            register_cache_pytrees_for_model
    except ImportError:
        register_cache_pytrees_for_model = None
    if register_cache_pytrees_for_model is not None:
        register_cache_pytrees_for_model(module)
        return
    try:
        from transformers.integrations.executorch import \
            register_dynamic_cache_export_support
    except ImportError:
        return
    register_dynamic_cache_export_support()


def _fold_batch_norms(ep) -> int:
    """Rewrites convolution -> batch norm (inference) into one convolution
    whose weight and bias absorb the normalization, when the convolution's
    weight and the statistics are constants. The arithmetic is inserted as
    graph nodes on constants, which the importer then computes. Returns how
    many were folded."""
    import torch
    aten = torch.ops.aten
    constant = {spec.arg.name for spec in ep.graph_signature.input_specs
                if spec.kind.name in ("PARAMETER", "BUFFER",
                                      "CONSTANT_TENSOR")}
    graph = ep.graph

    def is_constant(n):
        return n is None or (isinstance(n, torch.fx.Node) and
                             n.op == "placeholder" and n.name in constant)

    folded = 0
    for bn in list(graph.nodes):
        # Decomposed: convolution -> _native_batch_norm_legit_no_training
        # (results taken by getitem); as exported: conv2d -> batch_norm
        # (one result, training False).
        exported = bn.target == aten.batch_norm.default
        if exported:
            if len(bn.args) < 8 or bn.args[5] or bn.kwargs:
                continue
            conv_op = aten.conv2d.default
        elif bn.target == aten._native_batch_norm_legit_no_training.default:
            conv_op = aten.convolution.default
        else:
            continue
        conv, gamma, beta, mean, var = bn.args[:5]
        eps = bn.args[7] if exported else bn.args[6]
        if not (isinstance(conv, torch.fx.Node) and conv.target == conv_op
                and len(conv.users) == 1 and not conv.kwargs and
                (exported or not conv.args[6])):
            continue
        weight = conv.args[1]
        bias = conv.args[2] if len(conv.args) > 2 else None
        if not all(is_constant(n) for n in (weight, bias, gamma, beta, mean,
                                            var)) or mean is None:
            continue
        getitems = [] if exported else list(bn.users)
        if any(u.target is not operator.getitem or u.args[1] != 0
               for u in getitems):
            continue
        with graph.inserting_before(conv):
            def call(op, *args):
                return graph.call_function(op, args)
            scale = call(aten.rsqrt.default, call(aten.add.Tensor, var, eps))
            if gamma is not None:
                scale = call(aten.mul.Tensor, scale, gamma)
            w = call(aten.mul.Tensor, weight,
                     call(aten.view.default, scale, [-1, 1, 1, 1]))
            shift = call(aten.neg.default, mean)
            if bias is not None:
                shift = call(aten.add.Tensor, shift, bias)
            b = call(aten.mul.Tensor, shift, scale)
            if beta is not None:
                b = call(aten.add.Tensor, b, beta)
            args = list(conv.args) + [None] * (3 - len(conv.args))
            args[1], args[2] = w, b
            new_conv = graph.call_function(conv_op, tuple(args))
        new_conv.meta = dict(conv.meta)
        new_conv.meta["val"] = bn.meta["val"] if exported else \
            bn.meta["val"][0]
        if exported:
            bn.replace_all_uses_with(new_conv)
        for g in getitems:
            g.replace_all_uses_with(new_conv)
            graph.erase_node(g)
        graph.erase_node(bn)
        graph.erase_node(conv)
        folded += 1
    return folded


def _functional_twin(target):
    """The functional op of an in-place ATen op (aten.relu_.default ->
    aten.relu.default), or None."""
    import torch
    name = target._schema.name  # "aten::relu_"
    namespace, _, op = name.partition("::")
    if not op.endswith("_") or op.endswith("__"):
        return None
    packet = getattr(getattr(torch.ops, namespace, None), op[:-1], None)
    return getattr(packet, target._overloadname, None) if packet else None


def _in_place_as_functional(ep):
    """The in-place ops of `ep` that can be imported as their functional
    twins (a list), or None if some op mutates in a way that cannot.

    An in-place op can when it mutates only its first argument, and that
    argument is an intermediate result (not an input, parameter or buffer,
    and not a view of another tensor) that nothing reads after the op: then
    every reader sees the value it would see in eager, whether the op wrote
    over it or not. Chains (add_ then relu_ on its result, as in a ResNet
    block) follow the same storage back to the op that made it."""
    import torch
    position = {n: i for i, n in enumerate(ep.graph.nodes)}
    approved = {}  # in-place node -> the node that made its storage

    def is_view(target):
        return isinstance(target, torch._ops.OpOverload) and any(
            r.alias_info is not None for r in target._schema.returns)

    for node in ep.graph.nodes:
        target = node.target
        if node.op != "call_function" or \
                not isinstance(target, torch._ops.OpOverload) or \
                not target._schema.is_mutable:
            continue
        schema = target._schema
        twin = _functional_twin(target)
        writes = [a.alias_info is not None and a.alias_info.is_write
                  for a in schema.arguments]
        if twin is None or not writes or not writes[0] or any(writes[1:]) \
                or not node.args or not isinstance(node.args[0],
                                                   torch.fx.Node):
            return None
        x = node.args[0]
        root = approved.get(x, x)
        if root.op != "call_function" or root.target is operator.getitem or \
                not isinstance(root.target, torch._ops.OpOverload) or \
                root.target._schema.is_mutable or is_view(root.target):
            return None
        chain = {root} | {n for n, r in approved.items() if r is root}
        for held in chain:
            for user in held.users:
                if user is node or user in chain:
                    continue
                if position[user] > position[node] or is_view(user.target):
                    return None
        approved[node] = root
    return list(approved)


def _imports_as_exported(ep) -> bool:
    """True if Flow can import `ep` as torch.export left it, without the
    core-ATen decompositions (which retrace the whole program: about 2 s of
    BERT-base's 5 s compile): no op mutates anything (the decompositions
    would make those functional), and every op that depends on a user
    input has a handler (the others are computed at import time)."""
    import torch
    in_place = _in_place_as_functional(ep)
    if in_place is None:
        return False
    user_inputs = set(ep.graph_signature.user_inputs)
    live = set()  # nodes that depend on a user input
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            if node.name in user_inputs:
                live.add(node)
            continue
        if node.op != "call_function":
            continue
        target = node.target
        depends = any(a in live for a in node.all_input_nodes)
        if depends:
            live.add(node)
        if target is operator.getitem:
            continue
        if not isinstance(target, torch._ops.OpOverload):
            return False
        if node in in_place:
            target = _functional_twin(target)
        if depends and _op_key(target) not in _HANDLERS:
            return False
    return True


def import_program(module, args=(), kwargs=None, *, parameters=None,
                   function="main", shared=None,
                   placements=None, training=None) -> ImportedProgram:
    """Exports and imports `module`. With `shared` (a dict), the weights go
    to it instead of to `parameters`, reusing entries other programs put
    there with the same values; the caller writes the dict to `parameters`
    (flow.safetensors.save) before any of the programs is loaded.
    `placements` is (SBPs by input name or position, mesh shape): the
    function is placed on that mesh and its inputs get the SBPs.
    `training` is (state name by parameter target, flow.optimizer text[,
    op names the backward recomputes]): those parameters become the
    arguments of a training step."""
    if shared is not None and parameters is None:
        raise ValueError("a shared parameter store needs the archive path")
    archive = os.fspath(parameters) if parameters is not None else None
    ep = _export(module, args, kwargs, train=training is not None)
    if _imports_as_exported(ep):
        # In-place ops on results nothing reads afterwards become their
        # functional twins, and batch norms after convolutions fold in.
        # (Semantics kept, so the decomposed path below may still take
        # the rewritten graph.)
        for node in _in_place_as_functional(ep):
            node.target = _functional_twin(node.target)
        if training is None:
            _fold_batch_norms(ep)
        ep.graph_module.recompile()
        # Every op is one Flow imports as it is. A refusal the check cannot
        # foresee (a handler's own, or a constant too large to fold) takes
        # the decomposed path below.
        # (Nothing is written before the import succeeds; shared weights
        # are added to the caller's store only then.)
        trial = dict(shared) if shared is not None else None
        try:
            result = _TorchImporter(ep, function, trial,
                                    placements, training).run(archive)
        except UnsupportedOpsError:
            pass
        else:
            if shared is not None:
                shared.update(trial)
            return result
    ep = _decompose(ep)
    if training is None:
        _fold_batch_norms(ep)
    return _TorchImporter(ep, function, shared, placements,
                          training).run(archive)


def import_torch(module, example_args=(), example_kwargs=None, *,
                 parameters=None, function="main") -> str:
    """Exports `module` with `example_args` and returns flow-dialect text.

    Weights above a few hundred bytes are written to the safetensors file
    `parameters` (a temporary file when None) and referenced from the text
    by `flow.parameter`; smaller constants are inline. Raises
    UnsupportedOpsError naming every op Flow cannot import.
    """
    return import_program(module, example_args, example_kwargs,
                          parameters=parameters, function=function).text
