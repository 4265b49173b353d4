"""The PyTorch importer itself: the program being imported
(`_TorchImporter`, the driver over an exported program's graph), dtype
helpers, and the op table the op-family modules register their handlers in
(`_HANDLERS`: ATen op name -> handler(importer, *args, **kwargs)).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import os
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._emitter import (ELEMENT_TYPES, INT_TYPES, TYPES_TEXT, Unsupported,
                        UnsupportedOpsError, Value, handler_registry, i64)
from .._importer import FOLD_BYTES, GraphImporter, Poison

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

def _same_shape(a, b) -> bool:
    """Shapes equal, a symbolic dimension's extent compared in Flow's
    normal form (the builder prints it so; torch's text is compared after
    the same spacing)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str)):
                return False
            from .._emitter import same_extent
            if not same_extent(x, y):
                return False
        elif x != y:
            return False
    return True


class _TorchImporter(GraphImporter):
    frontend = "PyTorch"

    def __init__(self, ep, function: str, shared=None, placements=None,
                 training=None, dynamic=None):
        super().__init__(function, shared, placements)
        from ._dynamic import Symbols
        #: The program's size symbols (its dynamic dimensions).
        self.symbols = Symbols(ep, dynamic)
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

    def out_shape(self) -> Tuple:
        """The node's shape: ints, and extent texts (`batch*seq`) for the
        dimensions torch.export traced as symbols."""
        return self.symbols.shape(self.meta().shape)

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
                    self.symbols.name_inputs(spec.arg.name, val)
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
            if isinstance(node.meta.get("val"), torch.SymInt):
                # A size torch.export computes (sym_size, and arithmetic on
                # sizes): its extent, which view sizes and the like read.
                self.node = node
                try:
                    self.env[node] = self.symbols.extent(node.meta["val"])
                except Unsupported as u:
                    self.record(node, str(u))
                    self.env[node] = Poison()
                continue
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
        dims = self.symbols.dims_attribute()
        if dims is not None:
            self.e.function_attribute("flow.dims", dims)
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

    def has_symbols(self) -> bool:
        return bool(self.symbols.bounds)

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
                    not _same_shape(v.shape, self.symbols.shape(m.shape)):
                raise Unsupported(f"Flow's result has shape {list(v.shape)}, "
                                  "the exported program's "
                                  f"{list(self.symbols.shape(m.shape))}")
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


def _state_name(target: str) -> str:
    """A buffer's state name: its name in the trained model (training steps
    export the model as the `model` attribute of a loss module)."""
    return target[len("model."):] if target.startswith("model.") else target
