"""The `flow` Python package: compile flow-dialect text, run on numpy."""

import numpy as np
import pytest

from conftest import require

import flow
from flowtest import BF16

MLP = """
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = flow.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = flow.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %2 = flow.relu %1 : tensor<4x3xf32>
  return %2 : tensor<4x3xf32>
}
"""

RNG = np.random.default_rng(3)


def test_compile_and_call():
    module = flow.compile_mlir(MLP)
    assert module.functions == ["forward"]
    inputs, outputs = module.signature()
    assert inputs == [("f32", (4, 8)), ("f32", (8, 3)), ("f32", (3,))]
    assert outputs == [("f32", (4, 3))]
    x, w, b = (RNG.standard_normal(s).astype(np.float32)
               for s in ((4, 8), (8, 3), (3,)))
    (y,) = module(x, w, b)
    assert y.dtype == np.float32 and y.shape == (4, 3)
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5,
                               atol=1e-6)
    # Non-contiguous inputs are accepted (copied to row-major).
    wt = np.asfortranarray(w)
    np.testing.assert_allclose(module(x, wt, b)[0], y)


def test_bad_calls_raise_flow_error():
    module = flow.compile_mlir(MLP)
    x = np.zeros((4, 8), np.float32)
    w = np.zeros((8, 3), np.float32)
    b = np.zeros((3,), np.float32)
    with pytest.raises(flow.FlowError, match="takes 3 inputs, got 2"):
        module(x, w)
    with pytest.raises(flow.FlowError, match=r"input 1: expected f32\[8,3\], got shape"):
        module(x, np.zeros((8, 4), np.float32), b)
    with pytest.raises(flow.FlowError, match=r"input 2: expected f32\[3\], got dtype float64"):
        module(x, w, np.zeros((3,)))
    with pytest.raises(flow.FlowError, match="does not exist|no function"):
        module(x, w, b, function="backward")


def test_compile_errors_are_flow_errors():
    with pytest.raises(flow.FlowError, match="custom op 'flow.nope' is unknown"):
        flow.compile_mlir("func.func @f() { %0 = flow.nope }")
    with pytest.raises(flow.FlowError, match="not broadcast-compatible"):
        flow.compile_mlir("""
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = flow.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}""")
    with pytest.raises(flow.FlowError, match="compile_to: 'assembly' is not a phase of target 'cpu'"):
        flow.compile_ir(MLP, "assembly")


def test_compile_ir_phases():
    assert "call @forward_k0" in flow.compile_ir(MLP, "flow")
    assert "linalg.generic" in flow.compile_ir(MLP, "linalg")
    assert "scf.parallel" in flow.compile_ir(MLP, "bufferized")
    assert "llvm.func @forward_k0_entry" in flow.compile_ir(MLP, "llvm")


def test_bf16_and_bool_tensors():
    module = flow.compile_mlir("""
func.func @f(%a: tensor<5xbf16>, %b: tensor<5xbf16>) -> (tensor<5xbf16>, tensor<5xi1>) {
  %0 = flow.mul %a, %b : (tensor<5xbf16>, tensor<5xbf16>) -> tensor<5xbf16>
  %1 = flow.compare gt, %a, %b : (tensor<5xbf16>, tensor<5xbf16>) -> tensor<5xi1>
  return %0, %1 : tensor<5xbf16>, tensor<5xi1>
}""")
    a = RNG.standard_normal(5).astype(BF16)
    b = RNG.standard_normal(5).astype(BF16)
    prod, gt = module(a, b)
    assert prod.dtype == BF16 and gt.dtype == np.bool_
    np.testing.assert_allclose(prod.astype(np.float32),
                               (a.astype(np.float32) * b.astype(np.float32)),
                               rtol=1e-2)
    np.testing.assert_array_equal(gt, a.astype(np.float32) > b.astype(np.float32))


def test_several_functions_need_a_name():
    module = flow.compile_mlir("""
func.func @neg(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = flow.neg %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @abs(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = flow.abs %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}""", threads=1)
    x = np.array([-1.5, 2.0], np.float32)
    with pytest.raises(flow.FlowError, match="several functions"):
        module(x)
    np.testing.assert_array_equal(module(x, function="neg")[0], -x)
    np.testing.assert_array_equal(module(x, function="abs")[0], np.abs(x))


def test_load_a_saved_executable_with_its_archive(tmp_path):
    import flow
    from flow import safetensors
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    safetensors.save({"w": w}, str(tmp_path / "w.safetensors"))
    text = """module attributes {flow.parameters = "w.safetensors"} {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
    %w = flow.parameter "w" : tensor<3x4xf32>
    %y = flow.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}"""
    exe = flow.compile_mlir(text, base_directory=str(tmp_path)).executable
    (tmp_path / "m.fbin").write_bytes(exe)
    module = flow.load(tmp_path / "m.fbin")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(module(x)[0], x @ w)
    with pytest.raises(flow.FlowError, match="cannot read"):
        flow.load(tmp_path / "missing.fbin")
    (tmp_path / "w.safetensors").unlink()
    with pytest.raises(flow.FlowError, match="cannot open parameter archive"):
        flow.load(tmp_path / "m.fbin")


def test_parameter_pieces_are_read_once_at_load(tmp_path):
    """A piece of a parameter (a device's piece of a split weight, or a
    slice of a weight, folded) is copied out of the archive when the
    executable is loaded: inner and outer blocks of a 3-D tensor, a piece
    converted to bf16, and a piece that lies outside the archive's tensor
    (a mismatched archive) refused naming the parameter."""
    import flow
    from flow import safetensors
    w = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5) / 7
    safetensors.save({"w": w}, str(tmp_path / "w.safetensors"))
    text = """module attributes {flow.parameters = "w.safetensors"} {
  func.func @main(%x: tensor<f32>) -> (tensor<2x3x4xf32>, tensor<4x6x2xf32>, tensor<1x6x5xbf16>, tensor<2x2x5xf32>) {
    %a = flow.parameter "w" piece [1, 2, 1] of [4, 6, 5] : tensor<2x3x4xf32>
    %b = flow.parameter "w" piece [0, 0, 3] of [4, 6, 5] : tensor<4x6x2xf32>
    %c = flow.parameter "w" piece [3, 0, 0] of [4, 6, 5] : tensor<1x6x5xbf16>
    %w = flow.parameter "w" : tensor<4x6x5xf32>
    %d = flow.slice %w starts = [2, 4, 0] limits = [4, 6, 5] strides = [1, 1, 1] : tensor<4x6x5xf32> -> tensor<2x2x5xf32>
    %ya = flow.mul %a, %x : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
    %yd = flow.mul %d, %x : (tensor<2x2x5xf32>, tensor<f32>) -> tensor<2x2x5xf32>
    return %ya, %b, %c, %yd : tensor<2x3x4xf32>, tensor<4x6x2xf32>, tensor<1x6x5xbf16>, tensor<2x2x5xf32>
  }
}"""
    module = flow.compile_mlir(text, base_directory=str(tmp_path))
    # The slice folded into a piece: only pieces are held.
    assert module.parameter_bytes == 4 * (24 + 48 + 20) + 2 * 30
    a, b, c, d = module(np.float32(2))
    np.testing.assert_array_equal(a, 2 * w[1:3, 2:5, 1:5])
    np.testing.assert_array_equal(b, w[:, :, 3:5])
    import ml_dtypes
    np.testing.assert_array_equal(c, w[3:4].astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(d, 2 * w[2:4, 4:6])
    safetensors.save({"w": w[:, :4]}, str(tmp_path / "w.safetensors"))
    with pytest.raises(flow.FlowError,
                       match=r"parameter 'w' is F32\[4,4,5\] but the "
                             r"executable needs f32\[4,6,5\]"):
        flow.CompiledModule(module.executable, base_directory=str(tmp_path))


def test_dlpack_inputs():
    torch = require("torch")
    import flow
    module = flow.compile(torch.nn.Identity(), (torch.ones(3),))

    class Foreign:
        """An array from another library, exchanged through DLPack."""
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kwargs):
            return self.t.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    out = module.module(Foreign(torch.arange(3, dtype=torch.float32)))
    np.testing.assert_array_equal(out[0], [0, 1, 2])
    # Torch tensors work with flow-dialect modules too.
    out = module.module(torch.arange(3, dtype=torch.float32))
    np.testing.assert_array_equal(out[0], [0, 1, 2])
