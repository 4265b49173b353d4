"""The GEMM library's kernels follow the CPU, and what runs is reported."""

import os
import pathlib
import subprocess

import numpy as np

import flow
from flowtest import compile_mlir, tool

GEMM = """
func.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = flow.matmul %a, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
"""


def cpu_flags():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def expected_kernels(flags):
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return {"SkylakeX", "Cooperlake", "SapphireRapids"}
    if {"avx2", "fma"} <= flags:
        return {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"}
    return None  # OpenBLAS's own choice


def run_stats(tmp_path, env):
    fbin = compile_mlir(GEMM, tmp_path)
    rng = np.random.default_rng(0)
    args = []
    for i in range(2):
        path = tmp_path / f"in{i}.npy"
        np.save(path, rng.standard_normal((64, 64)).astype(np.float32))
        args.append(f"--input={path}")
    return subprocess.run([str(tool("flow-run")), str(fbin), *args, "--stats",
                           f"--output-dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=120, env=env)


def test_kernels_follow_the_cpu_features(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    proc = run_stats(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines() if l.startswith("gemm:"))
    want = expected_kernels(cpu_flags())
    if want is not None:
        assert "chosen by Flow from the CPU's features" in line, line
        assert any(f", {k} kernels" in line for k in want), line
    assert "warning" not in proc.stderr, proc.stderr


def test_slow_kernels_are_never_silent(tmp_path):
    env = dict(os.environ, OPENBLAS_CORETYPE="Prescott")
    proc = run_stats(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert "Prescott kernels (OPENBLAS_CORETYPE=Prescott)" in proc.stdout
    if {"avx2", "fma"} <= cpu_flags():
        assert ("warning: OpenBLAS runs its Prescott kernels, slower than "
                "this CPU allows") in proc.stderr, proc.stderr


def test_python_reports_the_blas():
    info = flow.blas_info()
    assert info["library"].startswith("OpenBLAS"), info
    assert info["kernels"] and info["kernels"] != "unknown", info
    assert info["chosen_by"], info
