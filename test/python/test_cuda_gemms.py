"""Library GEMMs as the CUDA targets compile them: f16 and bf16 products
summed in f32 (into their own type or f32), their bias and activation as the
GEMM's epilogue, and TF32 only when asked. Run through the cuda-emulated
target, whose GEMM commands the CPU runtime executes the way cuBLASLt is
asked to (operands widened to f32, f32 sums, the epilogue in f32, one
rounding of C), so these run without a GPU."""

import numpy as np
import pytest

from conftest import require
import flow
from flow import FlowError

RNG = np.random.default_rng(11)


def quarters(shape, dtype):
    """Multiples of 1/4 in [-2, 2): exact in f16 and bf16, so f32 sums of
    their products are exact and only the result's rounding is checked."""
    return (RNG.integers(-8, 8, size=shape) / 4).astype(dtype)


def first(results):
    return results[0] if isinstance(results, (list, tuple)) else results


def host_ir(text, **options):
    return flow.compile_ir(text, "host", target="cuda-emulated", **options)


@pytest.mark.parametrize("dtype,mlir", [(np.float16, "f16"),
                                        ("bf16", "bf16")])
def test_narrow_gemm_with_epilogue(dtype, mlir):
    """relu(x @ w + b) in f16 or bf16: one GEMM with its bias and ReLU, no
    kernel; the result is the f32 value rounded once."""
    torch = require("torch")
    tdtype = torch.float16 if mlir == "f16" else torch.bfloat16
    text = f"""
func.func @f(%x: tensor<16x64x{mlir}>, %w: tensor<64x48x{mlir}>, %b: tensor<48x{mlir}>) -> tensor<16x48x{mlir}> {{
  %h = flow.matmul %x, %w : (tensor<16x64x{mlir}>, tensor<64x48x{mlir}>) -> tensor<16x48x{mlir}>
  %s = flow.add %h, %b : (tensor<16x48x{mlir}>, tensor<48x{mlir}>) -> tensor<16x48x{mlir}>
  %r = flow.relu %s : tensor<16x48x{mlir}>
  return %r : tensor<16x48x{mlir}>
}}"""
    ir = host_ir(text)
    assert f"bias(%arg2 : memref<48x{mlir}>)" in ir and "activation = relu" in ir
    assert "host.dispatch" not in ir
    x, w, b = (quarters(s, np.float32) for s in ((16, 64), (64, 48), (48,)))
    module = flow.compile_mlir(text, target="cuda-emulated")
    args = [torch.from_numpy(a).to(tdtype) for a in (x, w, b)]
    got = np.asarray(first(module(*args)))
    assert got.dtype.name == ("float16" if mlir == "f16" else "bfloat16")
    want = torch.relu(torch.from_numpy(x @ w + b)).to(tdtype).float().numpy()
    np.testing.assert_array_equal(got.astype(np.float32), want)


def test_f16_products_into_f32():
    """f16 operands with f32 sums and an f32 result (accumulate_f32)."""
    text = """
func.func @f(%x: tensor<3x8x32xf16>, %w: tensor<32x16xf16>) -> tensor<3x8x16xf32> {
  %h = flow.matmul %x, %w {accumulate_f32} : (tensor<3x8x32xf16>, tensor<32x16xf16>) -> tensor<3x8x16xf32>
  return %h : tensor<3x8x16xf32>
}"""
    assert "memref<3x8x32xf16>, memref<32x16xf16> -> memref<3x8x16xf32>" in \
        host_ir(text)
    x, w = quarters((3, 8, 32), np.float16), quarters((32, 16), np.float16)
    got = flow.compile_mlir(text, target="cuda-emulated")(x, w)
    np.testing.assert_array_equal(
        np.asarray(first(got)), x.astype(np.float32) @ w.astype(np.float32))


def test_tf32_only_when_asked():
    """allow_tf32 rounds f32 operands to TF32 (10 mantissa bits) before f32
    sums; without it the product is f32's."""
    text = """
func.func @f(%x: tensor<4x64xf32>, %w: tensor<64x8xf32>) -> tensor<4x8xf32> {
  %h = flow.matmul %x, %w : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x8xf32>
  return %h : tensor<4x8xf32>
}"""
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    w = RNG.standard_normal((64, 8)).astype(np.float32)
    exact = x.astype(np.float64) @ w

    def tf32(a):  # round to nearest, ties away, keeping 10 mantissa bits
        bits = a.view(np.uint32)
        return ((bits + np.uint32(0x1000)) & np.uint32(0xffffe000)).view(
            np.float32)

    rounded = tf32(x).astype(np.float64) @ tf32(w)
    plain = np.asarray(first(
        flow.compile_mlir(text, target="cuda-emulated")(x, w)))
    fast = np.asarray(first(flow.compile_mlir(text, target="cuda-emulated",
                                              allow_tf32=True)(x, w)))
    np.testing.assert_allclose(plain, exact, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast, rounded, rtol=1e-5, atol=1e-5)
    # TF32's error (about 2^-11 per operand) is far above f32's.
    assert np.abs(fast - exact).max() > 100 * np.abs(plain - exact).max()
    assert "{allow_tf32}" in host_ir(text, allow_tf32=True)
    with pytest.raises(FlowError, match="--allow-tf32 is for the CUDA targets"):
        flow.compile_mlir(text, target="cpu", allow_tf32=True)
