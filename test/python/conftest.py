"""Shared fixtures and helpers for Flow's Python tests.

Dependencies: everything that scripts/setup.sh installs (python/requirements.txt
and the apt packages) is required. A test that needs one that is missing
fails and names it (`require`, `require_program`); it never skips, so a
broken environment cannot pass as green. The only legitimate skip is
hardware the machine lacks: mark such tests `@pytest.mark.requires_gpu`.
"""

import functools
import importlib
import os
import pathlib
import shutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

SETUP_HINT = "install it with scripts/setup.sh"


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("FLOW_BUILD_DIR", ROOT / "build"))


# The `flow` package is built into build/python (sources plus extension).
sys.path.insert(0, str(build_dir() / "python"))


def require(module: str):
    """Imports and returns `module`; fails the calling test (or, at module
    level, the collection of its file) when it cannot be imported."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        pytest.fail(f"Python package '{module}' is required but cannot be "
                    f"imported ({error}); {SETUP_HINT} (python/requirements.txt)",
                    pytrace=False)


def mpirun_env(**extra) -> dict:
    """The environment to launch mpirun with: this one without an MPI job's
    own variables (a process that has started MPI alone, as compiling a
    mesh module in-process does, leaves OMPI_*/PMIX_* to its children, and
    mpirun then fails), allowed to run as root and to put more ranks than
    cores on this machine; plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", **extra)
    return env


def require_program(name: str) -> str:
    """The path of program `name` on PATH; fails when there is none."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"program '{name}' is required but not on PATH; "
                    f"{SETUP_HINT}", pytrace=False)
    return path


@functools.lru_cache(maxsize=None)
def have_gpu() -> bool:
    """Whether an NVIDIA GPU is present (its device node or nvidia-smi)."""
    if pathlib.Path("/dev/nvidia0").exists():
        return True
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    import subprocess
    try:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and "GPU" in proc.stdout


# FLOW_TEST_FUSION=off runs the tests on one-op kernels (flow-compile
# --fusion=off, fusion=False in Python): every end-to-end numeric test must
# pass both ways (scripts/test.sh runs them both ways).
FUSION = os.environ.get("FLOW_TEST_FUSION", "on")
if FUSION not in ("on", "off"):
    raise RuntimeError(f"FLOW_TEST_FUSION must be on or off, got {FUSION!r}")


# FLOW_TEST_TARGET=cuda-emulated runs the end-to-end tests with the CUDA
# target's kernels (as mapped onto thread blocks) emulated on the CPU, so
# that the GPU mapping is checked against the same references without a GPU
# (scripts/test.sh runs the numeric suites so too).
TARGET = os.environ.get("FLOW_TEST_TARGET", "cpu")
if TARGET not in ("cpu", "cuda-emulated"):
    raise RuntimeError("FLOW_TEST_TARGET must be cpu or cuda-emulated, got "
                       f"{TARGET!r}")


def _on_target(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        import flow
        import pytest
        kwargs.setdefault("target", TARGET)
        try:
            return function(*args, **kwargs)
        except flow.FlowError as e:
            # A kernel shape the CUDA target refuses by name: a skip with
            # the refusal, never a pass.
            lines = [l for l in str(e).splitlines()
                     if "cannot run on CUDA yet" in l]
            if lines and kwargs["target"] == "cuda-emulated":
                pytest.skip(lines[0].split("error: ", 1)[-1])
            raise
    return wrapper


def _without_fusion(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        kwargs["fusion"] = False
        return function(*args, **kwargs)
    return wrapper


_CACHE_DIR = None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_gpu: the test needs an NVIDIA GPU; skipped "
        "(with that reason) on a machine without one")
    # The compile cache of this run (its processes and mpirun's share it),
    # empty at the start, not the user's.
    global _CACHE_DIR
    if "FLOW_CACHE_DIR" not in os.environ:
        import tempfile
        _CACHE_DIR = tempfile.mkdtemp(prefix="flow-test-cache-")
        os.environ["FLOW_CACHE_DIR"] = _CACHE_DIR
    if FUSION == "off":
        import flow
        flow.compile = _without_fusion(flow.compile)
        flow.compile_mlir = _without_fusion(flow.compile_mlir)
    if TARGET != "cpu":
        import flow
        flow.compile = _on_target(flow.compile)
        flow.compile_mlir = _on_target(flow.compile_mlir)


def pytest_unconfigure(config):
    if _CACHE_DIR is not None:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def pytest_report_header(config):
    return (f"fusion: {FUSION} (FLOW_TEST_FUSION), target: {TARGET} "
            "(FLOW_TEST_TARGET)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_gpu") and not have_gpu():
        pytest.skip("needs an NVIDIA GPU")


@pytest.fixture(scope="session")
def flow_opt() -> pathlib.Path:
    path = build_dir() / "bin" / "flow-opt"
    if not path.exists():
        pytest.fail(f"{path} is missing: build Flow first (scripts/build.sh)")
    return path


@pytest.fixture(scope="session")
def test_dir() -> pathlib.Path:
    return ROOT / "test"
