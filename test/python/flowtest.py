"""Helpers for end-to-end tests: compile with flow-compile, run with
flow-run, read the results back as numpy arrays."""

import pathlib
import subprocess

import numpy as np
import pytest

from conftest import FUSION, TARGET, build_dir, require

# bf16 arrays; ml_dtypes is in python/requirements.txt, so missing is a failure.
BF16 = np.dtype(require("ml_dtypes").bfloat16)

MLIR_TYPES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.bool_): "i1",
    BF16: "bf16",
}


def tensor_type(shape, dtype) -> str:
    dims = "x".join(str(d) for d in shape)
    elt = MLIR_TYPES[np.dtype(dtype)]
    return f"tensor<{dims}x{elt}>" if dims else f"tensor<{elt}>"


def tool(name: str) -> pathlib.Path:
    return build_dir() / "bin" / name


def compile_mlir(text: str, workdir: pathlib.Path, *args) -> pathlib.Path:
    src = workdir / "model.mlir"
    out = workdir / "model.fbin"
    src.write_text(text)
    proc = subprocess.run([str(tool("flow-compile")), str(src), "-o", str(out),
                           f"--fusion={FUSION}", f"--target={TARGET}", *args],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and TARGET == "cuda-emulated" and \
            "cannot run on CUDA yet" in proc.stderr:
        # A kernel shape the CUDA target refuses by name: reported as a
        # skip with the refusal, never as a pass.
        reason = next(line for line in proc.stderr.splitlines()
                      if "cannot run on CUDA yet" in line)
        pytest.skip(reason.split("error: ", 1)[-1])
    assert proc.returncode == 0, f"flow-compile failed:\n{proc.stderr}"
    return out


def run_fbin(fbin: pathlib.Path, inputs, workdir: pathlib.Path, *args):
    cmd = [str(tool("flow-run")), str(fbin)]
    for i, array in enumerate(inputs):
        path = workdir / f"input_{i}.npy"
        np.save(path, array)
        cmd.append(f"--input={path}")
    outdir = workdir / "out"
    cmd.append(f"--output-dir={outdir}")
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"flow-run failed:\n{proc.stderr}"
    results = []
    i = 0
    while (outdir / f"result_{i}.npy").exists():
        results.append(np.load(outdir / f"result_{i}.npy"))
        i += 1
    return results


def compile_and_run(text: str, inputs, workdir: pathlib.Path, *args):
    return run_fbin(compile_mlir(text, workdir), inputs, workdir, *args)


def as_bf16(result):
    """flow-run writes bf16 as raw 2-byte words ('<V2'); view as bfloat16."""
    return result.view(BF16) if result.dtype.kind == "V" else result
