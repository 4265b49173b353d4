"""Flow: compile deep-learning models and flow-dialect programs, and run them.

    import flow
    model = flow.compile(torch_module, (x,))     # or an ONNX file / ModelProto
    y = model(x)                                  # same structure as the module

    text = flow.import_torch(torch_module, (x,), parameters="m.safetensors")
    text = flow.import_onnx("model.onnx", parameters="m.safetensors")
    module = flow.compile_mlir(text)              # flow-dialect MLIR text
    (y,) = module(x_numpy)

The extension `flow._flow` is built by scripts/build.sh into
build/python/flow; `scripts/setup.sh`'s virtual environment finds it through
the flow-build.pth file it installs (or set PYTHONPATH=build/python).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional, Tuple

import numpy as np

from ._flow import FlowError, Module as _Module, compile as _compile
from ._flow import BuildError, ProgramBuilder
from ._flow import blas_info as _blas_info
from ._flow import compile_options as _compile_option_rows
from ._emitter import UnsupportedOpsError
from .torch_import import import_torch
from . import sbp

__all__ = ["FlowError", "BuildError", "ProgramBuilder",
           "UnsupportedOpsError", "CompiledModule",
           "CompiledModel", "compile", "compile_mlir", "compile_ir", "compile_options", "load",
           "import_torch", "import_onnx", "sbp", "blas_info",
           "compile_causal_lm", "CausalLM"]


def blas_info() -> dict:
    """The libraries Flow's GEMMs run on and the kernels they run:
    `gemm_library` and `gemm_kernels` (oneDNN and its instruction set when
    installed, unless FLOW_GEMM=openblas; else OpenBLAS), and OpenBLAS (the
    matrix-vector products): `library`, `kernels` (its own name, e.g.
    "SkylakeX"), `chosen_by` (Flow from the CPU's features, or
    OPENBLAS_CORETYPE) and `warning` (non-empty when its kernels are slower
    than the CPU allows)."""
    return dict(_blas_info())


class CompiledModule:
    """A compiled executable, callable like a function.

    Calling it runs the executable's only function (or `function`) on numpy
    arrays and returns a tuple of numpy arrays.
    """

    def __init__(self, executable: bytes, threads: int = 0,
                 parameters: str = "", base_directory: str = "",
                 timeout: Optional[float] = None,
                 check_numerics: bool = False):
        self.executable = executable
        self._module = _Module(executable, threads, parameters,
                               base_directory, _timeout_seconds(timeout))
        self.check_numerics = check_numerics

    @property
    def check_numerics(self) -> bool:
        """When true, a call stops at the first NaN or infinity in an input
        or written by a kernel, with a FlowError naming the kernel, its ops
        and their source lines, the element and its value."""
        return self._check_numerics

    @check_numerics.setter
    def check_numerics(self, on: bool):
        self._check_numerics = bool(on)
        self._module.set_check_numerics(self._check_numerics)

    @property
    def functions(self):
        return list(self._module.functions)

    def signature(self, function=None):
        """(inputs, outputs): lists of (dtype, shape)."""
        return self._module.signature(self._pick(function))

    @property
    def rank(self) -> int:
        """This process' device in the mesh (0 without a mesh)."""
        return self._module.rank

    @property
    def parameter_bytes(self) -> int:
        """Bytes of weights this process holds: on a mesh, its own pieces
        of split weights (read once from the archive when loaded) and the
        weights it reads whole."""
        return self._module.parameter_bytes

    def __call__(self, *inputs, function=None):
        inputs = [x if isinstance(x, np.ndarray) else _to_array(x, i)
                  for i, x in enumerate(inputs)]
        if self._module.has_mesh:
            # Global inputs in, global outputs out, on every process.
            return tuple(self._module.run_global(self._pick(function),
                                                 list(inputs)))
        return tuple(self._module.run(self._pick(function), list(inputs)))

    def local(self, *pieces, function=None):
        """Runs this process' program of a mesh executable on its own pieces
        of the inputs (as OneFlow's `to_global` takes local tensors): each
        process passes the piece its device holds under the input's SBP
        (`local_signature()` gives the shapes) and gets its pieces of the
        outputs (whole outputs where their SBP is B). No global input is
        sliced and nothing checks that the pieces fit together: they are
        the caller's. Without a mesh this is a call."""
        pieces = [x if isinstance(x, np.ndarray) else _to_array(x, i)
                  for i, x in enumerate(pieces)]
        return tuple(self._module.run(self._pick(function), list(pieces)))

    def local_signature(self, function=None):
        """(inputs, outputs) of this process' program: its pieces' dtypes
        and shapes."""
        return self._module.local_signature(self._pick(function))

    def _pick(self, function):
        if function is not None:
            return function
        names = self.functions
        if len(names) != 1:
            raise FlowError(f"the executable has several functions {names}: "
                            "pass function=NAME")
        return names[0]


def import_onnx(model, *, parameters=None, input_shapes=None, constants=None,
                function="main") -> str:
    """Returns flow-dialect text for an ONNX model (see
    flow.onnx_import.import_onnx)."""
    from .onnx_import import import_onnx as _import_onnx
    return _import_onnx(model, parameters=parameters,
                        input_shapes=input_shapes, constants=constants,
                        function=function)


def compile_mlir(source: str, threads: int = 0, parameters: str = "",
                 base_directory: str = "",
                 timeout: Optional[float] = None,
                 check_numerics: bool = False, cache: bool = True,
                 **options) -> CompiledModule:
    """Compiles flow-dialect MLIR text and loads it.

    `options` are the compile options (below; each is a flow-compile flag
    too: `fusion=False` is --fusion=false, `mesh=(2, 2)` --mesh=2x2). A
    relative parameter archive named by the module is taken from
    `base_directory` (default: the current directory); `parameters`
    overrides it. `threads`, `timeout`, `check_numerics` and `cache` are
    flow.compile's."""
    return CompiledModule(
        _compile(source, _compile_options(options, "compile_mlir"),
                 bool(cache)),
        threads, parameters, base_directory, timeout, check_numerics)


def compile_options() -> list:
    """The compile options, one dict each: `keyword` (flow.compile's),
    `flag` (flow-compile's), `type`, `default` (as text), `accepts` and
    `help`. docs/reference/CompileOptions.md lists them."""
    return [dict(row) for row in _compile_option_table()]


def _compile_option_table():
    global _OPTION_TABLE
    if _OPTION_TABLE is None:
        _OPTION_TABLE = {row["keyword"]: row for row in _compile_option_rows()}
    return _OPTION_TABLE.values()


_OPTION_TABLE = None


def _compile_options(options: dict, caller: str) -> dict:
    """`options` (compile options by keyword; None: the default) as the
    text the compiler reads, which checks each value."""
    _compile_option_table()
    texts = {}
    for keyword, value in options.items():
        row = _OPTION_TABLE.get(keyword)
        if row is None:
            raise TypeError(f"{caller}() got an unexpected keyword argument "
                            f"'{keyword}' (compile options: "
                            f"{', '.join(_OPTION_TABLE)})")
        if value is not None:
            texts[keyword] = _option_text(row, value)
    return texts


def _option_text(row: dict, value) -> str:
    """A compile option's value as text: booleans true/false, a mesh shape
    like 2x2, a path as its string."""
    keyword, kind = row["keyword"], row["type"]
    if isinstance(value, (bool, np.bool_)):
        if kind != "bool":
            raise FlowError(f"{keyword}: {value!r} is not "
                            f"{row['accepts']}")
        return "true" if value else "false"
    if kind == "mesh" and isinstance(value, (tuple, list)):
        return "x".join(str(int(d)) for d in value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, float) and kind == "bytes":
        return repr(value)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise FlowError(f"{keyword}: {value!r} is not {row['accepts']}")


def _options_doc() -> str:
    lines = ["", "    Compile options (flow.compile_options(); "
             "docs/reference/CompileOptions.md):"]
    for row in _compile_option_table():
        default = row["default"] or "none"
        lines.append(f"      {row['keyword']} ({row['flag']}, default "
                     f"{default}): {row['help']}; {row['accepts']}.")
    return "\n".join(lines) + "\n"


def _timeout_seconds(timeout) -> float:
    """The runtime's timeout: seconds, 0 for none, -1 for the environment's
    FLOW_COLLECTIVE_TIMEOUT (or the default, 300 s)."""
    if timeout is None:
        return -1.0
    seconds = float(timeout)
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError("timeout is a number of seconds >= 0 (0: wait "
                         f"forever), got {timeout!r}")
    return seconds


def load(path, threads: int = 0, parameters: str = "",
         timeout: Optional[float] = None,
         check_numerics: bool = False) -> CompiledModule:
    """Loads a .fbin written by flow-compile (or `CompiledModule.executable`
    saved to a file). A relative parameter archive is taken from the
    file's directory; `parameters` names another. `timeout` is
    flow.compile's."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise FlowError(f"cannot read '{path}': {e.strerror}") from e
    return CompiledModule(data, threads, parameters,
                          os.path.dirname(os.path.abspath(path)), timeout,
                          check_numerics)


def compile_ir(source: str, phase: str, **options):
    """The IR of `source` after compile phase `phase` (as flow-compile
    --compile-to prints it; the CUDA target's `ptx` phase gives the PTX
    text, and `fbin` the executable's bytes). `options` are the compile
    options, as compile_mlir's."""
    options = _compile_options(options, "compile_ir")
    options["compile_to"] = phase
    return _compile(source, options)


# ---------------------------------------------------------------------------
# flow.compile: models in, callables out
# ---------------------------------------------------------------------------

def _is_torch_tensor(x) -> bool:
    torch = _torch_if_loaded()
    return torch is not None and isinstance(x, torch.Tensor)


def _torch_if_loaded():
    import sys
    return sys.modules.get("torch")


def _to_array(x, index: int) -> np.ndarray:
    """A numpy view of `x` (no copy for CPU torch tensors and arrays)."""
    if isinstance(x, np.ndarray):
        return x
    if _is_torch_tensor(x):
        torch = _torch_if_loaded()
        if x.device.type != "cpu":
            raise FlowError(f"input {index} is on {x.device}; this executable "
                            "runs on the CPU")
        x = x.detach()
        if x.dtype == torch.bfloat16:
            import ml_dtypes
            return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return x.numpy()
    if isinstance(x, (bool, int, float, np.generic)):
        return np.asarray(x)
    if hasattr(x, "__dlpack__"):  # any other CPU array library
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError) as e:
            raise FlowError(f"input {index}: cannot view a "
                            f"{type(x).__name__} on the CPU ({e})") from e
    raise FlowError(f"input {index} is a {type(x).__name__}, not a tensor")


def _to_torch(array: np.ndarray):
    torch = _torch_if_loaded()
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


class CompiledModel:
    """A model compiled by flow.compile: call it like the model.

    Inputs may be torch tensors or numpy arrays; outputs are torch tensors
    when any input is one, numpy arrays otherwise, arranged as the model
    returns them (a tensor, a tuple, a dict, a model-output class)."""

    def __init__(self, module: CompiledModule, program, frontend: str):
        self.module = module
        self.program = program
        self.frontend = frontend
        self.text = program.text

    @property
    def executable(self) -> bytes:
        return self.module.executable

    def signature(self):
        return self.module.signature()

    def __call__(self, *args, **kwargs):
        if self.frontend == "onnx":
            return self._call_onnx(args, kwargs)
        return self._call_torch(args, kwargs)

    def _run(self, tensors):
        as_torch = any(_is_torch_tensor(t) for t in tensors)
        arrays = [_to_array(t, i) for i, t in enumerate(tensors)]
        try:
            outputs = self.module(*arrays)
        except FlowError as error:
            raise FlowError(self._name_input(str(error))) from None
        if as_torch:
            outputs = tuple(_to_torch(o) for o in outputs)
        return outputs

    def _name_input(self, message: str) -> str:
        """`message`, about "input N", with the name the model gives that
        input added at its end."""
        import re
        match = re.match(r"(?:function '[^']*': )?input (\d+)\b", message)
        names = getattr(self.program, "input_names", None) or []
        if not match or int(match.group(1)) >= len(names) or \
                not names[int(match.group(1))]:
            return message
        index = int(match.group(1))
        return f"{message} (input {index} is the model's '{names[index]}')"

    def _call_torch(self, args, kwargs):
        from torch.utils import _pytree as pytree
        leaves, spec = pytree.tree_flatten((args, kwargs))
        program = self.program
        if program.in_spec is not None and spec != program.in_spec:
            raise FlowError(
                "the inputs do not have the structure of the example inputs "
                f"the model was compiled with (expected {program.in_spec}, "
                f"got {spec})")
        tensors = [leaves[i] for i in program.input_leaves]
        outputs = self._run(tensors)
        for index, message in program.assertions:
            if not bool(outputs[index]):
                raise FlowError(f"the model's assertion failed: {message}")
        out_leaves = [outputs[v] if kind == "result" else v
                      for kind, v in program.output_leaves]
        if program.out_spec is None:
            return tuple(out_leaves)
        return pytree.tree_unflatten(out_leaves, program.out_spec)

    def local(self, *tensors):
        """Runs this process' program on its pieces of the inputs, in the
        program's input order (CompiledModule.local); torch tensors in give
        torch tensors out."""
        as_torch = any(_is_torch_tensor(t) for t in tensors)
        outputs = self.module.local(
            *[_to_array(t, i) for i, t in enumerate(tensors)])
        return tuple(_to_torch(o) for o in outputs) if as_torch else outputs

    def _call_onnx(self, args, kwargs):
        names = self.program.input_names
        if kwargs:
            if args:
                raise FlowError("pass ONNX inputs either in order or by name")
            unknown = set(kwargs) - set(names)
            if unknown:
                raise FlowError(f"unknown inputs {sorted(unknown)}; the model "
                                f"takes {names}")
            missing = [n for n in names if n not in kwargs]
            if missing:
                raise FlowError(f"missing inputs {missing}")
            args = tuple(kwargs[n] for n in names)
        if len(args) != len(names):
            raise FlowError(f"the model takes {len(names)} inputs {names}, "
                            f"got {len(args)}")
        outputs = self._run(list(args))
        return outputs[0] if len(outputs) == 1 else outputs


def _mesh_shape(mesh) -> Tuple[int, ...]:
    return (int(mesh),) if isinstance(mesh, int) else tuple(
        int(d) for d in mesh)


def _is_onnx(model) -> bool:
    if isinstance(model, (str, os.PathLike)):
        return str(model).endswith(".onnx")
    return type(model).__name__ == "ModelProto"


def compile(model: Any, example_args=(), example_kwargs=None, *,
            threads: int = 0, parameters: Optional[str] = None, sbp=None,
            timeout: Optional[float] = None, check_numerics: bool = False,
            cache: bool = True, dynamic=None, **options) -> CompiledModel:
    """Imports, compiles and loads `model`; returns a callable.

    `model` is a torch.nn.Module or torch.export.ExportedProgram (traced
    with `example_args`/`example_kwargs`), or an ONNX model (a path or a
    ModelProto; example inputs are not needed). Weights go to the
    safetensors file `parameters` (kept), or to a temporary file that is
    removed once the executable has mapped it.

    `mesh` (an int or a shape like (2, 2)) compiles for a device mesh, one
    process per device: run the script under `mpirun -np N`. `sbp` places
    inputs on it, by input name or position: {"x": flow.sbp.split(0)}, and
    weights by their name in the model ({"fc1.weight": flow.sbp.split(0)}:
    a torch Linear's weight is [out, in], so split(0) is column-parallel
    and split(1) row-parallel); a tuple of per-axis SBPs on an nd mesh;
    Flow places everything else, timing its choices on `mesh_spec` (a
    preset: "cpu-mpi", "h100-nvlink", "h200-nvlink", "h100-nodes"; or a
    JSON file describing the mesh, docs/distributed.md).
    `auto_parallel=True` lets it place the inputs and weights `sbp` does
    not name as well (the report compares its plan with plain data and
    tensor parallel, docs/distributed.md); `memory_limit` (bytes per
    device, an int or "16GiB"; default: the device memory of `mesh_spec`)
    bounds the plan's memory.
    Every process passes the global inputs and gets the global outputs.
    `timeout` (seconds; 0: none) bounds how long a collective, or the start
    or end of the job, waits for a peer: past it the job ends with an
    error naming the rank(s) that stopped. Default: FLOW_COLLECTIVE_TIMEOUT,
    else 300 s. The first mesh module of a process starts MPI; later ones
    set the timeout for all.
    `conv="gemm"` runs f32 convolutions as im2col and a GEMM instead of
    the runtime's convolution library (see compile_mlir). For
    `target="cuda"`, `gpu_arch` names the GPU (`"sm_80"`, `"sm_90"`) and
    `allow_tf32=True` lets f32 matrix products run in TF32 (as
    `torch.backends.cuda.matmul.allow_tf32`).
    `check_numerics=True` makes each call stop at the first NaN or infinity
    (in an input, or written by a kernel) with a FlowError naming the
    kernel, the ops it computes and their source lines, the element and its
    value (`compiled.module.check_numerics` turns it on and off).
    `dynamic` names dimensions of the inputs that vary between calls:
    {"x": {0: ("batch", 1, 8)}} (input name: {dimension: (symbol, min,
    max)}; inputs sharing a symbol share the size); for an ONNX model, the
    bounds of its own dim_param names: {"batch": (1, 8)}. The model is imported
    with those dimensions as size symbols; compiling past the import is
    not supported yet, and says so (docs/dialect.md).
    `cache=False` compiles even when the compile cache holds the
    executable, and does not store it (flow.cache; the cache keeps
    executables under ~/.cache/flow/compiled, FLOW_CACHE_DIR elsewhere).
    """
    texts = _compile_options(options, "compile")
    mesh = options.get("mesh")
    if sbp and mesh is None:
        raise FlowError("sbp= places inputs and weights on a mesh: pass "
                        "mesh=")
    if options.get("auto_parallel") and mesh is None:
        raise FlowError("auto_parallel=True plans for a mesh: pass mesh=")
    placements = (sbp, _mesh_shape(mesh)) if sbp else None
    keep = parameters is not None
    archive = os.fspath(parameters) if keep else None
    if not keep:
        fd, archive = tempfile.mkstemp(prefix="flow-", suffix=".safetensors")
        os.close(fd)
    try:
        frontend = "onnx" if _is_onnx(model) else "torch"
        if frontend == "onnx":
            from .onnx_import import import_program
            args = (model,)
        else:
            from .torch_import import import_program
            args = (model, example_args, example_kwargs)
        try:
            program = import_program(*args, parameters=archive,
                                     placements=placements, dynamic=dynamic)
        except ValueError as e:
            # A dynamic= the importer refuses: the caller's argument.
            if dynamic is None:
                raise
            raise FlowError(str(e)) from None
        module = CompiledModule(_compile(program.text, texts, bool(cache)),
                                threads,
                                timeout=timeout,
                                check_numerics=check_numerics)
    finally:
        if not keep and os.path.exists(archive):
            os.unlink(archive)
    return CompiledModel(module, program, frontend)


from .generation import CausalLM, compile_causal_lm  # noqa: E402
from . import cache, optim  # noqa: E402
from .training import TrainStep, compile_train  # noqa: E402

for _function in (compile, compile_mlir, compile_ir):
    _function.__doc__ += _options_doc()
del _function
