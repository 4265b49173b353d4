"""The GPU check's plumbing, run here with the CUDA kernels emulated.

test/gpu/prepare.py compiles a kit and test/gpu/check.py compares each case
against PyTorch; on a GPU machine test/gpu/run.sh runs them on CUDA. Here the
kit is compiled for cuda-emulated (the CUDA mapping run on the CPU) and
checked against PyTorch on the CPU, so a broken script is found without a
GPU; a zero tolerance must turn the same case into a failure.
"""

import json
import subprocess
import sys

from conftest import ROOT, build_dir, require, require_program

require("torch")


def run(*args, check=True):
    done = subprocess.run([sys.executable, *map(str, args)],
                          capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_kit_checks_against_pytorch(tmp_path):
    kit = tmp_path / "kit"
    run(ROOT / "test/gpu/prepare.py", kit, "--target", "cuda-emulated",
        "--cases", "mlp-f32,cnn-f32")
    manifest = json.loads((kit / "manifest.json").read_text())
    assert set(manifest["cases"]) == {"mlp-f32", "cnn-f32"}
    assert all("error" not in e for e in manifest["cases"].values())
    check = [ROOT / "test/gpu/check.py", kit, "--device", "cpu",
             "--flow-run", build_dir() / "bin" / "flow-run"]
    done = run(*check, "--results", tmp_path / "ok.txt")
    results = (tmp_path / "ok.txt").read_text()
    assert "mlp-f32                f32   pass" in results
    assert "cnn-f32                f32   pass" in results
    assert "2 results, 0 failed" in done.stdout

    # The check can fail: no error is allowed at all, and a float32
    # product summed in another order differs somewhere.
    for entry in manifest["cases"].values():
        entry["atol"] = entry["rtol"] = 0.0
    (kit / "manifest.json").write_text(json.dumps(manifest))
    done = run(*check, "--results", tmp_path / "zero.txt", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL" in (tmp_path / "zero.txt").read_text()


def test_kit_checks_collectives(tmp_path):
    """The collectives case (every kind, uneven pieces) under mpirun -np 2,
    here on the CPU device; on a GPU machine on NCCL."""
    require_program("mpirun")
    kit = tmp_path / "kit"
    run(ROOT / "test/gpu/prepare.py", kit, "--target", "cuda-emulated",
        "--cases", "collectives-2")
    manifest = json.loads((kit / "manifest.json").read_text())
    assert manifest["cases"] == {}
    assert manifest["collectives"] == {"collectives-2": {"n": 2}}
    check = [ROOT / "test/gpu/check.py", kit, "--device", "cpu",
             "--flow-run", build_dir() / "bin" / "flow-run",
             "--results", tmp_path / "out.txt"]
    done = run(*check)
    results = (tmp_path / "out.txt").read_text()
    assert "collectives-2          f32   ok" in results, results
    assert "1 results, 0 failed" in done.stdout

    # Started from a process that has started MPI alone (a mesh module of 2
    # compiled in one process), whose MPI variables its children inherit:
    # mpirun must still start a job of its own.
    starter = (
        "import subprocess, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "import flow\n"
        "try:\n"
        "    flow.compile_mlir(open(sys.argv[2]).read())\n"
        "except flow.FlowError:\n"
        "    pass\n"
        "sys.exit(subprocess.run([sys.executable] + sys.argv[3:]).returncode)\n")
    done = run("-c", starter, build_dir() / "python",
               ROOT / "examples/mlp.mlir", *check)
    assert "1 results, 0 failed" in done.stdout, done.stdout


def test_kit_checks_training(tmp_path):
    """The training case: 10 AdamW steps by `flow-run --steps` (the state
    resident in the session; on a GPU, in its memory) against
    torch.optim.AdamW, and 4 + 6 steps through a saved state equal to 10.
    A kit whose first state is not the one PyTorch starts from fails."""
    kit = tmp_path / "kit"
    run(ROOT / "test/gpu/prepare.py", kit, "--target", "cuda-emulated",
        "--cases", "train-mlp")
    manifest = json.loads((kit / "manifest.json").read_text())
    assert manifest["training"] == {"train-mlp": {"steps": 10}}
    check = [ROOT / "test/gpu/check.py", kit, "--device", "cpu",
             "--flow-run", build_dir() / "bin" / "flow-run"]
    done = run(*check, "--results", tmp_path / "ok.txt")
    results = (tmp_path / "ok.txt").read_text()
    assert "train-mlp              f32   pass" in results, results
    assert "1 results, 0 failed" in done.stdout

    sys.path.insert(0, str(build_dir() / "python"))
    from flow.safetensors import load, save
    state = load(str(kit / "train-mlp.init.safetensors"))
    state["fc2.weight"] = state["fc2.weight"] * 1.5
    save(state, str(kit / "train-mlp.init.safetensors"))
    done = run(*check, "--results", tmp_path / "bad.txt", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    bad = (tmp_path / "bad.txt").read_text()
    assert "train-mlp              f32   FAIL" in bad, bad
    assert "losses differ" in bad, bad
