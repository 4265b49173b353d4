"""Flow: compile flow-dialect programs and run them from Python.

    import flow
    module = flow.compile_mlir(open("model.mlir").read())
    (y,) = module(x, w1, b1)               # numpy arrays in and out

The extension `flow._flow` is built by scripts/build.sh into
build/python/flow; `scripts/setup.sh`'s virtual environment finds it through
the path file it installs (or set PYTHONPATH=build/python).
"""

from ._flow import FlowError, Module as _Module, compile as _compile

__all__ = ["FlowError", "CompiledModule", "compile_mlir", "compile_ir"]


class CompiledModule:
    """A compiled executable, callable like a function.

    Calling it runs the executable's only function (or `function`) on numpy
    arrays and returns a tuple of numpy arrays.
    """

    def __init__(self, executable: bytes, threads: int = 0):
        self.executable = executable
        self._module = _Module(executable, threads)

    @property
    def functions(self):
        return list(self._module.functions)

    def signature(self, function=None):
        """(inputs, outputs): lists of (dtype, shape)."""
        return self._module.signature(self._pick(function))

    def __call__(self, *inputs, function=None):
        return tuple(self._module.run(self._pick(function), list(inputs)))

    def _pick(self, function):
        if function is not None:
            return function
        names = self.functions
        if len(names) != 1:
            raise FlowError(f"the executable has several functions {names}: "
                            "pass function=NAME")
        return names[0]


def compile_mlir(source: str, target: str = "cpu", threads: int = 0,
                 library_matmul: bool = True) -> CompiledModule:
    """Compiles flow-dialect MLIR text for `target` and loads it."""
    return CompiledModule(
        _compile(source, target=target, library_matmul=library_matmul),
        threads)


def compile_ir(source: str, phase: str, target: str = "cpu") -> str:
    """The IR of `source` after compile phase `phase` (as flow-compile
    --compile-to prints it)."""
    return _compile(source, target=target, compile_to=phase)
