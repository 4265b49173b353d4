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
                 if results.get(n, ("", ""))[1] not in ("pass", "folded")}
    assert not regressed, "\n".join(f"{n}: {s}" for n, s in regressed.items())




def test_every_claimed_op_passes_a_case(results):
    passing = {op for op, status in results.values()
               if status in ("pass", "folded")}
    tested = {op for op, _ in results.values()}
    # Ops ONNX has node tests for must pass at least one of them.
    missing = (tested & set(SUPPORTED_OPS)) - passing
    assert not missing, sorted(missing)


def test_table_separates_folded_cases(results, capsys):
    """The printed table's totals are the results' (what the docs quote);
    cases folded to constants at import are counted apart from computed
    passes, and Shape's are among them."""
    table = onnx_conformance.table(results)
    print(table)
    ops = {op for op, _ in results.values()}
    total, passed, folded = onnx_conformance.totals(results)
    assert passed == sum(s == "pass" for _, s in results.values())
    assert folded == sum(s == "folded" for _, s in results.values())
    rate = 100.0 * passed / (total - folded)
    assert table.splitlines()[-1] == (
        f"| **all {len(ops)} ops** | {total} | {passed} of {total - folded} "
        f"({rate:.1f}%) | {folded} |")
    for op in ops:
        cases = [s for o, s in results.values() if o == op]
        row = (f"| {op} | {len(cases)} | {cases.count('pass')} | "
               f"{cases.count('folded')} |")
        assert row in table.splitlines(), row
    shape = [s for o, s in results.values() if o == "Shape"]
    assert shape and set(shape) == {"folded"}
    assert results["test_add"][1] == "pass"


def test_folded_at_import_reads_the_program():
    assert onnx_conformance.folded_at_import(
        "func.func @main() -> tensor<2xi64> {\n"
        "  %0 = flow.constant dense<[1, 2]> : tensor<2xi64>\n"
        "  return %0 : tensor<2xi64>\n}")
    assert not onnx_conformance.folded_at_import(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = flow.constant dense<1.0> : tensor<f32>\n"
        "  %1 = flow.add %a, %0 : (tensor<2xf32>, tensor<f32>) -> "
        "tensor<2xf32>\n  return %1 : tensor<2xf32>\n}")
