"""Auto-parallel under mpirun: `flow-compile --auto-parallel` places every
input, weight and optimizer state the program does not pin, and the plan
runs. On 4 processes (a mesh of 4 and of 2x2) its results equal one
process's, and the bytes each collective moves, as the communicator counts
them (`flow-run --stats`), are the report's.

The mesh description makes compute slow against the network
(`SLOW_COMPUTE`), so that splitting the work pays and the plan has
collectives to check; on the real presets these small models run whole on
every device.
"""

import collections
import json
import re
import subprocess

import numpy as np
import pytest

from conftest import ROOT, require_program
from flowtest import tool
from test_distributed import compile_text, mpirun, write_inputs

MPIRUN = require_program("mpirun")

SLOW_COMPUTE = {"name": "slow-compute",
                "axes": [{"bandwidth_gb_per_s": 10, "latency_us": 1}],
                "device": {"tflops": 0.0001, "memory_gib": 16}}


def spec_file(tmp_path):
    path = tmp_path / "slow-compute.json"
    path.write_text(json.dumps(SLOW_COMPUTE))
    return path


def run(fbin, inputs, out, ranks=None):
    """flow-run of `fbin` (under mpirun -np `ranks`); its stdout."""
    args = [tool("flow-run"), fbin, *inputs, f"--output-dir={out}",
            "--threads=1", "--stats"]
    if ranks:
        result = mpirun(ranks, args)
    else:
        result = subprocess.run(list(map(str, args)), capture_output=True,
                                text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def check_measured_bytes(stdout, report, ranks):
    """Each rank's collectives moved the bytes the report plans for the
    device program it runs (uneven pieces give programs of their own)."""
    program = {r: p["function"] for p in report["device_programs"]
               for r in p["ranks"]}
    measured = collections.defaultdict(list)
    for rank, index, size in re.findall(
            r"rank (\d+) collective (\d+): (\d+) bytes", stdout):
        measured[int(rank)].append((int(index), int(size)))
    assert sorted(measured) == list(range(ranks))
    for rank in range(ranks):
        planned = [c["bytes_per_device"] for c in report["collective_ops"]
                   if c["function"] == program[rank]]
        assert [s for _, s in sorted(measured[rank])] == planned, rank


@pytest.mark.parametrize("mesh", ["4", "2x2"])
def test_transformer_auto_plan(tmp_path, mesh):
    text = (ROOT / "test" / "models" / "transformer.mlir").read_text()
    inputs = write_inputs(text, tmp_path, np.random.default_rng(0), 0.1)
    single = compile_text(text, tmp_path / "single.fbin")
    run(single, inputs, tmp_path / "one")
    fbin = compile_text(text, tmp_path / "auto.fbin", f"--mesh={mesh}",
                        "--auto-parallel",
                        f"--mesh-spec={spec_file(tmp_path)}",
                        f"--report={tmp_path / 'report.json'}")
    report = json.loads((tmp_path / "report.json").read_text())
    [plan] = report["modeled_plans"]
    assert plan["search"].startswith("exact"), plan["search"]
    # The plan splits the work: it moves data, and its modeled time beats
    # running whole on every device (compute 4x as long, no traffic) and
    # is no worse than the two reference plans.
    assert report["collective_ops"], "the plan runs everything whole"
    placed = [p["sbp"] for p in report["placements"]
              if p["value"].startswith("argument")]
    assert any("S(" in sbp for sbp in placed), placed
    for reference in ("data_parallel", "tensor_parallel"):
        assert plan["total_seconds"] <= plan[reference]["total_seconds"] * \
            (1 + 1e-9), reference
    stdout = run(fbin, inputs, tmp_path / "many", ranks=4)
    want = np.load(tmp_path / "one" / "result_0.npy")
    got = np.load(tmp_path / "many" / "result_0.npy")
    np.testing.assert_allclose(got, want, rtol=1e-5,
                               atol=1e-5 * float(np.abs(want).max()))
    check_measured_bytes(stdout, report, 4)


def test_training_step_auto_plan(tmp_path):
    """A training step (AdamW, clipped): the auto plan places the batch,
    the parameters and the moments; one step on 4 processes gives the
    loss and the new state of one process."""
    import test_optimizers as T
    optimizer = T.CASES["adamw-settings-clipped"][0]
    single = T.STEP.format(optimizer=optimizer)
    text = "flow.mesh @mesh [4]\n" + single.replace(
        "attributes {flow.optimizer", "attributes {flow.mesh = @mesh, flow.optimizer")
    one = compile_text(single, tmp_path / "one.fbin")
    fbin = compile_text(text, tmp_path / "auto.fbin", "--auto-parallel",
                        f"--mesh-spec={spec_file(tmp_path)}",
                        f"--report={tmp_path / 'report.json'}")
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["collective_ops"]

    flags = T.first_step_inputs(single, tmp_path)
    _, result_roles = T.roles(single)
    run(one, flags, tmp_path / "one")
    stdout = run(fbin, flags, tmp_path / "many", ranks=4)
    for i, role in enumerate(result_roles):
        want = np.load(tmp_path / "one" / f"result_{i}.npy")
        got = np.load(tmp_path / "many" / f"result_{i}.npy")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=role)
    check_measured_bytes(stdout, report, 4)


def test_memory_limit_from_python():
    """memory_limit= reaches the planner as --memory-limit does: a limit no
    plan fits is an error saying what the smallest needs; a malformed one
    names itself."""
    import flow
    text = (ROOT / "test" / "Pipelines" /
            "auto-parallel-memory.mlir").read_text()
    with pytest.raises(flow.FlowError, match="the smallest needs 32.09 MiB"):
        flow.compile_ir(text, "flow", auto_parallel=True,
                        mesh_spec=str(ROOT / "test" / "Dialect" / "Flow" /
                                      "Inputs" / "slow-calls.json"),
                        memory_limit="1MB")
    for bad in ("lots", -5, 0, True):
        with pytest.raises(flow.FlowError, match="memory_limit: .* is not a positive byte count"):
            flow.compile_ir(text, "flow", auto_parallel=True, memory_limit=bad)
    ir = flow.compile_ir(text, "flow", auto_parallel=True,
                         mesh_spec=str(ROOT / "test" / "Dialect" / "Flow" /
                                       "Inputs" / "slow-calls.json"),
                         memory_limit=100_000_000)
    assert "flow.all_reduce" in ir
