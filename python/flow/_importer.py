"""The driver both importers run: one graph walk, with the front end's op
table plugged in.

A front end (torch, ONNX) subclasses `GraphImporter` and gives its op
table (`handlers`), the ops never folded, how to compute a node at import
time (`fold_node`) and how to turn its constants into numpy arrays. The
driver does the rest the same way for both:

- a node whose inputs are all known at import time is folded (computed
  here) rather than compiled, up to FOLD_BYTES of inputs and outputs;
- every other node goes to its handler, which builds flow ops through the
  Emitter (and so through the compiler's own op builder);
- an op Flow cannot import poisons the values it defines; the walk goes
  on, so one `UnsupportedOpsError` names every unsupported op at once;
- the module is finished with its results, and large constants are
  written to a safetensors archive next to it.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._emitter import (NUMPY_TO_FLOW, Emitter, Unsupported,
                       UnsupportedOpsError, Value, numpy_dtype)

#: Constants computed at import time may be at most this large.
FOLD_BYTES = 64 << 20

class Poison:
    """The value of a node that could not be imported."""


class GraphImporter:
    """One program being imported: the values of the graph's nodes (`env`),
    the names constants came with, and the unsupported ops found so far."""

    #: "PyTorch" or "ONNX", for messages.
    frontend = ""
    #: Op key -> handler(importer, ...) building the op's flow ops.
    handlers: Dict[str, Callable] = {}
    #: Op keys computed at run time even when their inputs are known.
    never_fold: frozenset = frozenset()

    def __init__(self, function: str, shared=None, placements=None):
        self.e = Emitter(function, shared)
        #: (SBPs by input name or position, mesh shape), or None.
        self.placements = placements
        self.env: Dict[Any, Any] = {}
        #: id(constant) -> the name it is stored under in the archive.
        self.names: Dict[int, str] = {}
        #: Weights `placements` placed by name (annotated where read).
        self.placed_parameters: set = set()
        self.unsupported: List[Tuple[str, str, str, str]] = []
        self.node = None

    # Hooks of the front end ---------------------------------------------
    def to_array(self, x) -> Optional[np.ndarray]:
        """A constant of the front end as a numpy array (None: not one)."""
        return np.asarray(x) if isinstance(x, (np.ndarray, np.generic)) \
            else None

    def record(self, node, reason: str) -> None:
        """Notes that `node` cannot be imported, and why."""
        raise NotImplementedError

    # Values ---------------------------------------------------------------
    def value(self, x, dtype: Optional[str] = None) -> Value:
        """`x` (a Value, a constant known at import time or a Python
        number) as a Value, cast to `dtype` when given. A constant is
        stored under the name it came with (a weight's), else after the
        node that computed it."""
        if isinstance(x, Value):
            return self.e.cast(x, dtype) if dtype else x
        array = self.to_array(x)
        if array is not None:
            name = self.names.get(id(x))
            if dtype and NUMPY_TO_FLOW.get(array.dtype.name) != dtype:
                array = array.astype(numpy_dtype(dtype))
                name = None
            v = self.e.constant(array, name or self.folded_name())
            sbp = self._parameter_sbp(name)
            if sbp is not None:
                # A weight placed by name (sbp= in inference: weights are
                # parameters, not arguments): pinned where it is read.
                v = self.e.op("flow.annotate", [v],
                              {"mesh": "@mesh", "sbp": sbp},
                              result=(v.shape, v.dtype))
            return v
        if isinstance(x, (bool, int, float)):
            if dtype is None:
                dtype = ("i1" if isinstance(x, bool) else
                         "i64" if isinstance(x, int) else "f32")
            return self.e.scalar(x, dtype)
        if x is None:
            raise Unsupported("a required input is missing")
        raise Unsupported(f"argument of type {type(x).__name__}")

    def _parameter_sbp(self, name: Optional[str]) -> Optional[str]:
        """The SBP (attribute text) `placements` gives weight `name`, when
        it names a weight that is not an argument."""
        if not self.placements or name is None:
            return None
        sbps = self.placements[0] or {}
        if name not in sbps or name in getattr(self, "argument_names", ()):
            return None
        from .sbp import _attr
        self.placed_parameters.add(name)
        return _attr(sbps[name], len(self.placements[1]))

    def _parameter_sbp_of(self, name: Optional[str]):
        """The SBP `placements` gives weight `name` (None: not placed)."""
        if not self.placements or name is None:
            return None
        if name in getattr(self, "argument_names", ()):
            return None
        return (self.placements[0] or {}).get(name)

    def place_like(self, source: str, name: str, permutation) -> None:
        """Places weight `name`, the weight `source` with its dimensions
        permuted (dimension i is source dimension permutation[i]), as
        `source` is placed: a split follows its dimension."""
        sbp = self._parameter_sbp_of(source)
        entries = [sbp] if isinstance(sbp, str) else list(sbp)
        moved = []
        for e in entries:
            m = re.fullmatch(r"S\((\d+)\)", e)
            moved.append(f"S({permutation.index(int(m.group(1)))})"
                         if m and int(m.group(1)) < len(permutation) else e)
        placed = dict(self.placements[0])
        placed[name] = moved[0] if isinstance(sbp, str) else tuple(moved)
        self.placements = (placed, *self.placements[1:])
        self.placed_parameters.add(source)

    def folded_name(self) -> str:
        """The archive name of a constant the current node computed."""
        node = getattr(self.node, "name", "") or "node"
        return f"folded.{node}"

    # The walk ---------------------------------------------------------------
    def dispatch(self, node, key: str, inputs: Sequence[Any],
                 fold: Callable[[], Any], call: Callable[[Callable], Any],
                 poison: Callable[[], Any]):
        """The value of `node` (op `key`, reading `inputs`): poisoned
        downstream of an unsupported op, `fold()` when every input is known
        (None: not computable here), else `call(handler)`."""
        if any(isinstance(x, Poison) for x in inputs):
            # Downstream of an unsupported op: still name this one if Flow
            # cannot import it either.
            if key not in self.handlers:
                self.record(node, "")
            return poison()
        if key not in self.never_fold and not any(
                isinstance(x, Value) for x in inputs):
            folded = fold()
            if folded is not None:
                return folded
        handler = self.handlers.get(key)
        if handler is None:
            self.record(node, "")
            return poison()
        try:
            return call(handler)
        except Unsupported as u:
            self.record(node, str(u))
            return poison()
        except (TypeError, ValueError) as e:
            # A handler that computes with sizes takes numbers: on a
            # symbolic size (a string) it fails, which refuses the node.
            if not self.has_symbols():
                raise
            self.record(node, "this op's import does not take symbolic "
                        f"sizes yet ({type(e).__name__}: {e})")
            return poison()

    def has_symbols(self) -> bool:
        """Whether the program has size symbols (dynamic dimensions)."""
        return False

    def result(self, x, node) -> Optional[Value]:
        """A graph output as a result of the function (None, and recorded,
        when it cannot be one)."""
        self.node = node
        try:
            return self.value(x)
        except Unsupported as u:
            self.record(node, str(u))
            return None

    def finish(self, results: Sequence[Value], archive: Optional[str],
               archive_name: Optional[str] = None,
               input_names: Sequence[Optional[str]] = (),
               input_positions: Optional[Sequence[int]] = None
               ) -> Tuple[str, str]:
        """(module text, archive path or ""): raises UnsupportedOpsError
        naming every op that could not be imported. Parameters go to
        `archive` (a new temporary file when None), which the text names
        as `archive_name` when given. With an archive shared between
        programs, the caller writes it. The arguments `placements` names
        (among `input_names`, one per argument, or by input position, input
        i being argument `input_positions[i]`) get their `flow.sbp`; with a
        third entry in `placements`, the inputs it does not name get that
        SBP where they have a dimension."""
        if self.unsupported:
            raise UnsupportedOpsError(self.unsupported, self.frontend)
        if self.placements:
            from .sbp import argument_sbps
            sbps, mesh = self.placements[:2]
            sbps = {k: v for k, v in dict(sbps or {}).items()
                    if k not in self.placed_parameters}
            default = self.placements[2] if len(self.placements) > 2 \
                else None
            positions = list(input_positions if input_positions is not None
                             else range(len(input_names)))
            if default is not None:
                for i, index in enumerate(positions):
                    if i not in sbps and input_names[index] not in sbps and \
                            self.e.arguments[index].shape:
                        sbps[i] = default
            self.e.mesh(mesh)
            weights = sorted({n for n in self.names.values()
                              if isinstance(n, str)})
            for index, attr in argument_sbps(list(input_names), sbps,
                                             len(mesh), positions,
                                             weights).items():
                self.e.argument_attribute(index, "flow.sbp", attr)
        if not self.e.parameters:
            return self.e.module(results, None), ""
        if archive is None:
            fd, archive = tempfile.mkstemp(prefix="flow-",
                                           suffix=".safetensors")
            os.close(fd)
        text = self.e.module(results, archive_name or archive)
        if self.e.shared is None:
            self.e.write_archive(archive)
        return text, archive
