"""Checkpoints written by flow-run --save-state never lose data: a symlinked
checkpoint is updated where it points, a target that is not a regular file
is refused, a planted link at a temporary name is never followed, runs
saving to one path at once both succeed, a run killed while saving leaves
the previous checkpoint whole, a non-finite loss stops the run without
saving, and a state the optimizer cannot start from is refused by name.
Also the readers of the mesh description and the state refuse FIFOs,
devices and hostile JSON, and flow-compile reports a full disk as an error.
"""

import os
import random
import signal
import stat
import subprocess
import time

import numpy as np
import pytest

from conftest import require
from flowtest import compile_mlir, tool

flow = require("flow")
from flow.safetensors import load, save  # noqa: E402

CRASH = ("Stack dump", "Assertion", "PLEASE submit", "Segmentation fault",
         "terminate called", "AddressSanitizer", "LLVM ERROR")

# A small AdamW step: a 64x256 weight, so a checkpoint is ~200 KB and a
# save takes long enough for a kill to land inside it now and then.
STEP = """
func.func @step(%x: tensor<8x64xf32>,
                %w: tensor<64x256xf32> {flow.requires_grad, flow.state = "w"},
                %t: tensor<8x256xf32>) -> tensor<f32>
    attributes {flow.optimizer = {kind = "adamw"}} {
  %y = flow.matmul %x, %w : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %d = flow.sub %y, %t : (tensor<8x256xf32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %s = flow.mul %d, %d : (tensor<8x256xf32>, tensor<8x256xf32>) -> tensor<8x256xf32>
  %r = flow.reduce_sum %s [0, 1] : tensor<8x256xf32> -> tensor<f32>
  return %r : tensor<f32>
}
"""


def run(cmd, timeout=120, **kw):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, timeout=timeout, **kw)
    assert proc.returncode >= 0, \
        f"killed by signal {-proc.returncode}:\n{proc.stderr}"
    assert not any(m in proc.stderr for m in CRASH), proc.stderr
    return proc


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    """(executable, directory with x.npy t.npy lr.npy init.safetensors)."""
    d = tmp_path_factory.mktemp("ckpt")
    fbin = compile_mlir(STEP, d)
    rng = np.random.default_rng(7)
    np.save(d / "x.npy", rng.standard_normal((8, 64)).astype(np.float32))
    np.save(d / "t.npy", rng.standard_normal((8, 256)).astype(np.float32))
    np.save(d / "lr.npy", np.float32(0.01))
    np.save(d / "nan.npy", np.float32("nan"))
    save({"w": (rng.standard_normal((64, 256)) * 0.1).astype(np.float32)},
         str(d / "init.safetensors"))
    return fbin, d


def train(trainer, save_to, steps=2, lr="lr.npy", state="init.safetensors",
          **kw):
    fbin, d = trainer
    return run([tool("flow-run"), fbin, f"--steps={steps}",
                f"--state={d / state}", f"--input={d / 'x.npy'}",
                f"--input={d / 't.npy'}", f"--input={d / lr}",
                f"--save-state={save_to}"], **kw)


def test_symlinked_checkpoint_is_updated_where_it_points(trainer, tmp_path):
    real = tmp_path / "real.safetensors"
    real.write_bytes(b"old")
    link = tmp_path / "latest.safetensors"
    link.symlink_to("real.safetensors")         # relative, as users make them
    proc = train(trainer, link)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "real.safetensors"
    assert int(load(str(real))["optimizer.step"]) == 2
    # Nothing left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["latest.safetensors", "real.safetensors"]


def test_dangling_symlink_creates_its_target(trainer, tmp_path):
    link = tmp_path / "ckpt.safetensors"
    link.symlink_to(tmp_path / "sub.safetensors")
    assert train(trainer, link).returncode == 0
    assert link.is_symlink() and (tmp_path / "sub.safetensors").is_file()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_non_regular_targets_are_refused(trainer, tmp_path, kind):
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    proc = train(trainer, target, timeout=60)
    assert proc.returncode == 1
    what = "a FIFO" if kind == "fifo" else "a directory"
    assert f"cannot write '{target}': it is {what}" in proc.stderr
    mode = os.lstat(target).st_mode
    assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISDIR(mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


def test_a_link_planted_at_the_old_temporary_name_is_not_followed(
        trainer, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "ckpt.safetensors"
    (tmp_path / "ckpt.safetensors.tmp").symlink_to(victim)
    assert train(trainer, out).returncode == 0
    assert victim.read_bytes() == b"precious"
    assert int(load(str(out))["optimizer.step"]) == 2


def test_runs_saving_to_one_path_at_once_both_succeed(trainer, tmp_path):
    fbin, d = trainer
    out = tmp_path / "ckpt.safetensors"
    for _ in range(5):
        cmd = [str(tool("flow-run")), str(fbin), "--steps=1",
               f"--state={d / 'init.safetensors'}", f"--input={d / 'x.npy'}",
               f"--input={d / 't.npy'}", f"--input={d / 'lr.npy'}",
               f"--save-state={out}", "--threads=1"]
        procs = [subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        assert int(load(str(out))["optimizer.step"]) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]


def test_a_run_killed_while_saving_leaves_the_previous_checkpoint_whole(
        trainer, tmp_path):
    """SIGKILL at spread-out times during runs that end by saving: the
    checkpoint is always either the previous one or the new one, whole."""
    fbin, d = trainer
    out = tmp_path / "ckpt.safetensors"
    assert train(trainer, out, steps=1).returncode == 0
    previous = out.read_bytes()
    cmd = [str(tool("flow-run")), str(fbin), "--steps=3",
           f"--state={d / 'init.safetensors'}", f"--input={d / 'x.npy'}",
           f"--input={d / 't.npy'}", f"--input={d / 'lr.npy'}",
           f"--save-state={out}", "--threads=1"]
    # How long a whole run takes here, to spread the kills over it.
    begin = time.monotonic()
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    whole = time.monotonic() - begin
    out.write_bytes(previous)
    new = None
    killed = 0
    rng = random.Random(48)
    for _ in range(12):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 1.1) * whole)
        p.send_signal(signal.SIGKILL)
        killed += p.wait(timeout=60) == -signal.SIGKILL
        now = out.read_bytes()
        if now != previous:
            # The new checkpoint, whole: it loads and is after 3 steps.
            assert int(load(str(out))["optimizer.step"]) == 3
            assert new is None or now == new
            new = now
        # A temporary may stay behind after a kill, but never the target
        # half-written.
        out.write_bytes(previous)
    assert killed >= 3, f"only {killed} of 12 runs were killed before " \
        "they ended: the test did not test"


def test_a_non_finite_loss_stops_the_run_and_keeps_the_checkpoint(
        trainer, tmp_path):
    out = tmp_path / "ckpt.safetensors"
    assert train(trainer, out).returncode == 0
    good = out.read_bytes()
    for lr in ["nan.npy"]:
        proc = train(trainer, out, steps=3, lr=lr)
        assert proc.returncode == 1, proc.stdout
        assert "step 1: result 0 (the loss) is nan; stopping without " \
               f"writing '{out}'" in proc.stderr, proc.stderr
        assert out.read_bytes() == good


def test_a_huge_learning_rate_stops_at_the_step_that_overflows(
        trainer, tmp_path):
    fbin, d = trainer
    np.save(tmp_path / "lr.npy", np.float32(1e30))
    out = tmp_path / "ckpt.safetensors"
    proc = run([tool("flow-run"), fbin, "--steps=5",
                f"--state={d / 'init.safetensors'}", f"--input={d / 'x.npy'}",
                f"--input={d / 't.npy'}", f"--input={tmp_path / 'lr.npy'}",
                f"--save-state={out}"])
    assert proc.returncode == 1
    assert "(the loss) is " in proc.stderr and "; stopping" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("name,value,message", [
    ("optimizer.step", np.int64(-3),
     "state 'optimizer.step' is -3: the optimizer's step count cannot be "
     "negative"),
    ("w.exp_avg_sq", None,
     "state 'w.exp_avg_sq' is negative at element 5 (-1.000000): a second "
     "moment"),
    ("w", None, "state 'w' holds nan at element 5: a training state must be "
     "finite"),
])
def test_state_the_optimizer_cannot_start_from_is_refused(
        trainer, tmp_path, name, value, message):
    fbin, d = trainer
    state = load(str(d / "init.safetensors"))
    state = {k: np.array(v) for k, v in state.items()}
    state["optimizer.step"] = np.int64(4)
    state["w.exp_avg"] = np.zeros((64, 256), np.float32)
    state["w.exp_avg_sq"] = np.zeros((64, 256), np.float32)
    if value is not None:
        state[name] = value
    else:
        bad = state[name].copy()
        bad.flat[5] = -1.0 if name.endswith("sq") else np.nan
        state[name] = bad
    save(state, str(tmp_path / "bad.safetensors"))
    proc = train(trainer, tmp_path / "out.safetensors",
                 state=tmp_path / "bad.safetensors")
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "out.safetensors").exists()


def test_state_from_a_fifo_is_refused_at_once(trainer, tmp_path):
    fifo = tmp_path / "state"
    os.mkfifo(fifo)
    proc = train(trainer, tmp_path / "out.safetensors", state=fifo,
                 timeout=30)
    assert proc.returncode == 1
    assert "is not a regular file" in proc.stderr


MESH_STEP = """
func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = flow.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""


@pytest.mark.parametrize("spec,message", [
    ("[" * 100000 + "]" * 100000, "nested more than 32 levels deep"),
    ('{"axes": ' + "[" * 40 + "]" * 40 + "}", "nested more than 32 levels"),
    ("fifo", "is not a regular file"),
    ("/dev/zero", "'/dev/zero' is not a regular file"),
    ("big", "bytes: a mesh description is a JSON file of at most 1048576 "
            "bytes"),
])
def test_hostile_mesh_descriptions_are_refused(tmp_path, spec, message):
    src = tmp_path / "m.mlir"
    src.write_text(MESH_STEP)
    if spec == "fifo":
        path = tmp_path / "spec.json"
        os.mkfifo(path)
    elif spec == "big":
        path = tmp_path / "spec.json"
        path.write_text('{"name": "' + "x" * (2 << 20) + '"}')
    elif spec.startswith("/dev/"):
        path = spec
    else:
        path = tmp_path / "spec.json"
        path.write_text(spec)
    proc = run([tool("flow-compile"), src, "--mesh=2", "--auto-parallel",
                f"--mesh-spec={path}", "-o", tmp_path / "m.fbin"], timeout=60)
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "m.fbin").exists()


def test_compile_to_a_full_device_is_an_error(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(MESH_STEP)
    proc = run([tool("flow-compile"), src, "-o", "/dev/full"])
    assert proc.returncode == 1
    assert "flow-compile: error: cannot write '/dev/full': No space left on " \
           "device" in proc.stderr, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
