"""PyTorch's scaled_dot_product_attention imports as one flow.attention op.
On the CPU it runs as one fused command (blocks of keys with an online
softmax, sums in f32); with fused_attention=False, and on the CUDA targets,
it is expanded into matmul, softmax and matmul. Both must match PyTorch
eager: outputs are weighted averages of the values, computed in f32 with
scores from sums of at most 64 products, so f32 results agree within 1e-5
(absolute, values of order 1); a bf16 output is within its rounding (2^-8
relative) plus the difference of PyTorch's bf16 intermediate roundings."""

import re

import numpy as np
import pytest

from conftest import require

flow = require("flow")
torch = require("torch")
F = torch.nn.functional


class Sdpa(torch.nn.Module):
    def __init__(self, causal=False, scale=None):
        super().__init__()
        self.causal, self.scale = causal, scale

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              is_causal=self.causal,
                                              scale=self.scale)


def _commands(compiled, **options):
    host = flow.compile_ir(compiled.text, "host", **options)
    return (len(re.findall(r"host\.attention ", host)),
            len(re.findall(r"host\.gemm ", host)))


def _inputs(b=2, h=3, lq=37, lk=70, d=16, dv=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, h, lq, d, generator=g),
            torch.randn(b, h, lk, d, generator=g),
            torch.randn(b, h, lk, dv, generator=g))


def _masks(b, h, lq, lk, seed=1):
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(b, 1, lq, lk, generator=g) > 0.3
    keep[0, 0, 5] = False  # a query every key is hidden from: zeros
    padding = torch.ones(b, 1, 1, lk, dtype=torch.bool)
    padding[1, ..., lk // 2:] = False
    additive = torch.randn(lq, lk, generator=g)
    additive[3, :] = float("-inf")
    return {"bool": keep, "padding": padding, "additive": additive}


@pytest.mark.parametrize("fused", [True, False])
# PyTorch's attention takes a mask or is_causal, not both.
@pytest.mark.parametrize("mask, causal", [
    (None, False), (None, True), ("bool", False), ("padding", False),
    ("additive", False)])
def test_matches_eager(fused, mask, causal):
    q, k, v = _inputs()
    args = (q, k, v)
    if mask:
        args += (_masks(2, 3, 37, 70)[mask],)
    model = Sdpa(causal=causal)
    with torch.no_grad():
        expected = model(*args).numpy()
    compiled = flow.compile(model, args, fused_attention=fused)
    fused_commands, gemms = _commands(compiled, fused_attention=fused)
    # Fused: one command and no GEMM; expanded: the two products.
    assert (fused_commands, gemms) == ((1, 0) if fused else (0, 2))
    got = np.asarray(compiled(*args))
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


def test_long_sequence_scale_and_rank_three():
    # 300 queries over 600 keys: several blocks of each; an explicit scale.
    g = torch.Generator().manual_seed(4)
    q = torch.randn(4, 300, 32, generator=g)
    k = torch.randn(4, 600, 32, generator=g)
    v = torch.randn(4, 600, 32, generator=g)
    model = Sdpa(scale=0.05)
    compiled = flow.compile(model, (q, k, v))
    with torch.no_grad():
        expected = model(q, k, v).numpy()
    np.testing.assert_allclose(np.asarray(compiled(q, k, v)), expected,
                               rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_narrow_types(dtype):
    q, k, v = (t.to(dtype) for t in _inputs(lq=33, lk=65, d=32, dv=32))
    mask = _masks(2, 3, 33, 65)["padding"]
    model = Sdpa()
    compiled = flow.compile(model, (q, k, v, mask))
    assert _commands(compiled)[0] == 1
    got = compiled(q, k, v, mask)
    assert got.dtype == dtype
    got = got.float()
    # The exact result of the narrow inputs (f64), and PyTorch's narrow one.
    exact = model(*(t.double() for t in (q, k, v)), mask).float()
    eager = model(q, k, v, mask).float()
    # Flow sums in f32 and rounds once: within the unit roundoff (bf16
    # 2^-8, f16 2^-11, relative) of the exact result, plus f32 noise.
    unit = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
    bound = unit * exact.abs() + 1e-5
    assert ((got - exact).abs() <= bound).all()
    # PyTorch rounds its intermediates too: no further from exact than it.
    assert (got - exact).abs().max() <= (eager - exact).abs().max() + 1e-5


def test_gradients_match_autograd():
    """Training differentiates through the fused op (its gradient rule
    recomputes the probabilities)."""
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, d=32, heads=4):
            super().__init__()
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.out = torch.nn.Linear(d, d)
            self.heads = heads

        def forward(self, x, mask):
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(
                2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.out(a.transpose(1, 2).reshape(b, t, d))

    model = Block()
    x = torch.randn(3, 12, 32)
    mask = torch.zeros(3, 1, 12, 12)
    mask[1, ..., 8:] = float("-inf")

    def loss_fn(m, x, mask):
        return m(x, mask).square().mean()

    reference = Block()
    reference.load_state_dict(model.state_dict())
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    # One SGD step of lr 1: each weight moves by exactly its gradient.
    step = flow.compile_train(model, loss_fn, (x, mask),
                              optimizer=flow.optim.SGD(lr=1.0))
    flow_loss = float(step(x, mask))
    loss = loss_fn(reference, x, mask)
    loss.backward()
    np.testing.assert_allclose(flow_loss, loss.item(), rtol=1e-5)
    trained = step.parameters()
    for name, p in reference.named_parameters():
        got = before[name].numpy() - trained[name].numpy()
        # Gradients of order 1e-2, sums of a few hundred f32 products.
        np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-3,
                                   atol=1e-6, err_msg=name)
        assert np.abs(p.grad.numpy()).max() > 0  # the test can see a zero
