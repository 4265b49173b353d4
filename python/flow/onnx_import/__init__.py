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

The package: `_core` (the importer and its checks of the model, element
types, the op table) and one module of op handlers per family:
`elementwise` (arithmetic, comparisons, activations), `linalg` (matmuls,
convolution, pooling), `reductions` (reductions, normalization, top-k),
`shape` (reshapes, indexing, scatters, pads), `recurrent` (RNN, GRU, LSTM)
and `misc` (casts, dropout, tensors made from shapes). Composite
activations come from `flow._composites`, shared with the PyTorch importer.
`python -m flow.onnx_import` runs `main` (see __main__.py).
"""

from __future__ import annotations

import os

from .._emitter import UnsupportedOpsError
from .._flow import FlowError
# The op families register their handlers in _core's table on import.
from . import (elementwise, linalg, misc, recurrent,  # noqa: F401
               reductions, shape)
from ._core import (_HANDLERS, _NEVER_FOLD, MAX_TENSOR_BYTES,  # noqa: F401
                    MAX_TESTED_OPSET, MIN_OPSET, ImportedOnnx, _OnnxImporter)

__all__ = ["import_onnx", "SUPPORTED_OPS", "MIN_OPSET", "MAX_TESTED_OPSET",
           "MAX_TENSOR_BYTES"]

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
                   archive_name=None, placements=None,
                   dynamic=None) -> ImportedOnnx:
    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) \
        else None
    model = _load(model)
    if not hasattr(model, "graph"):
        raise ValueError(f"not an ONNX model: {type(model).__name__}")
    return _OnnxImporter(model, input_shapes, function, constants,
                         placements, source, dynamic).run(
        os.fspath(parameters) if parameters is not None else None,
        archive_name)


def import_onnx(model, *, parameters=None, input_shapes=None, constants=None,
                function="main", dynamic=None) -> str:
    """Returns flow-dialect text for an ONNX model (a path or ModelProto).

    Initializers above a few hundred bytes go to the safetensors file
    `parameters` (a temporary file when None). `input_shapes` fixes
    symbolic input dimensions: {"input": (1, 3, 224, 224)}; `constants`
    freezes inputs to given values ({"axes": np.array([1])}), which is how
    a shape, axes or pads input becomes known at compile time. `dynamic`
    keeps symbolic input dimensions as size symbols, with their bounds:
    {"batch": (1, 8)} for the model's `dim_param` "batch". Raises
    UnsupportedOpsError naming every op Flow cannot import.
    """
    return import_program(model, parameters=parameters,
                          input_shapes=input_shapes, constants=constants,
                          function=function, dynamic=dynamic).text


def _shape_arg(text: str):
    name, _, dims = text.rpartition("=")
    if not name:
        raise ValueError(f"--input-shape wants NAME=DIMS, got '{text}'")
    return name, tuple(int(d) for d in dims.split("x") if d)


def _dim_arg(text: str):
    name, _, bounds = text.partition("=")
    lo, _, hi = bounds.partition(":")
    try:
        return name, (int(lo), int(hi))
    except ValueError:
        raise ValueError(f"--dim wants NAME=MIN:MAX, got '{text}'") from None


def main(argv=None) -> int:
    """python -m flow.onnx_import MODEL.onnx [-o OUT.mlir]
    [--parameters W.safetensors] [--input-shape NAME=1x3x224x224]...
    [--dim NAME=MIN:MAX]..."""
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
    parser.add_argument("--dim", action="append", default=[],
                        type=_dim_arg, help="NAME=MIN:MAX: keep the "
                        "symbolic dimension NAME as a size symbol")
    args = parser.parse_args(argv)
    parameters = args.parameters
    if parameters is None:
        base = args.model if args.output == "-" else args.output
        parameters = os.path.splitext(base)[0] + ".safetensors"
    try:
        program = import_program(args.model, parameters=parameters,
                                 input_shapes=dict(args.input_shape),
                                 archive_name=args.archive_name,
                                 dynamic=dict(args.dim) or None)
    except (UnsupportedOpsError, FlowError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(program.text)
    else:
        with open(args.output, "w") as f:
            f.write(program.text)
    return 0
