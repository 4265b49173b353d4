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


def run_stats(tmp_path, env, out="out"):
    fbin = compile_mlir(GEMM, tmp_path)
    rng = np.random.default_rng(0)
    args = []
    for i in range(2):
        path = tmp_path / f"in{i}.npy"
        np.save(path, rng.standard_normal((64, 64)).astype(np.float32))
        args.append(f"--input={path}")
    return subprocess.run([str(tool("flow-run")), str(fbin), *args, "--stats",
                           f"--output-dir={tmp_path / out}"],
                          capture_output=True, text=True, timeout=120, env=env)


def test_kernels_follow_the_cpu_features(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    proc = run_stats(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines()
                if l.startswith("openblas:"))
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


ONEDNN = pathlib.Path("/usr/lib/x86_64-linux-gnu/libdnnl.so.2").exists()


def test_gemm_library_is_onednn_when_installed(tmp_path):
    # scripts/setup.sh installs libdnnl-dev; FLOW_GEMM=openblas opts out.
    env = {k: v for k, v in os.environ.items() if k != "FLOW_GEMM"}
    proc = run_stats(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    gemm = next(l for l in proc.stdout.splitlines() if l.startswith("gemm:"))
    assert gemm.startswith("gemm: oneDNN" if ONEDNN else "gemm: OpenBLAS"), gemm
    env["FLOW_GEMM"] = "openblas"
    proc = run_stats(tmp_path, env, out="out-openblas")
    assert proc.returncode == 0, proc.stderr
    gemm = next(l for l in proc.stdout.splitlines() if l.startswith("gemm:"))
    assert gemm.startswith("gemm: OpenBLAS"), gemm
    # The same product either way, and numpy's: f32 sums of 64 products of
    # unit normals, whose summation orders differ (a few ulp of the ~8
    # magnitude of each entry).
    a, b = (np.load(tmp_path / f"in{i}.npy") for i in range(2))
    want = a.astype(np.float64) @ b.astype(np.float64)
    for out in ("out", "out-openblas"):
        got = np.load(tmp_path / out / "result_0.npy")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


def test_python_reports_the_blas():
    info = flow.blas_info()
    assert info["library"].startswith("OpenBLAS"), info
    assert info["kernels"] and info["kernels"] != "unknown", info
    assert info["chosen_by"], info
    assert info["gemm_library"].startswith("oneDNN" if ONEDNN else "OpenBLAS")


# A linear layer (constant weights) with C of 40 rows and 80 columns: Flow's
# own GEMM kernels where they are chosen (AVX-512 or AVX2 and FMA, the
# default or FLOW_GEMM=flow), the library with FLOW_GEMM=onednn.
LINEAR = """
import json, sys, torch, flow
torch.manual_seed(0)
layer = torch.nn.Linear(96, 80)
x = torch.randn(40, 96)
got = flow.compile(layer, (x,))(x)
with torch.no_grad():
    want = layer(x)
err = float((got - want).abs().max())
print(json.dumps({"err": err, "flow_gemm": flow.blas_info()["flow_gemm"]}))
"""


# The same layer in bf16 (precision="bf16": x and the weight rounded to
# bf16, products summed in f32), 300 rows of C: Flow's AVX-512 BF16 kernel
# where the CPU has it (any row count), else oneDNN's bf16 GEMM.
LINEAR_BF16 = """
import json, sys, torch, flow
torch.manual_seed(0)
layer = torch.nn.Linear(97, 80)
x = torch.randn(300, 97)
got = flow.compile(layer, (x,), precision="bf16")(x)
with torch.no_grad():
    want = torch.nn.functional.linear(
        x.bfloat16().double(), layer.weight.bfloat16().double(),
        layer.bias.double()).float()
err = float((got - want).abs().max())
print(json.dumps({"err": err, "flow_gemm": flow.blas_info()["flow_gemm"]}))
"""


def run_linear(gemm, program=LINEAR):
    import json
    import sys
    env = {k: v for k, v in os.environ.items() if k != "FLOW_GEMM"}
    if gemm:
        env["FLOW_GEMM"] = gemm
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_flow_gemm_kernel_where_chosen():
    flags = cpu_flags()
    kernels = {"avx2", "fma"} <= flags
    default = run_linear(None)
    if "avx512f" in flags:
        assert default["flow_gemm"].startswith(
            "Flow's avx512f 8x48 kernel"), default
        # bf16 operands on the AVX-512 BF16 kernel where the CPU has it.
        assert ("avx512bf16 8x48 for bf16 operands" in default["flow_gemm"]) \
            == ("avx512_bf16" in flags), default
    elif kernels:
        assert default["flow_gemm"].startswith(
            "Flow's avx2+fma 6x16 kernel"), default
    else:
        assert default["flow_gemm"] == \
            "off (Flow's kernels need AVX2 and FMA, or AVX-512)", default
    forced = run_linear("flow")
    library = run_linear("onednn")
    assert library["flow_gemm"] == "off (FLOW_GEMM=onednn)", library
    if kernels or "avx512f" in flags:
        assert forced["flow_gemm"].startswith("Flow's"), forced
    # Sums of 96 products of values of magnitude ~0.1 to 2 in f32, in
    # another order than eager's: within a few ulp of the ~2 magnitude.
    for result in (default, forced, library):
        assert result["err"] < 1e-5, result


def test_bf16_linear_on_flow_kernel_and_library():
    # Products of bf16 values are exact in f32; 97 of them summed in f32
    # (magnitudes up to ~4, sums up to ~10) are within a few ulp of 10.
    for gemm in (None, "onednn"):
        result = run_linear(gemm, LINEAR_BF16)
        assert result["err"] < 1e-5, (gemm, result)
