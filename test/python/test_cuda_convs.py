"""Library convolutions as the CUDA targets compile them: f32, and f16 and
bf16 ones (every tensor of that type, NCHW, summed in f32: cuDNN's tensor
cores on a GPU), with their bias, residual and ReLU fused in. Run through
the cuda-emulated target, whose convolution commands the CPU runtime
executes the way cuDNN is asked to (f16 and bf16 tensors widened to f32,
f32 sums, one rounding of the output), so these run without a GPU."""

import numpy as np
import pytest

from conftest import require
import flow

RNG = np.random.default_rng(5)
torch = require("torch")


def quarters(shape):
    """Multiples of 1/4 in [-1, 1): exact in f16 and bf16."""
    return torch.from_numpy((RNG.integers(-4, 4, size=shape) / 4).astype(
        np.float32))


def as_f32(x):
    """A result (torch tensor or numpy array, any float type) in f32."""
    if isinstance(x, (list, tuple)):
        x = x[0]
    if isinstance(x, torch.Tensor):
        return x.float()
    return torch.from_numpy(np.asarray(x).astype(np.float32))


CONV = """
func.func @f(%x: tensor<2x8x10x10x{t}>, %w: tensor<16x8x3x3x{t}>, %b: tensor<16x{t}>, %r: tensor<2x16x10x10x{t}>) -> tensor<2x16x10x10x{t}> {{
  %c = flow.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x8x10x10x{t}>, tensor<16x8x3x3x{t}>, tensor<16x{t}>) -> tensor<2x16x10x10x{t}>
  %s = flow.add %c, %r : (tensor<2x16x10x10x{t}>, tensor<2x16x10x10x{t}>) -> tensor<2x16x10x10x{t}>
  %y = flow.relu %s : tensor<2x16x10x10x{t}>
  return %y : tensor<2x16x10x10x{t}>
}}"""


@pytest.mark.parametrize("mlir", ["f16", "bf16"])
def test_narrow_convolution_is_a_library_call(mlir):
    """relu(conv(x, w) + b + r) in f16 or bf16: one library convolution with
    its bias, residual and ReLU, no kernel; the result is the f32 value
    rounded once."""
    tdtype = torch.float16 if mlir == "f16" else torch.bfloat16
    text = CONV.format(t=mlir)
    ir = flow.compile_ir(text, "host", target="cuda-emulated")
    assert "host.conv" in ir and "host.dispatch" not in ir, ir
    assert f"memref<16x8x3x3x{mlir}>" in ir
    x, w, b, r = (quarters(s) for s in ((2, 8, 10, 10), (16, 8, 3, 3), (16,),
                                        (2, 16, 10, 10)))
    module = flow.compile_mlir(text, target="cuda-emulated")
    got = as_f32(module(*(a.to(tdtype) for a in (x, w, b, r))))
    want = torch.relu(torch.nn.functional.conv2d(x.double(), w.double(),
                                                 b.double(), padding=1) +
                      r.double()).to(tdtype).float()
    # Products of quarters summed in f32 are exact (72 terms of at most 1);
    # the output is rounded once, as torch rounds the f64 value: equal but
    # for the double rounding f64 -> f32 -> narrow, which these sums avoid.
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_cpu_target_keeps_narrow_convolutions_in_kernels():
    """The CPU's convolution library runs f32 (and bf16 mixed precision);
    an f16 convolution there is im2col and a kernel, not a library call."""
    ir = flow.compile_ir(CONV.format(t="f16"), "host", target="cpu")
    assert "host.conv" not in ir


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_resnet_block_matches_eager(dtype):
    """A torchvision-style basic block in half precision: its convolutions
    are library calls on the CUDA target, its batch norms folded or
    kernels; against eager in f32 on the same rounded weights, within the
    narrow type's rounding of each stored activation."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
            self.b1 = torch.nn.BatchNorm2d(16)
            self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
            self.b2 = torch.nn.BatchNorm2d(16)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + x)

    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(2, 16, 12, 12)
    half = Block().eval()
    half.load_state_dict(block.state_dict())
    half = half.to(dtype)
    compiled = flow.compile(half, (x.to(dtype),), target="cuda-emulated")
    ir = flow.compile_ir(compiled.text, "host", target="cuda-emulated")
    assert ir.count("host.conv") == 2
    got = as_f32(compiled(x.to(dtype)))
    with torch.no_grad():
        want = half.float()(x.to(dtype).float())
    # Each of the few stored activations is rounded to the narrow type
    # (2^-11 relative for f16, 2^-8 for bf16) and errors add through two
    # convolutions of 144 terms: a few units of the last place of values
    # of magnitude about 3.
    eps = 2.0 ** -10 if dtype == torch.float16 else 2.0 ** -7
    torch.testing.assert_close(got, want, rtol=8 * eps, atol=8 * eps)
