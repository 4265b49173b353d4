"""The GPU check's plumbing, run here with the CUDA kernels emulated.

test/gpu/prepare.py compiles a kit and test/gpu/check.py compares each case
against PyTorch; on a GPU machine test/gpu/run.sh runs them on CUDA. Here the
kit is compiled for cuda-emulated (the CUDA mapping run on the CPU) and
checked against PyTorch on the CPU, so a broken script is found without a
GPU; a zero tolerance must turn the same case into a failure. The check must
never lose results: without transformers and torchvision, with a case that
raises, or with a section out of time, it still writes a complete results
file (one JSON line per case, a summary line, the Markdown table) saying
which cases were skipped, failed or not run, and why.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT, build_dir, require, require_program

require("torch")

PREPARE = ROOT / "test/gpu/prepare.py"
CHECK = ROOT / "test/gpu/check.py"
NOT_RUN = "not run (time)"


def run(*args, check=True, env=None):
    done = subprocess.run([sys.executable, *map(str, args)],
                          capture_output=True, text=True, env=env)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def check_command(kit, results, *extra, flow_run=None):
    return [CHECK, kit, "--device", "cpu", "--flow-run",
            flow_run or build_dir() / "bin" / "flow-run", "--results",
            results, *extra]


def read_results(path):
    """(header, {(section, case): row}, summary) of a results file; fails
    unless every line is JSON and the file is complete."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["record"] == "header", records[0]
    assert records[-1]["record"] == "summary", records[-1]
    rows = {(r["section"], r["case"]): r for r in records[1:-1]}
    assert len(rows) == len(records) - 2, "a case is recorded twice"
    for row in rows.values():
        assert row["status"], row
    return records[0], rows, records[-1]


def statuses(rows, section="check"):
    return {case: r["status"] for (s, case), r in rows.items()
            if s == section}


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    """An environment in which transformers and torchvision raise
    ImportError on import (stub packages first on PYTHONPATH), as on a GPU
    machine without them."""
    folder = tmp_path_factory.mktemp("hidden")
    for name in ("transformers", "torchvision"):
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(
            f'raise ImportError("{name} is hidden from this test")\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(folder)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


@pytest.fixture(scope="module")
def small_kit(tmp_path_factory, hidden):
    """The dry run's kit (`prepare.py --small`), made without transformers
    and torchvision: the cases that need them are recorded as skipped."""
    kit = tmp_path_factory.mktemp("small") / "kit"
    run(PREPARE, kit, "--target", "cuda-emulated", "--small", env=hidden)
    return kit


def copy_kit(kit, tmp_path, **changes):
    """A copy of `kit` with manifest entries changed: {case: {key: value}}
    (None removes the key)."""
    copy = tmp_path / "kit"
    shutil.copytree(kit, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    for name, values in changes.items():
        entry = manifest["cases"].setdefault(name, {})
        for key, value in values.items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return copy, manifest


def test_kit_checks_against_pytorch(tmp_path):
    kit = tmp_path / "kit"
    run(PREPARE, kit, "--target", "cuda-emulated", "--cases",
        "mlp-f32,cnn-f32")
    manifest = json.loads((kit / "manifest.json").read_text())
    assert set(manifest["cases"]) == {"mlp-f32", "cnn-f32"}
    assert all("error" not in e for e in manifest["cases"].values())
    # The libraries the executables call (from the compile report).
    assert manifest["cases"]["mlp-f32"]["libraries"] == ["cublaslt"]
    assert "cudnn" in manifest["cases"]["cnn-f32"]["libraries"]
    done = run(*check_command(kit, tmp_path / "ok.jsonl"))
    _, rows, summary = read_results(tmp_path / "ok.jsonl")
    assert statuses(rows) == {"mlp-f32": "pass", "cnn-f32": "pass"}
    assert summary["failed"] == 0
    assert "2 results, 0 failed" in done.stdout
    table = (tmp_path / "ok.md").read_text()
    assert "| mlp-f32 | f32 | pass |" in table, table

    # The check can fail: no error is allowed at all, and a float32
    # product summed in another order differs somewhere.
    for entry in manifest["cases"].values():
        entry["atol"] = entry["rtol"] = 0.0
    (kit / "manifest.json").write_text(json.dumps(manifest))
    done = run(*check_command(kit, tmp_path / "zero.jsonl"), check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    _, rows, summary = read_results(tmp_path / "zero.jsonl")
    assert "FAIL" in statuses(rows).values()
    assert summary["failed"] >= 1
    assert "elements outside atol 0.0" in (tmp_path / "zero.md").read_text()


def test_dry_run_without_transformers_and_torchvision(small_kit, hidden,
                                                      tmp_path):
    """The dry run where neither package imports, neither where the kit
    is made nor where it is checked: a complete results file naming the
    skipped cases and why, and every other case run."""
    manifest = json.loads((small_kit / "manifest.json").read_text())
    assert "transformers is not importable" in \
        manifest["cases"]["bert2-f32"]["skipped"]
    # Cases of a kit made where both import (the usual GPU kit), checked
    # where they do not: skipped before anything is built.
    compiled = {"precision": "f32", "atol": 1e-3, "rtol": 1e-3,
                "bench": True, "weights_digest": "-", "inputs_digest": "-",
                "archive": "missing.safetensors.xz", "libraries": []}
    kit, _ = copy_kit(small_kit, tmp_path,
                      **{"bert-b1-f32": dict(compiled, model="bert"),
                         "resnet50-b1-f32": dict(compiled, model="resnet50")})
    results = tmp_path / "out.jsonl"
    done = run(*check_command(kit, results, "--bench", "--compile-budget",
                              "0"), env=hidden)
    header, rows, summary = read_results(results)
    assert header["transformers"] == "not importable"
    check = statuses(rows)
    assert check["mlp-f32"] == "pass"
    assert check["cnn-f32"] == "pass"
    assert check["gemm-f32-256"] == "pass"
    assert check["gemm-bf16-256"] == "pass"
    assert check["train-mlp"] == "pass"
    assert check["collectives-2"] in ("ok", "skipped")
    for name, package in (("bert2-f32", "transformers"),
                          ("bert-b1-f32", "transformers"),
                          ("resnet50-b1-f32", "torchvision")):
        row = rows["check", name]
        assert row["status"] == "skipped", row
        assert f"{package} is not importable" in row["why"], row
    # Their benchmarks say the same, and torch.compile does not run them.
    for name, package in (("bert-b1-f32", "transformers"),
                          ("resnet50-b1-f32", "torchvision")):
        row = rows["bench", name]
        assert row["status"] == "skipped", row
        assert f"{package} is not importable" in row["why"], row
        assert rows["compile", name]["status"] == "skipped"
    assert statuses(rows, "bench")["gemm-f32-256"] == "ran"
    assert summary["failed"] == 0, done.stdout
    table = (tmp_path / "out.md").read_text()
    assert "| resnet50-b1-f32 | f32 | skipped |" in table, table
    assert "torchvision is not importable" in table


def test_a_case_that_raises_is_recorded_and_the_next_ones_run(small_kit,
                                                              tmp_path):
    """A case whose check raises (its parameter archive is gone) is a FAIL
    with its error and traceback; the cases after it still run, and the
    file is complete."""
    kit, manifest = copy_kit(small_kit, tmp_path)
    (kit / manifest["cases"]["mlp-f32"]["archive"]).unlink()
    results = tmp_path / "out.jsonl"
    done = run(*check_command(kit, results), check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    _, rows, summary = read_results(results)
    row = rows["check", "mlp-f32"]
    assert row["status"] == "FAIL", row
    assert row["why"].startswith("FileNotFoundError"), row
    assert "check_case" in row["traceback"], row
    check = statuses(rows)
    assert check["cnn-f32"] == "pass"
    assert check["gemm-bf16-256"] == "pass"
    assert check["train-mlp"] == "pass"
    assert summary["failed"] == 1
    assert "| mlp-f32 | f32 | FAIL | " in (tmp_path / "out.md").read_text()


def test_sections_out_of_time_are_not_run(small_kit, tmp_path):
    """A section given no time: its cases are "not run (time)", not FAIL,
    and the sections before it still ran every case."""
    kit, _ = copy_kit(small_kit, tmp_path, **{"mlp-f32": {"bench": True}})
    results = tmp_path / "out.jsonl"
    run(*check_command(kit, results, "--bench", "--bench-budget", "0",
                       "--compile-budget", "0"))
    _, rows, summary = read_results(results)
    assert statuses(rows)["mlp-f32"] == "pass"
    assert statuses(rows, "bench") == {"mlp-f32": NOT_RUN,
                                       "gemm-f32-256": NOT_RUN,
                                       "gemm-bf16-256": NOT_RUN}
    assert statuses(rows, "compile") == {"mlp-f32": NOT_RUN}
    assert summary["failed"] == 0
    assert summary["counts"][NOT_RUN] == 4


def test_a_case_that_runs_out_of_time_is_not_run(small_kit, tmp_path):
    """flow-run that never ends: stopped when the correctness budget runs
    out (its whole process group), "not run (time)"; the cases after it
    are not started, and the check ends within its budget."""
    hang = tmp_path / "flow-run"
    hang.write_text("#!/bin/sh\nsleep 600 &\nexec sleep 600\n")
    hang.chmod(0o755)
    results = tmp_path / "out.jsonl"
    start = time.time()
    run(*check_command(small_kit, results, "--check-budget", "5",
                       flow_run=hang))
    assert time.time() - start < 60
    _, rows, summary = read_results(results)
    row = rows["check", "mlp-f32"]
    assert row["status"] == NOT_RUN, row
    assert "stopped after" in row["why"], row
    check = statuses(rows)
    assert check["cnn-f32"] == NOT_RUN
    assert check["train-mlp"] == NOT_RUN
    assert "FAIL" not in check.values()
    assert summary["failed"] == 0


def test_torch_compile_runs_last_within_its_budget(small_kit, tmp_path):
    """torch.compile runs in a child process after every check and
    benchmark: with time it reports its ms per call against Flow's; with
    too little (a cold compile cache) the child is stopped and the case is
    "not run (time)"."""
    kit, _ = copy_kit(small_kit, tmp_path, **{"mlp-f32": {"bench": True}})
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cold"))
    results = tmp_path / "short.jsonl"
    start = time.time()
    run(*check_command(kit, results, "--bench", "--quick",
                       "--compile-budget", "3"), env=env)
    assert time.time() - start < 120
    _, rows, _ = read_results(results)
    assert statuses(rows, "bench")["mlp-f32"] == "ran"
    row = rows["compile", "mlp-f32"]
    assert row["status"] == NOT_RUN, row
    assert "torch.compile's budget (3 s) ran out" in row["why"]
    sections = [section for section, _ in rows]
    assert sections == sorted(sections, key=["check", "bench",
                                             "compile"].index)

    results = tmp_path / "long.jsonl"
    run(*check_command(kit, results, "--bench", "--quick",
                       "--compile-budget", "300"))
    _, rows, _ = read_results(results)
    row = rows["compile", "mlp-f32"]
    assert row["status"] == "ran", row
    assert row["compile_ms"] > 0
    assert row["compile_over_flow"] > 0


def test_kit_checks_collectives(tmp_path):
    """The collectives case (every kind, uneven pieces) under mpirun -np 2,
    here on the CPU device; on a GPU machine on NCCL."""
    require_program("mpirun")
    kit = tmp_path / "kit"
    run(PREPARE, kit, "--target", "cuda-emulated", "--cases",
        "collectives-2")
    manifest = json.loads((kit / "manifest.json").read_text())
    assert manifest["cases"] == {}
    assert list(manifest["collectives"]) == ["collectives-2"]
    assert manifest["collectives"]["collectives-2"]["n"] == 2
    assert "nccl" in manifest["collectives"]["collectives-2"]["libraries"]
    results = tmp_path / "out.jsonl"
    check = check_command(kit, results)
    done = run(*check)
    _, rows, _ = read_results(results)
    assert statuses(rows) == {"collectives-2": "ok"}, rows
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

    # Without NCCL (as run.sh finds it missing): skipped, with the reason.
    done = run(*check, "--unavailable", "nccl=libnccl.so.2 not found")
    _, rows, _ = read_results(results)
    row = rows["check", "collectives-2"]
    assert row["status"] == "skipped", row
    assert row["why"] == "needs nccl: libnccl.so.2 not found"


def test_gemm_cases_are_skipped_without_cublaslt(small_kit, tmp_path):
    """Where run.sh finds no cuBLASLt, every case whose executable calls it
    (the GEMMs, the MLP) is skipped with that reason; the others run."""
    results = tmp_path / "out.jsonl"
    run(*check_command(small_kit, results, "--unavailable",
                       "cublaslt=libcublasLt.so.12 not found"))
    _, rows, summary = read_results(results)
    for name in ("gemm-f32-256", "gemm-bf16-256", "mlp-f32"):
        row = rows["check", name]
        assert row["status"] == "skipped", row
        assert row["why"] == "needs cublaslt: libcublasLt.so.12 not found"
    manifest = json.loads((small_kit / "manifest.json").read_text())
    runs = [n for n, e in manifest["cases"].items()
            if "cublaslt" not in e.get("libraries", ["cublaslt"])]
    for name in runs:
        assert rows["check", name]["status"] == "pass", rows["check", name]
    assert summary["failed"] == 0


def test_kit_checks_training(tmp_path):
    """The training case: 10 AdamW steps by `flow-run --steps` (the state
    resident in the session; on a GPU, in its memory) against
    torch.optim.AdamW, and 4 + 6 steps through a saved state equal to 10.
    A kit whose first state is not the one PyTorch starts from fails."""
    kit = tmp_path / "kit"
    run(PREPARE, kit, "--target", "cuda-emulated", "--cases", "train-mlp")
    manifest = json.loads((kit / "manifest.json").read_text())
    assert list(manifest["training"]) == ["train-mlp"]
    assert manifest["training"]["train-mlp"]["steps"] == 10
    check = check_command(kit, tmp_path / "ok.jsonl")
    done = run(*check)
    _, rows, _ = read_results(tmp_path / "ok.jsonl")
    assert statuses(rows) == {"train-mlp": "pass"}, rows
    assert "1 results, 0 failed" in done.stdout

    sys.path.insert(0, str(build_dir() / "python"))
    from flow.safetensors import load, save
    state = load(str(kit / "train-mlp.init.safetensors"))
    state["fc2.weight"] = state["fc2.weight"] * 1.5
    save(state, str(kit / "train-mlp.init.safetensors"))
    check = check_command(kit, tmp_path / "bad.jsonl")
    done = run(*check, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    _, rows, _ = read_results(tmp_path / "bad.jsonl")
    row = rows["check", "train-mlp"]
    assert row["status"] == "FAIL", row
    assert "losses differ" in row["why"], row


def test_check_without_torch_still_writes_results(small_kit, tmp_path):
    """Where PyTorch itself does not import, every case of the kit is
    still named in a complete results file, as skipped with the reason."""
    stubs = tmp_path / "stubs"
    (stubs / "torch").mkdir(parents=True)
    (stubs / "torch" / "__init__.py").write_text(
        'raise ImportError("torch is hidden from this test")\n')
    env = dict(os.environ, PYTHONPATH=str(stubs))
    results = tmp_path / "out.jsonl"
    done = run(*check_command(small_kit, results), env=env, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    header, rows, _ = read_results(results)
    assert "torch is hidden" in header["error"]
    manifest = json.loads((small_kit / "manifest.json").read_text())
    assert set(statuses(rows)) == (set(manifest["cases"]) |
                                   set(manifest["gemm"]) |
                                   set(manifest["training"]) |
                                   set(manifest["collectives"]))
    assert set(statuses(rows).values()) == {"skipped"}
