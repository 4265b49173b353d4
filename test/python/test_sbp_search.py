"""The SBP planner's searches against exhaustive enumeration.

`--flow-propagate-sbp=search=exhaustive` tries every combination of the
ops' signatures and keeps the cheapest by the same modeled time. On the
small mesh programs of the lit suite the refinement (greedy placement, then
moves of an op alone or with its users) and the exact search (variable
elimination, then the refinement) must find a plan that costs as little,
with the arguments pinned as written and with them free (auto-parallel):
this checks the searches, and the oracle against them (it can never be
worse). Each function records its plan's modeled time as
`flow.modeled_plan` (seconds of compute and of each kind of collective).
"""

import re
import subprocess

import pytest

from conftest import ROOT

PROGRAMS = ["propagate-sbp.mlir", "propagate-sbp-refine.mlir", "spmd.mlir",
            "propagate-sbp-mesh-spec.mlir"]


def modeled(flow_opt, text, option):
    """{function: (total seconds, search)} after flow-propagate-sbp."""
    proc = subprocess.run([str(flow_opt), "-",
                           f"--flow-propagate-sbp={option}"],
                          input=text, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    plans = {}
    for m in re.finditer(r"func\.func @(\w+)\(.*flow\.modeled_plan = \{(.*)\}",
                         proc.stdout):
        # The plan's own figures, not its reference plans'.
        m2 = re.sub(r"\w+ = \{[^}]*\}", "", m[2])
        seconds = [float(v) for v in
                   re.findall(r"_seconds = ([-0-9.eE+]+)", m2)]
        search = re.search(r'search = "([^"]+)"', m2)[1]
        plans[m[1]] = (sum(seconds), search)
    return plans


def chunks():
    for name in PROGRAMS:
        text = (ROOT / "test" / "Dialect" / "Flow" / name).read_text()
        for i, chunk in enumerate(text.split("// -----")):
            # The cases the planner accepts (no pinned errors to provoke).
            if "flow.mesh" in chunk and "expected-error" not in chunk:
                yield pytest.param(chunk, id=f"{name}:{i}")


@pytest.mark.parametrize("free", [0, 1], ids=["pinned", "free"])
@pytest.mark.parametrize("search", ["refine", "exact"])
@pytest.mark.parametrize("text", list(chunks()))
def test_search_finds_the_exhaustive_optimum(flow_opt, text, search, free):
    found = modeled(flow_opt, text, f"search={search} free-arguments={free}")
    best = modeled(flow_opt, text, f"search=exhaustive free-arguments={free}")
    assert found and found.keys() == best.keys()
    label = {"refine": "greedy+refine", "exact": "exact"}[search]
    for function, (seconds, chosen_by) in found.items():
        optimum, oracle = best[function]
        assert oracle == "exhaustive"
        assert chosen_by.startswith(label), chosen_by
        tolerance = 1e-9 * max(abs(optimum), 1e-12)
        assert optimum <= seconds + tolerance, function  # the oracle
        assert seconds <= optimum + tolerance, (
            f"@{function}: the {search} search's plan takes {seconds:.6g} s, "
            f"the best {optimum:.6g} s")


def test_exhaustive_search_refuses_a_large_graph(flow_opt):
    """Past 10^6 combinations the oracle says so instead of running for
    hours."""
    ops = "\n".join(
        f"  %{i + 1} = flow.relu %{i} : tensor<8x8xf32>" for i in range(12))
    text = f"""flow.mesh @m [2, 2]
func.func @chain(%0: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {{flow.mesh = @m}} {{
{ops}
  return %12 : tensor<8x8xf32>
}}
"""
    proc = subprocess.run([str(flow_opt), "-",
                           "--flow-propagate-sbp=search=exhaustive"], input=text,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "exhaustive SBP search:" in proc.stderr
    assert "2.82e+11 combinations of 12 choices, more than 10^6" \
        in proc.stderr
