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


def first_step_inputs(text, directory):
    """--input flags for the first step of `problem()` on the step `text`
    (a learning rate of 0.05, the state at its start), as .npy files in
    `directory`."""
    params, batches, _ = problem(steps=1)
    arg_roles, _ = roles(text)
    x, t = batches[0]
    flags = []
    for i, role in enumerate(arg_roles):
        value = {"x": x, "t": t, "lr": np.float32(0.05)}.get(role)
        if value is None:
            value = params[role] if role in params else \
                initial_state(role, params)
        np.save(directory / f"in{i}.npy", value)
        flags.append(f"--input={directory / f'in{i}.npy'}")
    return flags


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
     "unknown entry 'beta1' (sgd takes weight_decay, max_grad_norm, momentum, "
     "skip_nonfinite, shard_state)"),
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


@pytest.mark.parametrize("case", ["sgd-momentum-decay", "adamw-settings-clipped"])
def test_resident_state_is_updated_in_place(case):
    """The session keeps the state and the step writes it where it lies
    (flow-tie-state): the same 20 steps as passing the state in and out,
    bit for bit, with no copy of any state in the schedule, and run()
    never writes the caller's arrays."""
    optimizer = CASES[case][0]
    params, batches, lrs = problem()
    text = STEP.format(optimizer=optimizer)
    host = flow.compile_ir(text, "host")
    header = host[host.index("func.func @step("):]
    header = header[:header.index("{\n")]
    states = 4 * (2 if "momentum" in case else 1) if "sgd" in case else 13
    assert header.count("flow.tied_input") == states
    assert "host.copy" not in host

    given = {k: v.copy() for k, v in params.items()}
    passed_losses, passed_state = train_flow(text, given, batches, lrs)
    for name in NAMES:  # run() updated copies, not the caller's arrays
        np.testing.assert_array_equal(given[name], params[name])

    module = flow.compile_mlir(text)
    session = module._module
    assert sorted(session.state_names()) == sorted(passed_state)
    for name in NAMES:
        session.set_state(name, params[name])
    arg_roles, _ = roles(text)
    losses = []
    for (x, t), lr in zip(batches, lrs):
        inputs = {"x": x, "t": t, "lr": np.array(lr, np.float32)}
        (loss,) = session.step("step", [inputs[r] for r in arg_roles
                                        if r in inputs])
        losses.append(float(loss))
    assert losses == passed_losses
    for name, value in passed_state.items():
        np.testing.assert_array_equal(session.get_state(name), value,
                                      err_msg=name)


def test_resident_state_errors():
    module = flow.compile_mlir(STEP.format(optimizer='{kind = "sgd"}'))
    session = module._module
    x = np.zeros((16, 12), np.float32)
    t = np.zeros((16, 5), np.float32)
    lr = np.array(0.1, np.float32)
    with pytest.raises(flow.FlowError, match="state 'fc1.weight' has no "
                       "value: set it before the first step"):
        session.step("step", [x, lr, t])
    with pytest.raises(flow.FlowError, match=r"state 'fc1.bias' is f32\[24\], "
                       r"got f32\[23\]"):
        session.set_state("fc1.bias", np.zeros(23, np.float32))
    with pytest.raises(flow.FlowError, match="the executable has no state "
                       "'fc3.bias'"):
        session.get_state("fc3.bias")
    with pytest.raises(flow.FlowError, match="takes 3 inputs besides its "
                       "state, got 2"):
        session.step("step", [x, t])


# The same step for flow-compile --train: parameters marked, no optimizer.
PLAIN_STEP = STEP.format(optimizer="{}").replace(
    "\n    attributes {flow.optimizer = {}}", "")


def test_cli_trains_over_npy_batches_and_resumes(tmp_path):
    """flow-compile --train and flow-run --steps: the losses flow-run prints
    are the Python module's, the saved state is its state, and 10 + 10
    steps through a checkpoint equal 20 steps bit for bit."""
    import subprocess
    from flowtest import compile_mlir, tool
    from flow.safetensors import load, save
    optimizer, _, _ = CASES["adamw-settings-clipped"]
    params, batches, lrs = problem()
    lrs = [0.05] * len(batches)  # flow-run reads one rate file per run
    fbin = compile_mlir(PLAIN_STEP, tmp_path, f"--train={optimizer}")
    save(params, str(tmp_path / "init.safetensors"))
    for i, (x, t) in enumerate(batches):
        half = "a" if i < 10 else "b"
        np.save(tmp_path / f"x{half}_{i % 10}.npy", x)
        np.save(tmp_path / f"t{half}_{i % 10}.npy", t)
        np.save(tmp_path / f"xall_{i}.npy", x)
        np.save(tmp_path / f"tall_{i}.npy", t)
    np.save(tmp_path / "lr.npy", np.float32(0.05))

    def flow_run(state, half, steps, save_to):
        proc = subprocess.run(
            [str(tool("flow-run")), str(fbin), f"--steps={steps}",
             f"--state={tmp_path / state}",
             f"--input={tmp_path}/x{half}_{{step}}.npy",
             f"--input={tmp_path}/t{half}_{{step}}.npy",
             f"--input={tmp_path}/lr.npy",
             f"--save-state={tmp_path / save_to}"],
            capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return [float(line.rsplit("= ", 1)[1])
                for line in proc.stdout.splitlines()]

    losses = flow_run("init.safetensors", "all", 20, "all.safetensors")
    want_losses, want_state = train_flow(
        STEP.format(optimizer=optimizer), params, batches, lrs)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-6)
    final = load(str(tmp_path / "all.safetensors"))
    assert sorted(final) == sorted(want_state)
    for name, value in want_state.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    assert int(final["optimizer.step"]) == 20

    first = flow_run("init.safetensors", "a", 10, "half.safetensors")
    second = flow_run("half.safetensors", "b", 10, "resumed.safetensors")
    assert first + second == losses
    resumed = load(str(tmp_path / "resumed.safetensors"))
    for name, value in final.items():
        np.testing.assert_array_equal(resumed[name], value, err_msg=name)

    # --profile with --steps: where the steps after the first went, and the
    # same losses.
    proc = subprocess.run(
        [str(tool("flow-run")), str(fbin), "--steps=3", "--profile",
         f"--state={tmp_path / 'init.safetensors'}",
         f"--input={tmp_path}/xall_{{step}}.npy",
         f"--input={tmp_path}/tall_{{step}}.npy", f"--input={tmp_path}/lr.npy"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^profile: \S+ ms per call in commands$", proc.stdout,
                     re.M), proc.stdout
    assert re.search(r"^  dispatch +\d+ commands", proc.stdout, re.M)
    printed = [float(v) for v in re.findall(r"result 0 = (\S+)", proc.stdout)]
    assert printed == losses[:3]


def test_cli_training_errors(tmp_path):
    import subprocess
    from flowtest import compile_mlir, tool
    from flow.safetensors import save

    def run(*args):
        proc = subprocess.run([str(tool("flow-run")), *map(str, args)],
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stderr

    plain = tmp_path / "plain.mlir"
    plain.write_text(PLAIN_STEP)
    proc = subprocess.run([str(tool("flow-compile")), str(plain),
                           "--train={kind = \"sgdd\"}", "-o",
                           str(tmp_path / "bad.fbin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and 'must be "sgd" or "adamw"' in proc.stderr
    proc = subprocess.run([str(tool("flow-compile")), str(plain),
                           "--train=adamw", "-o", str(tmp_path / "bad.fbin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "--train needs an optimizer " \
        "dictionary" in proc.stderr

    fbin = compile_mlir(PLAIN_STEP, tmp_path, '--train={kind = "sgd"}')
    x = tmp_path / "x.npy"
    t = tmp_path / "t.npy"
    lr = tmp_path / "lr.npy"
    np.save(x, np.zeros((16, 12), np.float32))
    np.save(t, np.zeros((16, 5), np.float32))
    np.save(lr, np.float32(0.1))
    inputs = [f"--input={x}", f"--input={t}", f"--input={lr}"]
    rc, err = run(fbin, "--steps=2", *inputs)
    assert rc == 1 and "step 0: state 'fc1.weight' has no value: set it " \
        "before the first step" in err
    params, _, _ = problem(steps=1)
    save({"fc9.weight": params["fc1.weight"]}, str(tmp_path / "other.safetensors"))
    rc, err = run(fbin, f"--state={tmp_path / 'other.safetensors'}", *inputs)
    assert rc == 1 and "'fc9.weight' is not a state of the executable" in err
    save({"fc1.bias": params["fc1.weight"]}, str(tmp_path / "shape.safetensors"))
    rc, err = run(fbin, f"--state={tmp_path / 'shape.safetensors'}", *inputs)
    assert rc == 1 and "state 'fc1.bias' is f32[24], got f32[12,24]" in err
    rc, err = run(fbin, "--steps=1", f"--input={x}")
    assert rc == 1 and "takes 3 inputs besides its state, got 1" in err
    rc, err = run(fbin, "--steps=0", *inputs)
    assert rc == 2 and "--steps needs a positive integer" in err
    plain_fbin = compile_mlir(
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  return %a : tensor<4xf32>\n}\n", tmp_path)
    rc, err = run(plain_fbin, "--steps=1", f"--input={lr}")
    assert rc == 1 and "has no state to train" in err
