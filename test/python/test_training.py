"""flow.compile_train against PyTorch: models trained for 50 steps.

Each model is trained twice from the same initial weights on the same
batches, in the same order: by Flow's compiled training step, and by
PyTorch eager with torch.optim. The loss curves and the final weights are
compared.

Tolerances: each step's loss at rtol 1e-4; final weights at atol 2e-5 plus
rtol 1e-4. A step's gradients agree with autograd to a few f32 ulps
(test_autodiff.py); 50 updates accumulate those differences (SGD adds
lr * gradient differences each step; Adam divides by sqrt(v), so a
gradient difference of a few ulps moves a weight by a few ulps of lr). A
wrong gradient or update rule is off by 1e-3 or more within a few steps
(test_optimizers.py shows one). The one exception is stated where it
arises: attention's key bias, whose true gradient is zero.
"""

import copy

import numpy as np
import pytest

from conftest import require

flow = require("flow")
torch = require("torch")
F = torch.nn.functional


def train_both(model, loss_fn, batches, optimizer, torch_optimizer,
               max_grad_norm=None, lrs=None):
    """Trains `model` with Flow and a copy with PyTorch; returns (Flow's
    losses, torch's losses, the compiled step, the torch model)."""
    reference = copy.deepcopy(model)
    step = flow.compile_train(model, loss_fn, batches[0], optimizer=optimizer,
                              max_grad_norm=max_grad_norm)
    opt = torch_optimizer(reference.parameters())
    flow_losses, torch_losses = [], []
    for i, batch in enumerate(batches):
        if lrs:
            step.lr = lrs[i]
            for group in opt.param_groups:
                group["lr"] = lrs[i]
        flow_losses.append(float(step(*batch)))
        opt.zero_grad()
        loss = loss_fn(reference, *batch)
        loss.backward()
        if max_grad_norm:
            torch.nn.utils.clip_grad_norm_(reference.parameters(),
                                           max_grad_norm)
        opt.step()
        torch_losses.append(loss.item())
    return flow_losses, torch_losses, step, reference


def assert_same_weights(step, reference, skip=(), atol=2e-5):
    trained = step.parameters()
    for name, p in reference.named_parameters():
        if name in skip:
            continue
        np.testing.assert_allclose(trained[name].numpy(),
                                   p.detach().numpy(), rtol=1e-4, atol=atol,
                                   err_msg=name)


def classification(steps=50, n=32, features=20, classes=6, seed=0):
    """A synthetic classification set: labels from a fixed random linear
    map, so the model can learn it."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(features, classes, generator=g)
    batches = []
    for _ in range(steps):
        x = torch.randn(n, features, generator=g)
        batches.append((x, (x @ teacher).argmax(1)))
    return batches


def test_mlp_sgd_momentum():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.GELU(),
                                torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 6))
    loss_fn = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    flow_losses, torch_losses, step, reference = train_both(
        model, loss_fn, classification(), flow.optim.SGD(lr=0.05,
                                                         momentum=0.9),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9))
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    assert_same_weights(step, reference)
    assert np.mean(flow_losses[-10:]) < 0.6 * np.mean(flow_losses[:10])


class TinyLM(torch.nn.Module):
    """A 2-layer transformer encoder over token embeddings (no dropout)."""

    def __init__(self, vocab=40, d=32, seq=8):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0,
                                                 batch_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, 2,
                                                  enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.norm(self.layers(self.emb(ids) + self.pos)))


def test_recompute_trades_compute_for_memory(tmp_path):
    """recompute="elementwise": the backward recomputes every element-wise
    op's result where it reads it. The step computes the same values (the
    same kernels on the same inputs: losses and weights bit for bit), and
    the memory plan's arena shrinks (the forward values die in the forward
    pass; 6.96 MB to 4.23 MB for this model when written)."""
    import json
    import subprocess
    from flowtest import tool
    g = torch.Generator().manual_seed(2)
    batch = (torch.randint(0, 40, (16, 32), generator=g),
             torch.randint(0, 40, (16, 32), generator=g))
    loss_fn = lambda m, x, y: F.cross_entropy(  # noqa: E731
        m(x).flatten(0, 1), y.flatten())
    runs = {}
    for recompute in (None, "elementwise"):
        torch.manual_seed(1)
        step = flow.compile_train(TinyLM(d=64, seq=32), loss_fn, batch,
                                  optimizer=flow.optim.AdamW(lr=1e-3),
                                  recompute=recompute)
        losses = [float(step(*batch)) for _ in range(3)]
        source = tmp_path / f"{recompute}.mlir"
        source.write_text(step.program.text)
        report = tmp_path / f"{recompute}.json"
        subprocess.run([str(tool("flow-compile")), str(source), "-o",
                        str(tmp_path / f"{recompute}.fbin"),
                        f"--report={report}"], check=True)
        runs[recompute] = (losses, step.parameters(),
                           json.loads(report.read_text())["arena_bytes"])
    (saved, saved_weights, saved_arena) = runs[None]
    (again, again_weights, again_arena) = runs["elementwise"]
    assert again == saved
    assert all(torch.equal(saved_weights[n], again_weights[n])
               for n in saved_weights)
    assert again_arena < 0.8 * saved_arena, (again_arena, saved_arena)


def test_transformer_adamw_clipped_label_smoothing():
    torch.manual_seed(2)
    model = TinyLM()
    g = torch.Generator().manual_seed(3)
    # Next-token prediction over a fixed random sequence of 8-token windows.
    stream = torch.randint(0, 40, (400,), generator=g)
    batches = []
    for i in range(50):
        starts = torch.randint(0, 390, (4,), generator=g)
        ids = torch.stack([stream[s:s + 8] for s in starts])
        tgt = torch.stack([stream[s + 1:s + 9] for s in starts])
        batches.append((ids, tgt))

    def loss_fn(m, ids, tgt):
        logits = m(ids)
        return F.cross_entropy(logits.reshape(-1, 40), tgt.reshape(-1),
                               label_smoothing=0.1)
    lrs = [3e-3 * min(1.0, (i + 1) / 10) for i in range(50)]  # warm-up
    flow_losses, torch_losses, step, reference = train_both(
        model, loss_fn, batches, flow.optim.AdamW(lr=3e-3),
        lambda p: torch.optim.AdamW(p, lr=3e-3), max_grad_norm=1.0, lrs=lrs)
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    # Attention's key bias: softmax does not change when a constant is added
    # to every score of a row, so its true gradient is zero, and both sides
    # compute rounding noise. Adam scales that noise up to steps of +-lr:
    # the key bias may differ by up to lr per step, and nothing else may.
    biases = [f"layers.layers.{i}.self_attn.in_proj_bias" for i in range(2)]
    assert_same_weights(step, reference, skip=biases)
    trained = step.parameters()
    d = 32
    for name in biases:
        got = trained[name].numpy()
        want = dict(reference.named_parameters())[name].detach().numpy()
        for part in (slice(0, d), slice(2 * d, 3 * d)):  # query and value
            np.testing.assert_allclose(got[part], want[part], rtol=1e-4,
                                       atol=2e-5, err_msg=name)
        assert np.abs(got[d:2 * d] - want[d:2 * d]).max() <= sum(lrs)
    assert np.mean(flow_losses[-10:]) < np.mean(flow_losses[:10])


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.c1(x)), 2)
        h = F.relu(self.c2(h))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def test_cnn_sgd_weight_decay():
    torch.manual_seed(4)
    model = SmallCNN()
    g = torch.Generator().manual_seed(5)
    batches = []
    for _ in range(50):
        x = torch.randn(8, 3, 12, 12, generator=g)
        # Label: which quadrant of the image is brightest.
        q = torch.stack([x[:, :, :6, :6].sum((1, 2, 3)),
                         x[:, :, :6, 6:].sum((1, 2, 3)),
                         x[:, :, 6:, :6].sum((1, 2, 3)),
                         x[:, :, 6:, 6:].sum((1, 2, 3))], 1)
        batches.append((x, q.argmax(1)))
    loss_fn = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    flow_losses, torch_losses, step, reference = train_both(
        model, loss_fn, batches,
        flow.optim.SGD(lr=0.05, momentum=0.9, weight_decay=1e-3),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9,
                                  weight_decay=1e-3))
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    assert_same_weights(step, reference)


# --- state: checkpoints, copies, mismatches ---------------------------------

def mlp_and_data():
    torch.manual_seed(6)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 6))
    loss_fn = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    return model, loss_fn, classification(steps=12)


def test_checkpoint_resume_is_bit_identical(tmp_path):
    model, loss_fn, batches = mlp_and_data()
    optimizer = flow.optim.AdamW(lr=1e-2)
    straight = flow.compile_train(copy.deepcopy(model), loss_fn, batches[0],
                                  optimizer=optimizer)
    for batch in batches:
        straight(*batch)
    first = flow.compile_train(copy.deepcopy(model), loss_fn, batches[0],
                               optimizer=optimizer)
    for batch in batches[:5]:
        first(*batch)
    first.save(tmp_path / "step5.safetensors")
    resumed = flow.compile_train(copy.deepcopy(model), loss_fn, batches[0],
                                 optimizer=optimizer)
    resumed.load(tmp_path / "step5.safetensors")
    assert resumed.steps == 5
    for batch in batches[5:]:
        resumed(*batch)
    a, b = straight.state_dict(), resumed.state_dict()
    assert set(a) == set(b) and "optimizer.step" in a
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert int(b["optimizer.step"]) == len(batches)


def test_copy_to_puts_the_trained_weights_in_the_model():
    model, loss_fn, batches = mlp_and_data()
    step = flow.compile_train(model, loss_fn, batches[0],
                              optimizer=flow.optim.SGD(lr=0.1))
    before = model[0].weight.detach().clone()
    step(*batches[0])
    # Compiling copies the weights: the model is unchanged until copy_to.
    assert torch.equal(model[0].weight, before)
    step.copy_to(model)
    assert torch.equal(model[0].weight.detach(), step.parameters()["0.weight"])
    assert not torch.equal(model[0].weight.detach(), before)


def test_a_state_for_another_model_is_refused():
    model, loss_fn, batches = mlp_and_data()
    step = flow.compile_train(model, loss_fn, batches[0],
                              optimizer=flow.optim.AdamW(lr=1e-2))
    state = step.state_dict()
    other = dict(state)
    other["3.weight"] = other.pop("2.weight")
    with pytest.raises(flow.FlowError, match=r"missing \['2.weight'\]; "
                       r"unexpected \['3.weight'\]"):
        step.load_state_dict(other)
    wrong = dict(state)
    wrong["0.weight"] = torch.zeros(16, 21)
    with pytest.raises(flow.FlowError, match=r"state '0.weight' is "
                       r"float32\[16, 21\]; this training step's is "
                       r"float32\[16, 20\]"):
        step.load_state_dict(wrong)


def test_nan_loss_is_reported_and_the_state_kept():
    model, loss_fn, batches = mlp_and_data()
    step = flow.compile_train(model, loss_fn, batches[0],
                              optimizer=flow.optim.SGD(lr=0.1))
    step(*batches[0])
    before = step.state_dict()
    x, y = batches[1]
    x = x.clone()
    x[0, 0] = float("nan")
    with pytest.raises(flow.FlowError, match="the loss is nan at step 2; "
                       "the state was not updated"):
        step(x, y)
    after = step.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # Not raising: the loss says it, and the compiled guard still keeps
    # the state.
    step.stop_on_nan = False
    assert np.isnan(float(step(x, y)))
    after = step.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # Compiled without the guard, the step goes on as PyTorch's does: the
    # NaN reaches the weights.
    free = flow.compile_train(model, loss_fn, batches[0],
                              optimizer=flow.optim.SGD(lr=0.1),
                              stop_on_nan=False)
    assert np.isnan(float(free(x, y)))
    assert any(torch.isnan(v).any() for v in free.parameters().values())


def test_batch_norm_in_training_mode():
    """Batch norm in training mode: normalized by each batch's statistics,
    its running statistics updated as PyTorch updates them (state the step
    writes, checkpointed and copied back with the weights)."""
    torch.manual_seed(7)
    # (No bias before a batch norm in training mode: its true gradient is
    # zero, so both sides would train rounding noise, which Adam amplifies.)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(8, 16, bias=False),
        torch.nn.BatchNorm1d(16, momentum=0.3),
        torch.nn.Tanh(), torch.nn.Linear(16, 4))
    g = torch.Generator().manual_seed(3)
    batches = [(torch.randn(8, 3, 8, 8, generator=g) * 2 + 1,
                torch.randint(0, 4, (8,), generator=g)) for _ in range(20)]
    loss_fn = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    flow_losses, torch_losses, step, reference = train_both(
        model, loss_fn, batches, flow.optim.AdamW(lr=1e-2),
        lambda p: torch.optim.AdamW(p, lr=1e-2))
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    assert_same_weights(step, reference)
    state = step.state_dict()
    for name, buffer in reference.named_buffers():
        np.testing.assert_allclose(state[name].numpy(), buffer.numpy(),
                                   rtol=1e-4, atol=1e-6, err_msg=name)
    assert int(state["1.num_batches_tracked"]) == 20
    step.copy_to(model)
    assert torch.equal(model[1].running_var, state["1.running_var"])


def test_frozen_batch_norm_trains_its_affine_parameters():
    """Batch norm in eval mode (frozen statistics, as when fine-tuning)
    normalizes by its running statistics; its weight and bias train."""
    torch.manual_seed(8)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(8, 4))
    bn = model[1]
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    bn.eval()
    g = torch.Generator().manual_seed(9)
    batches = [(torch.randn(8, 3, 8, 8, generator=g),
                torch.randint(0, 4, (8,), generator=g)) for _ in range(20)]
    loss_fn = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    flow_losses, torch_losses, step, reference = train_both(
        model, loss_fn, batches, flow.optim.SGD(lr=0.1, momentum=0.9),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    assert_same_weights(step, reference)
    assert not torch.equal(step.parameters()["1.weight"], torch.ones(8))


def test_a_parameter_that_does_not_reach_the_loss_is_warned_about():
    model = torch.nn.ModuleDict({"used": torch.nn.Linear(4, 2),
                                 "unused": torch.nn.Linear(4, 2)})
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match=r"\('unused.weight'\) of "
                      r"@train_step does not reach the loss"):
        step = flow.compile_train(model, lambda m, x: m["used"](x).sum(),
                                  (x,), optimizer=flow.optim.SGD(lr=0.1))
    step(x)
    # Its gradient is zero: plain SGD leaves it where it was.
    assert torch.equal(step.parameters()["unused.weight"],
                       model["unused"].weight.detach())


def test_a_loss_that_is_not_a_scalar_is_refused():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(flow.FlowError, match="the loss must be a float "
                       "tensor of one element"):
        flow.compile_train(model, lambda m, x: m(x), (torch.randn(3, 4),),
                           optimizer=flow.optim.SGD(lr=0.1))


def test_cumulative_batch_norm_is_refused_by_name():
    """momentum=None (a cumulative average) is refused naming the module,
    not left to torch.export's data-dependent-guard error."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8),
                                torch.nn.BatchNorm1d(8, momentum=None))
    with pytest.raises(flow.FlowError, match=r"batch norm '1' has "
                       r"momentum=None .* give it a momentum"):
        flow.compile_train(model, lambda m, x: m(x).square().mean(),
                           (torch.randn(16, 4),),
                           optimizer=flow.optim.SGD(lr=0.1))
    # In eval mode its statistics are frozen: it trains.
    model.eval()
    step = flow.compile_train(model, lambda m, x: m(x).square().mean(),
                              (torch.randn(16, 4),),
                              optimizer=flow.optim.SGD(lr=0.1))
    step(torch.randn(16, 4))


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(sbp={"weight": "S(0)"}), "FlowError", "pass mesh="),
    (dict(shard_state=True), "FlowError", "pass mesh="),
    (dict(mesh=2, sbp={"wieght": flow.sbp.split(0)}), "ValueError",
     r"sbp names input 'wieght'; the inputs are \['weight', 'bias', "
     r"'batch_0'\]"),
    (dict(mesh=2, sbp={3: flow.sbp.broadcast}), "ValueError",
     "sbp names input 3"),
    (dict(mesh=(2, 2), sbp={"weight": flow.sbp.split(0)}), "ValueError",
     "an SBP on a mesh of rank 2 needs 2 entries"),
])
def test_mesh_placement_errors(kwargs, error, message):
    """Placements for training on a mesh are checked before anything is
    compiled: by parameter or input name, or batch position."""
    model = torch.nn.Linear(4, 2)
    with pytest.raises(getattr(flow, error, None) or ValueError,
                       match=message):
        flow.compile_train(model, lambda m, x: m(x).sum(),
                           (torch.randn(4, 4),),
                           optimizer=flow.optim.SGD(lr=0.1), **kwargs)


def test_hugging_face_gpt2_with_tied_embeddings():
    """A small Hugging Face GPT-2 (its output projection is the token
    embedding, one parameter under two names) trains as in PyTorch: the
    tied weight is one state, updated by both of its uses' gradients."""
    transformers = require("transformers")
    torch.manual_seed(7)
    config = transformers.GPT2Config(
        vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        attn_implementation="eager")
    model = transformers.GPT2LMHeadModel(config)
    assert model.lm_head.weight is model.transformer.wte.weight
    g = torch.Generator().manual_seed(8)
    batches = [(torch.randint(0, 64, (4, 16), generator=g),)
               for _ in range(20)]
    loss_fn = lambda m, ids: m(input_ids=ids, labels=ids).loss  # noqa: E731
    flow_losses, torch_losses, step, reference = train_both(
        model, loss_fn, batches, flow.optim.AdamW(lr=1e-3),
        lambda p: torch.optim.AdamW(p, lr=1e-3))
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    assert "lm_head.weight" not in step.parameters()
    # GPT-2's attention has no key bias of its own: c_attn's bias holds the
    # query, key and value biases, and the key part has a zero gradient
    # (see the transformer test above). Weights at atol 0.1 lr: an element
    # whose gradient is near zero moves by up to lr per step under Adam
    # whatever its rounding; a wrong rule (the head's gradient missing from
    # the tied embedding) is off by about lr per step, 2e-2 here.
    d = 32
    biases = [f"transformer.h.{i}.attn.c_attn.bias" for i in range(2)]
    assert_same_weights(step, reference, skip=biases, atol=1e-4)
    trained = step.parameters()
    for name in biases:
        got = trained[name].numpy()
        want = dict(reference.named_parameters())[name].detach().numpy()
        np.testing.assert_allclose(got[:d], want[:d], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got[2 * d:], want[2 * d:], rtol=1e-4,
                                   atol=1e-4)
        assert np.abs(got[d:2 * d] - want[d:2 * d]).max() <= 20 * 1e-3
