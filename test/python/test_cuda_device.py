"""The CUDA device end to end. These need an NVIDIA GPU and its driver and are
reported as skipped without one; test/gpu/run.sh covers the same ground (and
the timings) on a GPU machine that has no Flow compiler."""

import subprocess

import numpy as np
import pytest

from conftest import ROOT, build_dir, require

torch = require("torch")
import flow  # noqa: E402

pytestmark = pytest.mark.requires_gpu


def flow_run(fbin, inputs, out, *extra):
    subprocess.run([str(build_dir() / "bin" / "flow-run"), str(fbin),
                    f"--output-dir={out}", *extra] +
                   [f"--input={p}" for p in inputs], check=True)
    return np.load(out / "result_0.npy")


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_cuda_matches_cpu(model, tmp_path):
    source = ROOT / "test" / "models" / f"{model}.mlir"
    compiler = str(build_dir() / "bin" / "flow-compile")
    for target in ("cpu", "cuda"):
        subprocess.run([compiler, str(source), f"--target={target}", "-o",
                        str(tmp_path / f"{target}.fbin")], check=True)
    module = flow.compile_mlir(source.read_text())
    rng = np.random.default_rng(0)
    inputs = []
    for i, (dtype, shape) in enumerate(module.signature()[0]):
        assert dtype == "f32", f"input {i} is {dtype}"
        inputs.append(tmp_path / f"in{i}.npy")
        np.save(inputs[-1], rng.standard_normal(shape).astype(np.float32))
    cpu = flow_run(tmp_path / "cpu.fbin", inputs, tmp_path / "cpu")
    gpu = flow_run(tmp_path / "cuda.fbin", inputs, tmp_path / "cuda")
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-4)


def test_python_compiles_for_cuda():
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 8),
                                torch.nn.Softmax(-1)).eval()
    x = torch.randn(16, 64)
    compiled = flow.compile(model, (x,), target="cuda")
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(),
                                   rtol=1e-4, atol=1e-5)
