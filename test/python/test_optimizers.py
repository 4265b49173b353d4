"""flow-apply-optimizer against torch.optim: an MLP trained for 20 steps.

The training step is compiled once: `flow.requires_grad` parameters with
`flow.state` names, a `flow.optimizer` dictionary, and the loss (softmax
cross-entropy against one-hot labels). Each call returns the loss and the
next value of every state (parameters, moments, the step count), which the
test feeds back as the next call's state, as the runtime will keep it
resident. torch trains the same MLP from the same weights on the same
batches with torch.optim and clip_grad_norm_.

Tolerances: losses at rtol 1e-4 and weights at rtol 1e-4, atol 1e-5 after 20
steps: each step's gradient agrees to a few f32 ulps (test_autodiff.py), and
Adam's update divides by sqrt(v), which amplifies a difference in a small
gradient at most by the ratio of the step to eps; a wrong update rule (a
missing bias correction, weight decay applied to the gradient instead of
decoupled, a momentum off by one step) is off by 1e-2 or more within three
steps.
"""

import re

import numpy as np
import pytest

from conftest import require

flow = require("flow")
torch = require("torch")

STEP = """
func.func @step(%x: tensor<16x12xf32>,
                %w1: tensor<12x24xf32> {{flow.requires_grad, flow.state = "fc1.weight"}},
                %b1: tensor<24xf32> {{flow.requires_grad, flow.state = "fc1.bias"}},
                %w2: tensor<24x5xf32> {{flow.requires_grad, flow.state = "fc2.weight"}},
                %b2: tensor<5xf32> {{flow.requires_grad, flow.state = "fc2.bias"}},
                %t: tensor<16x5xf32>) -> tensor<f32>
    attributes {{flow.optimizer = {optimizer}}} {{
  %h0 = flow.matmul %x, %w1 : (tensor<16x12xf32>, tensor<12x24xf32>) -> tensor<16x24xf32>
  %h1 = flow.add %h0, %b1 : (tensor<16x24xf32>, tensor<24xf32>) -> tensor<16x24xf32>
  %h = flow.tanh %h1 : tensor<16x24xf32>
  %z0 = flow.matmul %h, %w2 : (tensor<16x24xf32>, tensor<24x5xf32>) -> tensor<16x5xf32>
  %z = flow.add %z0, %b2 : (tensor<16x5xf32>, tensor<5xf32>) -> tensor<16x5xf32>
  %lp = flow.log_softmax %z axis = 1 : tensor<16x5xf32>
  %p = flow.mul %lp, %t : (tensor<16x5xf32>, tensor<16x5xf32>) -> tensor<16x5xf32>
  %s = flow.reduce_sum %p [0, 1] : tensor<16x5xf32> -> tensor<f32>
  %n = flow.constant dense<-0.0625> : tensor<f32>
  %l = flow.mul %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}}
"""

NAMES = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def roles(text):
    """The compiled step's arguments and results: ("x"|"t"|"lr"|state name),
    read from its signature after the passes."""
    ir = flow.compile_ir(text, "flow")
    header = ir[ir.index("func.func @step("):]
    header = header[:header.index("{\n")]
    args, results = header.split(") -> (", 1)
    arg_roles = []
    for arg in args.split("%arg")[1:]:
        state = re.search(r'flow.state = "([^"]+)"', arg)
        arg_roles.append(state[1] if state else
                         "lr" if "flow.learning_rate" in arg else None)
    # Arguments without a role are the batch: x, then t.
    batch = iter(["x", "t"])
    arg_roles = [r if r else next(batch) for r in arg_roles]
    result_roles = [m[1] if m else "loss" for m in
                    (re.search(r'flow.state = "([^"]+)"', r)
                     for r in results.split("tensor<")[1:])]
    return arg_roles, result_roles


def initial_state(name, params):
    """The first value of optimizer state `name`: zeros shaped like its
    parameter (`<parameter>.<moment>`), or the step count."""
    if name == "optimizer.step":
        return np.zeros((), np.int64)
    return np.zeros_like(params[name.rsplit(".", 1)[0]])


def train_flow(text, params, batches, lrs, roles_text=None):
    """Trains with the step compiled from `text`, feeding each call's state
    results back as the next call's state arguments. `roles_text` is a
    single-device text with the same arguments, to read them from (a mesh
    step's signature is its devices')."""
    module = flow.compile_mlir(text)
    arg_roles, result_roles = roles(roles_text or text)
    state = dict(params)
    losses = []
    for (x, t), lr in zip(batches, lrs):
        inputs = []
        for role in arg_roles:
            if role == "x":
                inputs.append(x)
            elif role == "t":
                inputs.append(t)
            elif role == "lr":
                inputs.append(np.array(lr, np.float32))
            else:
                if role not in state:
                    state[role] = initial_state(role, params)
                inputs.append(state[role])
        outputs = module(*inputs)
        for role, value in zip(result_roles, outputs):
            if role == "loss":
                losses.append(float(value))
            else:
                state[role] = value
    return losses, state


def train_torch(params, batches, lrs, make_optimizer, max_norm):
    tensors = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    optimizer = make_optimizer([tensors[n] for n in NAMES])
    losses = []
    for (x, t), lr in zip(batches, lrs):
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        h = torch.tanh(torch.tensor(x) @ tensors["fc1.weight"]
                       + tensors["fc1.bias"])
        z = h @ tensors["fc2.weight"] + tensors["fc2.bias"]
        loss = torch.nn.functional.cross_entropy(
            z, torch.tensor(t).argmax(1))
        loss.backward()
        if max_norm:
            torch.nn.utils.clip_grad_norm_([tensors[n] for n in NAMES],
                                           max_norm)
        optimizer.step()
        losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in tensors.items()}


def problem(steps=20):
    rng = np.random.default_rng(1204)
    params = {"fc1.weight": rng.standard_normal((12, 24)) * 0.4,
              "fc1.bias": rng.standard_normal(24) * 0.1,
              "fc2.weight": rng.standard_normal((24, 5)) * 0.4,
              "fc2.bias": rng.standard_normal(5) * 0.1}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    batches = []
    for _ in range(steps):
        x = rng.standard_normal((16, 12)).astype(np.float32)
        t = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 16)]
        batches.append((x, t))
    # A learning-rate schedule: the rate is an input of every step.
    lrs = [0.05 * (0.9 ** i) for i in range(steps)]
    return params, batches, lrs


CASES = {
    "sgd": ('{kind = "sgd"}', lambda p: torch.optim.SGD(p, lr=0.1), 0),
    "sgd-momentum-decay": (
        '{kind = "sgd", momentum = 0.9, weight_decay = 0.01}',
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9,
                                  weight_decay=0.01), 0),
    "adamw": ('{kind = "adamw"}', lambda p: torch.optim.AdamW(p, lr=0.1), 0),
    "adamw-settings-clipped": (
        '{kind = "adamw", beta1 = 0.8, beta2 = 0.99, eps = 1.0e-6, '
        'weight_decay = 0.1, max_grad_norm = 0.5}',
        lambda p: torch.optim.AdamW(p, lr=0.1, betas=(0.8, 0.99), eps=1e-6,
                                    weight_decay=0.1), 0.5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_matches_torch_optim(case):
    optimizer, make, max_norm = CASES[case]
    params, batches, lrs = problem()
    text = STEP.format(optimizer=optimizer)
    flow_losses, flow_state = train_flow(text, params, batches, lrs)
    torch_losses, torch_params = train_torch(params, batches, lrs, make,
                                             max_norm)
    np.testing.assert_allclose(flow_losses, torch_losses, rtol=1e-4)
    for name in NAMES:
        np.testing.assert_allclose(flow_state[name], torch_params[name],
                                   rtol=1e-4, atol=1e-5, err_msg=name)
    # The run learned something: the loss fell.
    assert np.mean(flow_losses[-5:]) < np.mean(flow_losses[:5])
    if "adamw" in case:
        assert int(flow_state["optimizer.step"]) == len(batches)


def test_clipping_is_active_in_the_clipped_case():
    # Guard for the test above: the clipped case's gradients do exceed the
    # norm, so clipping changes the result.
    params, batches, lrs = problem(steps=3)
    _, clipped = train_torch(params, batches, lrs,
                             CASES["adamw-settings-clipped"][1], 0.5)
    _, unclipped = train_torch(params, batches, lrs,
                               CASES["adamw-settings-clipped"][1], 0)
    assert not np.allclose(clipped["fc1.weight"], unclipped["fc1.weight"],
                           rtol=1e-3)


@pytest.mark.parametrize("optimizer,message", [
    ('{kind = "adam"}', 'must be "sgd" or "adamw"'),
    ('{kind = "sgd", beta1 = 0.9}',
     "unknown entry 'beta1' (sgd takes weight_decay, max_grad_norm, momentum)"),
    ('{kind = "adamw", beta2 = 1.5}', "momentum and betas must lie in [0, 1)"),
    ('{kind = "adamw", eps = "small"}', "'eps' must be a number"),
])
def test_bad_optimizer_settings(optimizer, message):
    with pytest.raises(flow.FlowError) as error:
        flow.compile_mlir(STEP.format(optimizer=optimizer))
    assert message in str(error.value)


def test_an_optimizer_without_gradients_is_refused():
    text = STEP.format(optimizer='{kind = "sgd"}').replace(
        "flow.requires_grad, ", "")
    with pytest.raises(flow.FlowError, match="has an optimizer but no "
                       "gradients: mark its parameters flow.requires_grad"):
        flow.compile_mlir(text)
