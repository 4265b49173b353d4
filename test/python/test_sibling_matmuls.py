"""Products of one input by weights of the parameter archive run as one GEMM
with sibling_matmuls=True (flow-fuse-sibling-matmuls; off by default):
attention's q, k and v projections, a gated MLP's gate and up. The joined
weight (and bias) is assembled once when the executable is bound, and the
parts only the join reads are dropped. Results must match PyTorch eager within f32 rounding
of differently blocked GEMMs, and match the unjoined executable."""

import re

import numpy as np
import pytest

from conftest import require

torch = require("torch")


class Attention(torch.nn.Module):
    def __init__(self, d=64, heads=4, bias=True):
        super().__init__()
        self.q = torch.nn.Linear(d, d, bias=bias)
        self.k = torch.nn.Linear(d, d, bias=bias)
        self.v = torch.nn.Linear(d, d, bias=bias)
        self.o = torch.nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape

        def split(y):
            return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(
            split(self.q(x)), split(self.k(x)), split(self.v(x)))
        return self.o(a.transpose(1, 2).reshape(b, t, d))


class GatedMlp(torch.nn.Module):
    def __init__(self, d=48, hidden=80):
        super().__init__()
        self.gate = torch.nn.Linear(d, hidden, bias=False)
        self.up = torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def _host_ir(compiled, **options):
    import flow
    return flow.compile_ir(compiled.text, "host", **options)


@pytest.mark.parametrize("model, gemms_saved", [
    (Attention(), 2), (Attention(bias=False), 2), (GatedMlp(), 1)])
def test_joined_products_match_eager(model, gemms_saved):
    import flow
    torch.manual_seed(0)
    model = model.eval()
    x = torch.randn(2, 16, model.q.in_features if hasattr(model, "q")
                    else model.gate.in_features)
    with torch.no_grad():
        expected = model(x).numpy()
    joined = flow.compile(model, (x,), sibling_matmuls=True)
    apart = flow.compile(model, (x,))
    ir_joined = _host_ir(joined, sibling_matmuls=True)
    ir_apart = _host_ir(apart)
    gemms = lambda ir: len(re.findall(r"host\.gemm ", ir))
    assert gemms(ir_apart) - gemms(ir_joined) == gemms_saved
    assert "host.parameter_concat" in ir_joined
    assert "host.parameter_concat" not in ir_apart
    y_joined = np.asarray(joined(x).detach())
    y_apart = np.asarray(apart(x).detach())
    # Sums of 64 products of N(0,1) activations by weights of at most
    # 1/sqrt(64): f32 rounding differs by blocking, not more than 1e-5.
    np.testing.assert_allclose(y_joined, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y_joined, y_apart, rtol=1e-4, atol=1e-5)


def test_joined_pieces_and_bf16_weights(tmp_path):
    """Pieces of weights join like whole ones, and a join of weights read
    as bf16 (mixed precision) joins the converted values."""
    import flow
    from flow import safetensors
    rng = np.random.default_rng(1)
    w = rng.standard_normal((6, 16)).astype(np.float32)
    u = rng.standard_normal((16, 5)).astype(np.float32)
    safetensors.save({"w": w, "u": u}, str(tmp_path / "p.safetensors"))
    text = """module attributes {flow.parameters = "p.safetensors"} {
  func.func @main(%x: tensor<8x16xf32>) -> (tensor<8x2xf32>, tensor<8x4xf32>, tensor<8x5xf32>) {
    %a = flow.parameter "w" piece [4, 0] of [6, 16] : tensor<2x16xf32>
    %b = flow.parameter "w" piece [0, 0] of [6, 16] : tensor<4x16xf32>
    %c = flow.parameter "u" : tensor<16x5xf32>
    %ya = flow.matmul %x, %a {transpose_rhs} : (tensor<8x16xf32>, tensor<2x16xf32>) -> tensor<8x2xf32>
    %yb = flow.matmul %x, %b {transpose_rhs} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
    %yc = flow.matmul %x, %c : (tensor<8x16xf32>, tensor<16x5xf32>) -> tensor<8x5xf32>
    return %ya, %yb, %yc : tensor<8x2xf32>, tensor<8x4xf32>, tensor<8x5xf32>
  }
}"""
    x = rng.standard_normal((8, 16)).astype(np.float32)
    module = flow.compile_mlir(text, base_directory=str(tmp_path),
                               sibling_matmuls=True)
    ya, yb, yc = module(x)
    np.testing.assert_allclose(ya, x @ w[4:].T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(yb, x @ w[:4].T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(yc, x @ u, rtol=1e-5, atol=1e-5)
    # The two transposed pieces join; only the join reads them, so they
    # are dropped once it is assembled: "u" and the joined 6x16 remain.
    assert module.parameter_bytes == 4 * (16 * 5 + 6 * 16)
    bf16 = require("ml_dtypes").bfloat16
    narrow = flow.compile_mlir(text, base_directory=str(tmp_path),
                               precision="bf16", sibling_matmuls=True)
    round16 = lambda a: a.astype(bf16).astype(np.float32)
    xa, xb, _ = narrow(x)
    # bf16 operands summed in f32: the same products as numpy's on the
    # rounded operands, up to f32 summation order.
    np.testing.assert_allclose(xa, round16(x) @ round16(w[4:]).T,
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(xb, round16(x) @ round16(w[:4]).T,
                               rtol=1e-5, atol=1e-4)
