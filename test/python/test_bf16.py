"""Mixed precision (precision="bf16", --precision=bf16): matrix products and
convolutions read bf16 operands and sum in f32; everything else stays f32.

Tolerance: bf16 keeps 8 significant bits, so each operand of a product is
rounded by up to 2^-9 (0.2%) of itself; summed over the contraction and
carried through a few layers, the outputs move by about 0.1 to 0.5% of
their largest magnitude (measured: 0.3% on ResNet-50's logits, 0.5% on
BERT-base's last hidden state). The tests allow 2% of the largest magnitude
against PyTorch eager in f32: ten times what is expected, and still far
below what a wrong op, layout or weight would give. They also check that
bf16 really ran: the f32 compile matches eager to 1e-4, the bf16 one does
not match that closely."""

import numpy as np
import pytest

from conftest import require
from flowtest import compile_mlir, run_fbin

torch = require("torch")
import flow  # noqa: E402

TOL = 2e-2


def compare(model, args):
    model.eval()
    with torch.no_grad():
        want = model(*args).numpy()
    scale = float(np.abs(want).max())
    def run(**options):
        out = flow.compile(model, args, **options)(*args)
        if isinstance(out, (list, tuple)):
            out = out[0]
        return out.detach().numpy() if isinstance(out, torch.Tensor) \
            else np.asarray(out)

    f32 = run()
    bf16 = run(precision="bf16")
    assert f32.shape == want.shape and bf16.shape == want.shape
    f32_err = float(np.abs(f32 - want).max()) / scale
    bf16_err = float(np.abs(bf16 - want).max()) / scale
    assert f32_err < 1e-4, f32_err
    assert bf16_err < TOL, bf16_err
    # Rounded to bf16 for real (an f32 run would be ~1e-7 away).
    assert bf16_err > 1e-5, bf16_err
    return bf16_err


def test_mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.Linear(512, 128))
    compare(model, (torch.randn(32, 256),))


def test_conv_net():
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 1), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(32, 10))
    compare(model, (torch.randn(2, 3, 32, 32),))


class _Residual(torch.nn.Module):
    """A ResNet bottleneck: its buffers between convolutions are blocked,
    so in bf16 they hold bf16."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(32, 16, 1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.c = torch.nn.Conv2d(16, 32, 1)
        self.stem = torch.nn.Conv2d(3, 32, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = torch.relu(self.b(torch.relu(self.a(x))))
        x = torch.relu(self.c(y) + x)
        y = torch.relu(self.b(torch.relu(self.a(x))))
        return torch.relu(self.c(y) + x).mean(dim=(2, 3))


@pytest.mark.parametrize("conv", ["library", "reference"])
def test_residual_convolutions(conv, monkeypatch):
    """Library convolutions in bf16 (oneDNN, or Flow's reference path with
    FLOW_CONV=reference), residual adds fused in and bf16 buffers between
    them."""
    if conv == "reference":
        monkeypatch.setenv("FLOW_CONV", "reference")
    torch.manual_seed(3)
    compare(_Residual(), (torch.randn(2, 3, 16, 16),))


def test_pools_between_convolutions():
    """Max and average pools between bf16 convolutions pool their bf16
    buffers."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 5, stride=2, padding=2), torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, padding=1),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2, 2, ceil_mode=True),
        torch.nn.Conv2d(32, 32, 1), torch.nn.AvgPool2d(2, 2),
        torch.nn.Conv2d(32, 16, 1), torch.nn.Flatten())
    compare(model, (torch.randn(2, 3, 30, 26),))


def test_attention_block():
    torch.manual_seed(2)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0,
                                             batch_first=True)
    compare(layer, (torch.randn(2, 16, 64),))


LINEAR = """
func.func @main(%x: tensor<64x128xf32>, %w: tensor<128x96xf32>) -> tensor<64x96xf32> {
  %0 = flow.matmul %x, %w : (tensor<64x128xf32>, tensor<128x96xf32>) -> tensor<64x96xf32>
  return %0 : tensor<64x96xf32>
}
"""


@pytest.mark.parametrize("gemm", ["onednn", "openblas"])
def test_bf16_gemm_with_and_without_onednn(tmp_path, gemm, monkeypatch):
    """oneDNN's bf16 GEMM, or (FLOW_GEMM=openblas) the operands widened to
    f32: the same products of the same rounded operands."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    w = rng.standard_normal((128, 96)).astype(np.float32)
    fbin = compile_mlir(LINEAR, tmp_path, "--precision=bf16")
    monkeypatch.setenv("FLOW_GEMM", gemm)
    got = run_fbin(fbin, [x, w], tmp_path)[0]

    def bf16(a):  # round to nearest even, as the kernels and the loader do
        bits = a.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32)

    want = bf16(x).astype(np.float64) @ bf16(w).astype(np.float64)
    # Only the f32 summation order differs from the exact product of the
    # rounded operands.
    np.testing.assert_allclose(got, want, rtol=1e-5,
                               atol=1e-5 * np.abs(want).max())


def test_unknown_precision(tmp_path):
    import subprocess
    from flowtest import tool
    src = tmp_path / "m.mlir"
    src.write_text(LINEAR)
    proc = subprocess.run([str(tool("flow-compile")), str(src),
                           "--precision=fp8", "-o", str(tmp_path / "m.fbin")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr == ("flow-compile: error: --precision: 'fp8' is not one "
                           "of f32, bf16\n")


def test_software_rounding_matches_the_instruction():
    """Compiled for a CPU without bf16 conversion instructions (haswell),
    kernels round f32 to bf16 with integer operations (flow-expand-bf16);
    on any CPU that runs haswell code the result is bit for bit the one
    compiled for this machine, which may round in one instruction."""
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 32)).eval()
    x = torch.randn(16, 64)
    host = flow.compile(model, (x,), precision="bf16")(x)
    software = flow.compile(model, (x,), precision="bf16", cpu="haswell")(x)
    assert torch.equal(host, software)
    with torch.no_grad():
        want = model(x)
    err = float((software - want).abs().max() / want.abs().max())
    assert 1e-5 < err < TOL, err


class _Bf16Math(torch.nn.Module):
    def forward(self, x, y):
        return (torch.exp(x) * y + x).amax(dim=-1), (x * y).sum(dim=-1)


@pytest.mark.parametrize("cpu", ["host", "haswell"])
def test_bf16_tensors(cpu):
    """A model on bf16 tensors: every op rounds its result to bf16, as
    PyTorch eager does, with or without bf16 conversion instructions.
    Sums differ from eager's only in their f32 summation order: within two
    bf16 steps (2^-7) of the largest result."""
    torch.manual_seed(5)
    x = torch.randn(8, 96).to(torch.bfloat16)
    y = torch.randn(8, 96).to(torch.bfloat16)
    got = flow.compile(_Bf16Math(), (x, y), cpu=cpu)(x, y)
    want = _Bf16Math()(x, y)
    for g, w in zip(got, want):
        assert g.dtype == torch.bfloat16
        g, w = g.float(), w.float()
        assert float((g - w).abs().max()) <= 2 ** -7 * float(w.abs().max())
