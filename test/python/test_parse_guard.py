"""Untrusted MLIR text never takes the Python process down: the known
parser crash is refused with a located error, and any other parser crash
happens in a child process and becomes a FlowError."""

import os
import re
import subprocess
import sys

import pytest

import flow

GOOD = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

INDEX_ARRAY = """
func.func @f() attributes {a = array<index: 1, 2>} {
  return
}
"""

INDEX_ALIAS = """
!t = index
func.func @f() attributes {a = array<!t: 3>} {
  return
}
"""


@pytest.mark.parametrize("source, line, column",
                         [(INDEX_ARRAY, 2, 32), (INDEX_ALIAS, 3, 32)])
def test_index_dense_array_is_refused_with_a_location(source, line, column):
    with pytest.raises(flow.FlowError) as info:
        flow.compile_mlir(source)
    assert str(info.value).startswith(
        f"<input>:{line}:{column}: error: dense arrays of 'index' elements "
        "are not supported")
    # The process is alive and still compiles.
    assert flow.compile_mlir(GOOD).functions == ["f"]


def test_a_parser_crash_in_the_child_is_a_flow_error():
    # The parse guard's child crashes on purpose (a stand-in for a parser
    # bug nobody knows yet); the caller gets an exception, not a dead
    # process. Run in a fresh interpreter so the variable reaches the child;
    # without the compile cache, whose hit on text compiled before would
    # not parse it at all.
    script = (
        "import flow\n"
        "try:\n"
        f"    flow.compile_mlir({GOOD!r}, cache=False)\n"
        "except flow.FlowError as e:\n"
        "    print('FlowError:', e)\n"
        "print('alive')\n")
    env = dict(os.environ, FLOW_PARSE_GUARD_CRASH_FOR_TESTING="1")
    proc = subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # Killed by SIGSEGV; under a sanitizer, its handler reports the signal
    # and exits instead.
    assert re.search(r"FlowError: the MLIR parser crashed \((signal 11, "
                     r"Segmentation fault|its process exited with status "
                     r"\d+)\) on this input", proc.stdout), proc.stdout
    assert proc.stdout.rstrip().endswith("alive")


def test_compile_ir_is_guarded_too():
    with pytest.raises(flow.FlowError, match="dense arrays of 'index'"):
        flow.compile_ir(INDEX_ARRAY, "flow")
