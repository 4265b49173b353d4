"""flow-opt on bad input: a clear diagnostic and exit code 1, never a crash.

Every case of test/Dialect/Flow/invalid.mlir is run without
-verify-diagnostics, as a user would, and malformed files (truncated,
corrupted, binary) are fed in bulk.
"""

import random
import re
import subprocess

import pytest

from conftest import ROOT

# file:line:col: error: ...
DIAGNOSTIC = re.compile(r"^[^:\n]+:\d+:\d+: error: .+", re.MULTILINE)
CRASH_MARKERS = ("Stack dump", "Assertion", "PLEASE submit a bug report",
                 "Segmentation fault", "terminate called")


def run_flow_opt(flow_opt, text, *args):
    return subprocess.run([str(flow_opt), "-", *args], input=text,
                          capture_output=True, timeout=60,
                          text=isinstance(text, str))


def assert_clean_failure(proc, what):
    stderr = proc.stderr if isinstance(proc.stderr, str) else \
        proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, \
        f"{what}: expected exit 1, got {proc.returncode}\n{stderr}"
    assert not any(m in stderr for m in CRASH_MARKERS), f"{what}:\n{stderr}"
    assert DIAGNOSTIC.search(stderr), \
        f"{what}: no located 'error:' diagnostic\n{stderr}"


def invalid_cases():
    text = (ROOT / "test/Dialect/Flow/invalid.mlir").read_text()
    chunks = [c for c in text.split("// -----") if "expected-error" in c]
    return chunks


INVALID = invalid_cases()


def test_invalid_file_has_cases():
    # Guards the parametrization below against silently running nothing.
    assert len(INVALID) > 80


@pytest.mark.parametrize("index", range(len(INVALID)))
def test_invalid_case_fails_cleanly(flow_opt, index):
    chunk = INVALID[index]
    expected = re.findall(r"expected-error[^{]*\{\{(.*?)\}\}", chunk)
    proc = run_flow_opt(flow_opt, chunk)
    assert_clean_failure(proc, f"invalid.mlir case {index}")
    # The first expected message is among what a user sees.
    assert expected[0] in proc.stderr


def test_valid_generic_form_is_accepted(flow_opt):
    text = """
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<2x3xf32> {
      %0 = "flow.add"(%a, %b) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }"""
    proc = run_flow_opt(flow_opt, text)
    assert proc.returncode == 0, proc.stderr
    assert "flow.add %arg0, %arg1 : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>" in proc.stdout


def test_wrong_shape_generic_form_is_rejected(flow_opt):
    text = """
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<2x4xf32> {
      %0 = "flow.add"(%a, %b) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    }"""
    proc = run_flow_opt(flow_opt, text)
    assert_clean_failure(proc, "wrong result shape")
    assert "inferred type(s) 'tensor<2x3xf32>' are incompatible" in proc.stderr


def test_missing_file(flow_opt):
    proc = subprocess.run([str(flow_opt), "/nonexistent/model.mlir"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "/nonexistent/model.mlir" in proc.stderr


def test_binary_garbage(flow_opt):
    rng = random.Random(1)
    data = bytes(rng.randrange(256) for _ in range(4096))
    proc = run_flow_opt(flow_opt, data)
    assert proc.returncode == 1
    assert not any(m.encode() in proc.stderr for m in CRASH_MARKERS)


def test_truncated_and_corrupted_files_never_crash(flow_opt):
    """ops.mlir cut at random points and with random bytes replaced: flow-opt
    may accept (a cut between functions) or reject, but never crashes."""
    source = (ROOT / "test/Dialect/Flow/ops.mlir").read_bytes()
    rng = random.Random(2026)
    variants = [source[:rng.randrange(len(source))] for _ in range(60)]
    for _ in range(60):
        data = bytearray(source)
        for _ in range(rng.randrange(1, 8)):
            data[rng.randrange(len(data))] = rng.choice(b"()[]<>{}:,=%@#!0123456789-xS B P")
        variants.append(bytes(data))
    failures = 0
    for i, data in enumerate(variants):
        proc = run_flow_opt(flow_opt, data)
        stderr = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode in (0, 1), f"variant {i}: exit {proc.returncode}\n{stderr}"
        assert not any(m in stderr for m in CRASH_MARKERS), f"variant {i}:\n{stderr}"
        if proc.returncode == 1:
            failures += 1
            assert "error:" in stderr, f"variant {i}: failed without a diagnostic"
    assert failures > 0  # the corruption did exercise the error paths
