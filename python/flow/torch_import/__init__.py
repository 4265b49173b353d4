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

The package: `_core` (the importer, its dtype helpers and op table),
`_export` (torch.export, decompositions and the graph rewrites before
import), and one module of op handlers per family: `elementwise`
(arithmetic, comparisons, activations), `linalg` (matmuls, convolution,
attention, pooling), `reductions` (reductions, sorting, normalization),
`shape` (views, indexing, scatters, pads) and `misc` (randomness, dtype
conversions, fills, assertions). Composite activations come from
`flow._composites`, shared with the ONNX importer.
"""

from __future__ import annotations

import os

from .._emitter import UnsupportedOpsError
# The op families register their handlers in _core's table on import.
from . import elementwise, linalg, misc, reductions, shape  # noqa: F401
# Private names are reachable here as before the split (tests patch
# `_decompose` here: import_program reads it from this module).
from ._core import (_HANDLERS, _NEVER_FOLD, ImportedProgram,  # noqa: F401
                    _flow_dtype, _op_key, _source_line, _to_numpy,
                    _torch_dtype, _torch_types, _TorchImporter)
from ._export import (_decompose, _export, _fold_batch_norms,  # noqa: F401
                      _functional_twin, _imports_as_exported,
                      _in_place_as_functional, _register_cache_pytrees)

__all__ = ["import_torch", "ImportedProgram", "UnsupportedOpsError"]


def export(module, args=(), kwargs=None):
    """torch.export in eval mode plus core-ATen decompositions."""
    return _decompose(_export(module, args, kwargs))


def import_program(module, args=(), kwargs=None, *, parameters=None,
                   function="main", shared=None,
                   placements=None, training=None,
                   dynamic=None) -> ImportedProgram:
    """Exports and imports `module`. With `shared` (a dict), the weights go
    to it instead of to `parameters`, reusing entries other programs put
    there with the same values; the caller writes the dict to `parameters`
    (flow.safetensors.save) before any of the programs is loaded.
    `placements` is (SBPs by input name or position, mesh shape): the
    function is placed on that mesh and its inputs get the SBPs.
    `training` is (state name by parameter target, flow.optimizer text[,
    op names the backward recomputes]): those parameters become the
    arguments of a training step. `dynamic` names dynamic dimensions of
    the inputs: {input name: {dimension: (symbol, min, max)}}."""
    if dynamic is not None:
        from ._dynamic import check_dynamic
        dynamic = check_dynamic(dynamic)
    if shared is not None and parameters is None:
        raise ValueError("a shared parameter store needs the archive path")
    archive = os.fspath(parameters) if parameters is not None else None
    ep = _export(module, args, kwargs, train=training is not None,
                 dynamic=dynamic)
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
            result = _TorchImporter(ep, function, trial, placements,
                                    training, dynamic).run(archive)
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
                          training, dynamic).run(archive)


def import_torch(module, example_args=(), example_kwargs=None, *,
                 parameters=None, function="main", dynamic=None) -> str:
    """Exports `module` with `example_args` and returns flow-dialect text.

    Weights above a few hundred bytes are written to the safetensors file
    `parameters` (a temporary file when None) and referenced from the text
    by `flow.parameter`; smaller constants are inline. Raises
    UnsupportedOpsError naming every op Flow cannot import. `dynamic`
    names dynamic dimensions, as flow.compile's.
    """
    return import_program(module, example_args, example_kwargs,
                          parameters=parameters, function=function,
                          dynamic=dynamic).text
