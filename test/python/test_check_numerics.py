"""check_numerics: the first NaN or infinity, in an input or written by a
command, ends the call with an error naming where it came from."""

import re
import subprocess

import numpy as np
import pytest
import torch

import flow
from flowtest import compile_mlir, tool


class LogOfShifted(torch.nn.Module):
    def forward(self, x):
        y = torch.log(x - 1.0) * 2.0  # the line the error points at
        return torch.relu(y) + 1.0


def test_names_the_kernel_its_op_and_source_line():
    x = torch.rand(4, 8) + 1.5            # every element > 1: finite
    x[2, 5] = 0.5                          # log of a negative number: NaN
    compiled = flow.compile(LogOfShifted(), (x,), check_numerics=True)
    with pytest.raises(flow.FlowError) as info:
        compiled(x)
    message = str(info.value)
    assert message.startswith("check-numerics: function 'main' command ")
    assert "flow.log at " in message
    line = next(i for i, text in enumerate(
        open(__file__).read().splitlines(), 1) if "the line the error" in text)
    assert re.search(rf"test_check_numerics\.py:{line}:", message), message
    # The kernel's output in row-major order: row 2, column 5.
    assert message.endswith("wrote nan at element 21"), message


def test_off_by_default_and_switchable():
    x = torch.rand(4, 8) + 1.5
    x[0, 0] = 0.5
    compiled = flow.compile(LogOfShifted(), (x,))
    with torch.no_grad():
        want = LogOfShifted()(x)
    got = compiled(x)               # NaN flows on, as in eager
    torch.testing.assert_close(got, want, equal_nan=True)
    compiled.module.check_numerics = True
    with pytest.raises(flow.FlowError, match="wrote nan at element 0"):
        compiled(x)
    compiled.module.check_numerics = False
    torch.testing.assert_close(compiled(x), want, equal_nan=True)


def test_finite_results_are_unchanged():
    x = torch.rand(4, 8) + 1.5
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 4), torch.nn.Softmax(-1))
    plain = flow.compile(model, (x,))
    checked = flow.compile(model, (x,), check_numerics=True)
    torch.testing.assert_close(checked(x), plain(x), rtol=0, atol=0)


def test_an_input_is_named():
    x = torch.rand(4, 8) + 1.5
    compiled = flow.compile(LogOfShifted(), (x,), check_numerics=True)
    x[1, 3] = float("-inf")
    with pytest.raises(flow.FlowError,
                       match=r"input 0 \(f32\[4,8\]\) holds -inf at "
                             r"element 11$"):
        compiled(x)


def test_an_overflowing_matrix_product_is_named():
    """A GEMM whose sums overflow f32: the library call is named."""
    text = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %c = flow.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}"""
    compiled = flow.compile_mlir(text, check_numerics=True)
    a = np.ones((4, 8), np.float32)
    b = np.ones((8, 16), np.float32)
    np.testing.assert_array_equal(compiled(a, b)[0], 8 * np.ones((4, 16)))
    b[:, 7] = 1e38
    with pytest.raises(flow.FlowError,
                       match=r"command 0 \(gemm 1 x 4x16x8\) wrote inf at "
                             r"element 7$"):
        compiled(a, b)


def test_half_precision_overflow():
    text = """
func.func @main(%a: tensor<6xf16>) -> tensor<6xf16> {
  %e = flow.exp %a : tensor<6xf16>
  return %e : tensor<6xf16>
}"""
    compiled = flow.compile_mlir(text, check_numerics=True)
    a = np.array([0, 1, 2, 3, 4, 5], np.float16)
    compiled(a)
    a[4] = 12  # e^12 > 65504, the largest f16
    with pytest.raises(flow.FlowError, match=r"flow.exp.* wrote inf at "
                                             r"element 4$"):
        compiled(a)


def test_flow_run_check_numerics(tmp_path):
    text = """
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %l = flow.log %a : tensor<3xf32>
  return %l : tensor<3xf32>
}"""
    fbin = compile_mlir(text, tmp_path)
    path = tmp_path / "a.npy"
    np.save(path, np.array([1.0, 0.0, 2.0], np.float32))  # log(0) = -inf
    run = [str(tool("flow-run")), str(fbin), f"--input={path}"]
    plain = subprocess.run(run, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    checked = subprocess.run(run + ["--check-numerics"], capture_output=True,
                             text=True)
    assert checked.returncode == 1
    assert "check-numerics" in checked.stderr
    assert "flow.log" in checked.stderr
    assert "wrote -inf at element 1" in checked.stderr
