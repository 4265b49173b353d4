"""ONNX's backend node tests for every op Flow claims (see
flow/onnx_conformance.py). `onnx_conformance_passing.txt` lists the cases
that pass; a case on that list that stops passing fails this test, and so
does a claimed op with no passing case. Refresh the list after adding an
op with

    python -m flow.onnx_conformance --list-passing \\
        test/python/onnx_conformance_passing.txt
"""

import pathlib

import pytest

from conftest import require

require("onnx")
from flow import onnx_conformance  # noqa: E402
from flow.onnx_import import SUPPORTED_OPS  # noqa: E402

BASELINE = pathlib.Path(__file__).with_name("onnx_conformance_passing.txt")


@pytest.fixture(scope="module")
def results():
    return onnx_conformance.run()


def test_no_claimed_case_regresses(results):
    expected = [n for n in BASELINE.read_text().split() if n]
    regressed = {n: results.get(n, ("", "not run"))[1] for n in expected
                 if results.get(n, ("", ""))[1] != "pass"}
    assert not regressed, "\n".join(f"{n}: {s}" for n, s in regressed.items())


# The node tests the onnx package generates for Pad are the edge, reflect
# and wrap modes only; Flow's constant mode is tested in
# test_onnx_import.py::test_constant_pad.
NO_CLAIMED_CASE = {"Pad"}


def test_every_claimed_op_passes_a_case(results):
    passing = {op for op, status in results.values() if status == "pass"}
    tested = {op for op, _ in results.values()}
    # Ops ONNX has node tests for must pass at least one of them.
    missing = (tested & set(SUPPORTED_OPS)) - passing - NO_CLAIMED_CASE
    assert not missing, sorted(missing)


def test_table_and_rate(results, capsys):
    """The printed table's totals are the results' (what the docs quote)."""
    table = onnx_conformance.table(results)
    print(table)
    ops = {op for op, _ in results.values()}
    passed = sum(status == "pass" for _, status in results.values())
    rate = 100.0 * passed / len(results)
    assert table.splitlines()[-1] == (
        f"| **all {len(ops)} ops** | {len(results)} | {passed} ({rate:.1f}%) |")
    for op in ops:
        cases = [s for o, s in results.values() if o == op]
        row = f"| {op} | {len(cases)} | {cases.count('pass')} |"
        assert row in table.splitlines(), row
