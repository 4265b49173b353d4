"""Every SBP signature of every op, and small chains, on meshes 2, 3 and
2x2 with uneven pieces, under mpirun, against one process
(sbp_differential.py says how). FLOW_SBP_SEED changes the random inputs."""

import json
import math
import os

import pytest

import sbp_differential as diff
from conftest import build_dir, mpirun_env, require_program
from flowtest import tool

MPIRUN = require_program("mpirun")


@pytest.fixture(scope="module")
def rules():
    return diff.op_rules(tool("flow-opt"))


def test_every_op_template_has_rules(rules):
    # The rules come from the compiler: an op whose rules vanished, or a
    # template that no longer parses, fails here rather than testing nothing.
    assert set(rules) == {name for name, *_ in diff.OPS}
    assert all(rules[name] and rules[name][0][1] == ["B"] for name in rules)


@pytest.mark.parametrize("mesh", diff.MESHES,
                         ids=lambda m: "x".join(map(str, m)))
def test_signatures_match_one_process(tmp_path, rules, mesh):
    cases = diff.cases(rules, mesh)
    assert len(cases) > 100
    tag = "x".join(map(str, mesh))
    sharded = tmp_path / "mesh.fbin"
    single = tmp_path / "single.fbin"
    for text, out, flags in [(diff.module_text(cases, mesh), sharded,
                              [f"--mesh={tag}"]),
                             (diff.module_text(cases, None), single, [])]:
        src = out.with_suffix(".mlir")
        src.write_text(text)
        proc = diff.subprocess.run(
            [str(tool("flow-compile")), str(src), "-o", str(out), *flags],
            capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
    meta = tmp_path / "cases.json"
    meta.write_text(json.dumps([[c[0], c[1]] for c in cases]))
    seed = int(os.environ.get("FLOW_SBP_SEED", "7"))
    env = mpirun_env(PYTHONPATH=str(build_dir() / "python"))
    proc = diff.subprocess.run(
        [MPIRUN, "-np", str(math.prod(mesh)), diff.sys.executable,
         diff.__file__, "run", str(sharded), str(single), str(meta),
         str(seed)],
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["cases"] == len(cases)
    assert result["failures"] == [], "\n".join(result["failures"])
