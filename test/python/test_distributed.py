"""Mesh programs under mpirun: the models of test/models in data parallel,
tensor parallel and a 2-D mix give the results of one process.

Each case compiles the global program twice, once for one device and once
with `flow-compile --mesh` and the SBPs of the case on its arguments, runs
the first with flow-run and the second under `mpirun -np N flow-run`, and
compares (f32, 1e-5 relative to the output's largest magnitude: tensor
parallel sums partial products in another order than one device does).
Oversubscribed on 2 cores, which is fine: correctness, not speed.
"""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT
from flowtest import tool

MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="needs Open MPI's mpirun")

MODELS = ROOT / "test" / "models"


def with_sbp(text, sbps):
    """The model text with `flow.sbp` attributes on the named arguments."""
    for name, sbp in sbps.items():
        pattern = re.compile(r"(%" + name + r": tensor<[^>]*>)")
        text, n = pattern.subn(
            r"\1 {flow.sbp = #flow.sbp<[" + sbp + r"]>}", text, count=1)
        assert n == 1, name
    return text


def arguments(text):
    sig = text[text.index("func.func @forward("):text.index(") ->")]
    return re.findall(r"%(\w+): tensor<([0-9x]+)xf32>", sig)


def write_inputs(text, directory, rng, scale=1.0):
    """Random .npy inputs for the model's arguments; their --input flags."""
    flags = []
    for name, shape in arguments(text):
        value = rng.standard_normal(
            [int(d) for d in shape.split("x")]).astype(np.float32) * scale
        if name.startswith("v"):  # batch-norm variances
            value = np.abs(value) + 1
        path = directory / f"{name}.npy"
        np.save(path, value)
        flags.append(f"--input={path}")
    return flags


def mpirun(n, args, env_extra=None, **kwargs):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", **(env_extra or {}))
    return subprocess.run([MPIRUN, "-np", str(n), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300,
                          **kwargs)


def compile_text(text, out, *flags):
    src = out.with_suffix(".mlir")
    src.write_text(text)
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(out), *flags], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


def run_case(tmp_path, model, ranks, mesh, sbps, scale=0.1):
    text = (MODELS / f"{model}.mlir").read_text()
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0), scale)
    single = compile_text(text, tmp_path / "single.fbin")
    one = subprocess.run([str(tool("flow-run")), str(single), *inputs,
                          f"--output-dir={tmp_path / 'one'}", "--threads=1"],
                         capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    mesh_fbin = compile_text(with_sbp(text, sbps), tmp_path / "mesh.fbin",
                             f"--mesh={mesh}",
                             f"--report={tmp_path / 'report.json'}")
    many = mpirun(ranks, [tool("flow-run"), mesh_fbin, *inputs,
                          f"--output-dir={tmp_path / 'many'}", "--threads=1"])
    assert many.returncode == 0, many.stderr + many.stdout
    want = np.load(tmp_path / "one" / "result_0.npy")
    got = np.load(tmp_path / "many" / "result_0.npy")
    assert got.shape == want.shape
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)
    return json.loads((tmp_path / "report.json").read_text())


MLP_DP = {"x": "S(0)"}
MLP_TP = {"w1": "S(1)", "b1": "S(0)", "w2": "S(0)"}


@pytest.mark.parametrize("ranks", [2, 4])
def test_mlp_data_parallel(tmp_path, ranks):
    report = run_case(tmp_path, "mlp", ranks, str(ranks), MLP_DP)
    # One program for every device, one collective: the result's gather.
    assert report["collective_ops"] == [
        {"function": "forward", "op": "all_gather", "mesh_axes": [0],
         "bytes_per_device": 16 * 10 * 4}]


def test_mlp_data_parallel_uneven(tmp_path):
    # 16 rows over 3 devices: 6, 5 and 5.
    run_case(tmp_path, "mlp", 3, "3", MLP_DP)


@pytest.mark.parametrize("ranks", [2, 4])
def test_mlp_tensor_parallel(tmp_path, ranks):
    report = run_case(tmp_path, "mlp", ranks, str(ranks), MLP_TP)
    # Column split then row split leaves partial sums; the greedy plan
    # reduce-scatters them (cheaper than an all-reduce) into a batch split
    # for the rest and gathers the result: two collectives.
    ops = [c["op"] for c in report["collective_ops"]
           if c["function"] == "forward_r0"]
    assert ops == ["reduce_scatter", "all_gather"]
    # Per device: the 16x128 f32 partial sums reduced, then the 16x10
    # result gathered.
    sizes = [c["bytes_per_device"] for c in report["collective_ops"]
             if c["function"] == "forward_r0"]
    assert sizes == [16 * 128 * 4, 16 * 10 * 4]


def test_mlp_2d(tmp_path):
    run_case(tmp_path, "mlp", 4, "2x2",
             {"x": "S(0), B", "w1": "B, S(1)", "b1": "B, S(0)",
              "w2": "B, S(0)"})


@pytest.mark.parametrize("ranks", [2, 4])
def test_transformer_data_parallel(tmp_path, ranks):
    # Batch 2 splits over 2 devices; on 4, the sequence dimension.
    sbp = "S(0)" if ranks == 2 else "S(1)"
    run_case(tmp_path, "transformer", ranks, str(ranks), {"x": sbp})


def test_transformer_tensor_parallel(tmp_path):
    run_case(tmp_path, "transformer", 2, "2",
             {"wq": "S(1)", "wk": "S(1)", "wv": "S(1)"})


def test_transformer_2d(tmp_path):
    run_case(tmp_path, "transformer", 4, "2x2", {"x": "S(0), S(1)"})


def test_cnn_data_parallel(tmp_path):
    run_case(tmp_path, "cnn", 2, "2", {"x": "S(0)"})


def test_cnn_channel_parallel(tmp_path):
    run_case(tmp_path, "cnn", 2, "2", {"k1": "S(0)"})


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

def test_wrong_rank_count_is_an_error_not_a_hang(tmp_path):
    text = with_sbp((MODELS / "mlp.mlir").read_text(), MLP_DP)
    fbin = compile_text(text, tmp_path / "mesh.fbin", "--mesh=2")
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0))
    result = mpirun(3, [tool("flow-run"), fbin, *inputs])
    assert result.returncode != 0
    assert ("mesh of 2 devices but 3 processes are running it (start it with "
            "mpirun -np 2)") in result.stderr
    alone = subprocess.run([str(tool("flow-run")), str(fbin), *inputs],
                           capture_output=True, text=True)
    assert alone.returncode == 1
    assert "but 1 process is running it" in alone.stderr


def test_split_longer_than_the_dimension_is_refused(tmp_path):
    text = with_sbp((MODELS / "transformer.mlir").read_text(), {"x": "S(0)"})
    src = tmp_path / "t.mlir"
    src.write_text(text)
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(tmp_path / "t.fbin"), "--mesh=4"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "error" in result.stderr and "S(0)" in result.stderr


def test_bad_mesh_flag(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text((MODELS / "mlp.mlir").read_text())
    result = subprocess.run([str(tool("flow-compile")), str(src), "-o",
                             str(tmp_path / "m.fbin"), "--mesh=2xx"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "--mesh needs a shape like 4 or 2x2, got '2xx'" in result.stderr


# ---------------------------------------------------------------------------
# Python: flow.compile(..., mesh=, sbp=) under mpirun -np N python
# ---------------------------------------------------------------------------

SCRIPT = '''
import sys
import numpy as np
import torch
import flow

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                            torch.nn.Linear(64, 8)).eval()
x = torch.randn(8, 32)
mesh = eval(sys.argv[1])
sbp = eval(sys.argv[2])
compiled = flow.compile(model, (x,), mesh=mesh, sbp=sbp)
y = compiled(x)
with torch.no_grad():
    want = model(x)
assert isinstance(y, torch.Tensor) and y.shape == want.shape
err = float((y - want).abs().max() / want.abs().max())
print(f"rank {compiled.module.rank} err {err:.3g}", flush=True)
sys.exit(0 if err < 1e-5 else 1)
'''


@pytest.mark.parametrize("ranks,mesh,sbp", [
    (2, "2", '{"input": flow.sbp.split(0)}'),
    (2, "2", '{}'),
    (4, "(2, 2)", '{0: (flow.sbp.split(0), flow.sbp.broadcast)}'),
])
def test_python_under_mpirun(tmp_path, ranks, mesh, sbp):
    import sys
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env_path = str(ROOT / "build" / "python")
    result = mpirun(ranks, [sys.executable, script, mesh, sbp],
                    cwd=tmp_path,
                    env_extra={"PYTHONPATH": env_path})
    assert result.returncode == 0, result.stdout + result.stderr
    # Every rank checked its global outputs (a failing one exits 1).
    seen = sorted(re.findall(r"rank (\d+) err", result.stdout))
    assert seen == [str(r) for r in range(ranks)], result.stdout


def test_python_sbp_errors():
    torch = pytest.importorskip("torch")
    import flow
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with pytest.raises(flow.FlowError, match="pass mesh="):
        flow.compile(model, (x,), sbp={0: flow.sbp.split(0)})
    with pytest.raises(ValueError, match="the inputs are"):
        flow.compile(model, (x,), mesh=2, sbp={"nope": flow.sbp.split(0)})
    with pytest.raises(ValueError, match="needs 2 entries"):
        flow.compile(model, (x,), mesh=(2, 2), sbp={0: flow.sbp.split(0)})
    # Outside mpirun, a mesh of 2 is one process short: a clear error.
    with pytest.raises(flow.FlowError, match="start it with mpirun -np 2"):
        flow.compile(model, (x,), mesh=2)


@pytest.mark.parametrize("sbps,program", [(MLP_DP, "forward"),
                                          (MLP_TP, "forward_r{rank}")])
def test_collective_bytes_match_the_report(tmp_path, sbps, program):
    text = with_sbp((MODELS / "mlp.mlir").read_text(), sbps)
    fbin = compile_text(text, tmp_path / "mesh.fbin", "--mesh=2",
                        f"--report={tmp_path / 'r.json'}")
    report = json.loads((tmp_path / "r.json").read_text())
    inputs = write_inputs(text, tmp_path, np.random.default_rng(1))
    result = mpirun(2, [tool("flow-run"), fbin, *inputs, "--stats",
                        "--threads=1"])
    assert result.returncode == 0, result.stderr
    measured = {}
    for rank, index, size in re.findall(
            r"rank (\d+) collective (\d+): (\d+) bytes", result.stdout):
        measured.setdefault(int(rank), []).append((int(index), int(size)))
    for rank in (0, 1):
        name = program.format(rank=rank)
        planned = [c["bytes_per_device"] for c in report["collective_ops"]
                   if c["function"] == name]
        assert planned, name
        assert [s for _, s in sorted(measured[rank])] == planned


# ---------------------------------------------------------------------------
# Each boxing route at run time, with uneven pieces
# ---------------------------------------------------------------------------

ROUTES = {
    # name: (mesh, argument sbp, result sbp, global shape)
    "all_to_all": ("3", "S(0)", "S(1)", (7, 5)),
    "all_gather_dim1": ("3", "S(1)", "B", (4, 7)),
    "reduce_scatter": ("2", "P", "S(1)", (3, 5)),
    "all_reduce": ("2", "P", "B", (3, 5)),
    "slice": ("3", "B", "S(0)", (7, 2)),
    "two_axes": ("2x2", "S(0), S(1)", "S(1), S(0)", (6, 5)),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_boxing_routes_at_run_time(tmp_path, route):
    mesh, arg_sbp, result_sbp, shape = ROUTES[route]
    ranks = int(np.prod([int(d) for d in mesh.split("x")]))
    t = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    text = (f"func.func @forward(%x: {t} {{flow.sbp = #flow.sbp<[{arg_sbp}]>}})"
            f" -> ({t} {{flow.sbp = #flow.sbp<[{result_sbp}]>}}) {{\n"
            f"  %y = flow.neg %x : {t}\n  return %y : {t}\n}}\n")
    fbin = compile_text(text, tmp_path / "m.fbin", f"--mesh={mesh}")
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.save(tmp_path / "x.npy", x)
    result = mpirun(ranks, [tool("flow-run"), fbin, f"--input={tmp_path / 'x.npy'}",
                            f"--output-dir={tmp_path / 'out'}", "--threads=1"])
    assert result.returncode == 0, result.stderr
    got = np.load(tmp_path / "out" / "result_0.npy")
    # A partial input is the value on the first device and zeros elsewhere,
    # so the global value is x either way.
    np.testing.assert_array_equal(got, -x)


def test_a_rank_that_dies_ends_the_job(tmp_path):
    """Killing one rank mid-run ends the others (Open MPI aborts the job
    when a process dies) instead of leaving them waiting in a collective."""
    import signal
    import time
    text = with_sbp((MODELS / "mlp.mlir").read_text(), MLP_TP)
    fbin = compile_text(text, tmp_path / "mesh.fbin", "--mesh=2")
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    job = subprocess.Popen([MPIRUN, "-np", "2", str(tool("flow-run")), str(fbin),
                            *inputs, "--iterations=100000000", "--threads=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, text=True)
    try:
        # Wait for both ranks to be running, then kill one.
        deadline = time.time() + 60
        pids = []
        while time.time() < deadline and len(pids) < 2:
            out = subprocess.run(["pgrep", "-f", f"flow-run {fbin}"],
                                 capture_output=True, text=True).stdout
            pids = [int(p) for p in out.split()]
            time.sleep(0.2)
        assert len(pids) >= 2, "the ranks did not start"
        time.sleep(1.0)
        os.kill(pids[-1], signal.SIGKILL)
        _, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0
    assert "exited on signal 9" in err or "aborted" in err
