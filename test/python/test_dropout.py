"""Dropout in training: Flow's counter-based generator (flow.random_uniform)
against its documented formula, and training steps with dropout against
PyTorch given the same masks.

Flow's numbers are not torch's (torch draws from its own generator), so the
PyTorch reference here applies Flow's masks, computed by `uniform` below
from the formula in the op's description (docs/reference/FlowDialect.md).
With the same masks a step is the same computation, so the tolerances are
those of test_training.py: losses at rtol 1e-5, weights at atol 1e-6.
"""

import numpy as np
import pytest

from conftest import require

flow = require("flow")
torch = require("torch")
F = torch.nn.functional

_G = np.uint64(0x9E3779B97F4A7C15)


def _mix(z):
    """SplitMix64's finalizer on uint64 arrays (wrapping)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform(seed, offset, stream, shape):
    """flow.random_uniform's numbers, from the op's documented formula."""
    with np.errstate(over="ignore"):
        seed = np.array(seed & (2**64 - 1), np.uint64)
        counter = np.uint64(offset) * _G + np.uint64(stream)
        key = seed + _mix(np.array(counter, np.uint64))
        n = int(np.prod(shape, dtype=np.int64))
        index = np.arange(1, n + 1, dtype=np.uint64)
        bits = _mix(key + index * _G)
    top = (bits >> np.uint64(40)).astype(np.float32)
    return (top * np.float32(2.0 ** -24)).reshape(shape)


RANDOM = """
func.func @main(%seed: tensor<i64>, %offset: tensor<i64>) -> ({types}) {{
{ops}
  return {values} : {types}
}}
"""


def test_random_uniform_is_the_documented_formula():
    shapes = [(), (7,), (3, 5), (2, 3, 64)]
    ops, values, types = [], [], []
    for stream, shape in enumerate(shapes):
        t = f"tensor<{'x'.join(map(str, shape)) + 'x' if shape else ''}f32>"
        ops.append(f"  %u{stream} = flow.random_uniform %seed, %offset "
                   f"stream = {stream + 2} : {t}")
        values.append(f"%u{stream}")
        types.append(t)
    module = flow.compile_mlir(RANDOM.format(
        ops="\n".join(ops), values=", ".join(values), types=", ".join(types)))
    for seed, offset in [(0, 0), (1234, 7), (-5, 2**40), (2**62 + 3, 1)]:
        got = module(np.array(seed, np.int64), np.array(offset, np.int64))
        for stream, (shape, u) in enumerate(zip(shapes, got)):
            want = uniform(seed, offset, stream + 2, shape)
            np.testing.assert_array_equal(u, want, err_msg=f"{seed} {shape}")
            assert u.min() >= 0 and u.max() < 1


def test_random_uniform_is_uniform():
    """The mean, the variance and a 16-bin histogram of 2^20 numbers are
    those of U[0, 1) to within 5 standard errors; neighbouring elements and
    neighbouring offsets are uncorrelated."""
    n = 1 << 20
    t = f"tensor<{n}xf32>"
    module = flow.compile_mlir(RANDOM.format(
        ops=f"  %u = flow.random_uniform %seed, %offset stream = 0 : {t}",
        values="%u", types=t))
    (u,) = module(np.array(42, np.int64), np.array(0, np.int64))
    (v,) = module(np.array(42, np.int64), np.array(1, np.int64))
    u, v = u.astype(np.float64), v.astype(np.float64)
    se = 1 / np.sqrt(n)
    assert abs(u.mean() - 0.5) < 5 * se * np.sqrt(1 / 12)
    assert abs(u.var() - 1 / 12) < 5 * se * np.sqrt(1 / 180)
    counts = np.histogram(u, bins=16, range=(0, 1))[0]
    expected = n / 16
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5 * se
    assert abs(np.corrcoef(u, v)[0, 1]) < 5 * se


class DropoutMLP(torch.nn.Module):
    """Two dropout sites: a module and a functional call (streams 0, 1)."""

    def __init__(self, p=0.3, q=0.5):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.drop = torch.nn.Dropout(p)
        self.b = torch.nn.Linear(32, 32)
        self.c = torch.nn.Linear(32, 4)
        self.q = q

    def forward(self, x):
        h = self.drop(torch.relu(self.a(x)))
        h = F.dropout(torch.tanh(self.b(h)), self.q, self.training)
        return self.c(h)


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


def batches(n, rows=8):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(rows, 16, generator=g),
             torch.randint(0, 4, (rows,), generator=g)) for _ in range(n)]


def reference_step(model, opt, x, y, seed, step):
    """The torch step with Flow's masks for step `step`."""
    a = torch.relu(model.a(x))
    keep = torch.from_numpy(uniform(seed, step, 0, tuple(a.shape)) < 0.7)
    h = a * (keep.float() * (1 / 0.7))
    b = torch.tanh(model.b(h))
    keep = torch.from_numpy(uniform(seed, step, 1, tuple(b.shape)) < 0.5)
    h = b * (keep.float() * (1 / 0.5))
    loss = F.cross_entropy(model.c(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


@pytest.mark.parametrize("seed", [1234, -3])
def test_training_with_dropout_matches_torch_given_the_same_masks(seed):
    torch.manual_seed(0)
    model = DropoutMLP()
    reference = DropoutMLP()
    reference.load_state_dict(model.state_dict())
    data = batches(20)
    step = flow.compile_train(model, loss_fn, data[0],
                              optimizer=flow.optim.AdamW(lr=1e-2), seed=seed)
    assert {"rng.seed", "rng.offset"} <= set(step.state_dict())
    opt = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    for k, (x, y) in enumerate(data):
        got = float(step(x, y))
        want = reference_step(reference, opt, x, y, seed, k)
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=f"step {k}")
    assert int(step.state_dict()["rng.offset"]) == len(data)
    trained = step.parameters()
    for name, p in reference.named_parameters():
        np.testing.assert_allclose(trained[name].numpy(), p.detach().numpy(),
                                   rtol=1e-4, atol=1e-6, err_msg=name)


def test_zero_rate_is_eval():
    """Dropout of rate 0 in training mode is the identity: the step equals
    the eval-mode model's and has no random state."""
    torch.manual_seed(0)
    train_mode = DropoutMLP(p=0.0, q=0.0)
    eval_mode = DropoutMLP(p=0.0, q=0.0)
    eval_mode.load_state_dict(train_mode.state_dict())
    eval_mode.eval()
    data = batches(5)
    steps = [flow.compile_train(m, loss_fn, data[0],
                                optimizer=flow.optim.SGD(lr=0.1))
             for m in (train_mode, eval_mode)]
    assert "rng.seed" not in steps[0].state_dict()
    for x, y in data:
        assert float(steps[0](x, y)) == float(steps[1](x, y))
    # A model in eval mode does not drop at any rate.
    eval_drop = DropoutMLP()
    eval_drop.eval()
    assert "rng.seed" not in flow.compile_train(
        eval_drop, loss_fn, data[0],
        optimizer=flow.optim.SGD(lr=0.1)).state_dict()


def test_the_seed_chooses_the_masks():
    data = batches(4)

    def losses(seed=None, manual=None):
        torch.manual_seed(0)
        model = DropoutMLP()
        if manual is not None:
            torch.manual_seed(manual)
        step = flow.compile_train(model, loss_fn, data[0],
                                  optimizer=flow.optim.SGD(lr=0.1), seed=seed)
        return [float(step(x, y)) for x, y in data]

    assert losses(seed=7) == losses(seed=7)
    assert losses(seed=7) != losses(seed=8)
    # By default the seed is torch's: torch.manual_seed repeats a run.
    assert losses(manual=5) == losses(manual=5)
    assert losses(manual=5) == losses(seed=5)
    assert losses(manual=5) != losses(manual=6)


def test_a_checkpoint_resumes_the_random_stream(tmp_path):
    """Save at step 3, load into a fresh compile, continue: the same losses
    and state as 6 uninterrupted steps (the offset is in the state)."""
    data = batches(6)
    torch.manual_seed(0)
    model = DropoutMLP()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    whole = flow.compile_train(model, loss_fn, data[0],
                               optimizer=flow.optim.AdamW(lr=1e-2), seed=11)
    want = [float(whole(x, y)) for x, y in data]

    model.load_state_dict(initial)
    first = flow.compile_train(model, loss_fn, data[0],
                               optimizer=flow.optim.AdamW(lr=1e-2), seed=11)
    got = [float(first(x, y)) for x, y in data[:3]]
    first.save(tmp_path / "ckpt.safetensors")
    model.load_state_dict(initial)
    second = flow.compile_train(model, loss_fn, data[0],
                                optimizer=flow.optim.AdamW(lr=1e-2), seed=99)
    second.load(tmp_path / "ckpt.safetensors")
    got += [float(second(x, y)) for x, y in data[3:]]
    assert got == want
    end, resumed = whole.state_dict(), second.state_dict()
    assert all(torch.equal(end[k], resumed[k]) for k in end)


def test_drop_rate_and_scale():
    """A kept element is x / (1 - p), a dropped one 0, at rate p (within 5
    standard errors over 2^18 elements)."""
    n, p = 1 << 18, 0.3

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(n))

        def forward(self, x):
            return F.dropout(self.w * x, p, True)

    probe = Probe()
    # The loss is the sum of the dropped-out vector: its gradient with
    # respect to w (x = 1) is the mask times 1 / (1 - p); with SGD at lr 1
    # the new weight is 1 - mask / (1 - p).
    step = flow.compile_train(probe, lambda m, x: m(x).sum(), (torch.ones(n),),
                              optimizer=flow.optim.SGD(lr=1.0), seed=3)
    loss = float(step(torch.ones(n)))
    w = step.parameters()["w"].numpy()
    scale = np.float32(1 / (1 - p))
    assert set(np.unique(w).tolist()) == {1.0, float(np.float32(1) - scale)}
    kept = w != 1.0
    assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
    # (The loss is an f32 sum of 2^18 terms.)
    np.testing.assert_allclose(loss, kept.sum() * scale, rtol=1e-4)
    want = uniform(3, 0, 0, (n,)) < np.float32(1 - p)
    np.testing.assert_array_equal(kept, want)


def test_channel_dropout_drops_whole_channels():
    class Channels(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.drop = torch.nn.Dropout2d(0.5)

        def forward(self, x):
            return self.drop(self.conv(x)).square().mean()

    x = torch.randn(4, 3, 6, 6)
    step = flow.compile_train(Channels(), None, (x,),
                              optimizer=flow.optim.SGD(lr=0.0), seed=21)
    loss = float(step(x))
    # The same loss from the channel mask the formula gives.
    model = Channels()
    model.load_state_dict({k: v for k, v in step.parameters().items()})
    keep = torch.from_numpy(uniform(21, 0, 0, (4, 16, 1, 1)) < 0.5)
    want = (model.conv(x) * keep.float() * 2.0).square().mean()
    np.testing.assert_allclose(loss, float(want), rtol=1e-5)


def test_transformer_layer_with_dropout_trains():
    """A transformer encoder layer in training mode (dropout in attention
    and after each block): the step drops (its loss differs from the
    eval-mode step's) and repeats with its seed."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.2,
                                             batch_first=True)
    x, w = torch.randn(2, 10, 32), torch.randn(32)
    # (Not a function of the normalized rows' norms, which layer norm fixes.)
    fn = lambda m, x: (m(x) @ w).square().mean()  # noqa: E731

    def run(mode):
        torch.manual_seed(0)
        m = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.2,
                                             batch_first=True)
        m.load_state_dict(layer.state_dict())
        m.train(mode)
        step = flow.compile_train(m, fn, (x,),
                                  optimizer=flow.optim.AdamW(lr=1e-3), seed=2)
        return [float(step(x)) for _ in range(3)]

    dropped = run(True)
    assert dropped == run(True)
    assert np.all(np.isfinite(dropped))
    plain = run(False)
    assert dropped[0] != plain[0]
    # The eval-mode step is torch's eval-mode loss.
    with torch.no_grad():
        layer.eval()
        np.testing.assert_allclose(plain[0], float(fn(layer, x)), rtol=1e-5)


def test_random_ops_outside_a_training_step_are_refused():
    """Inference compiles a model in eval mode; attention told to drop out
    regardless (dropout_p > 0) has no generator there: refused by name,
    never silently kept."""

    class Attention(torch.nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)

    with pytest.raises(flow.UnsupportedOpsError,
                       match="outside a training step"):
        flow.compile(Attention(), torch.randn(2, 4, 8))

    class Noise(torch.nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)

    with pytest.raises(flow.UnsupportedOpsError, match="rand_like"):
        flow.compile(Noise(), torch.randn(2, 4))
