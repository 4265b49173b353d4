"""Hostile files, states and arguments: each is refused with a FlowError
that names what is wrong, and nothing is left half done.

- flow.safetensors.save: written through a fresh, exclusively created
  temporary in the target's directory, fsynced and renamed over the target
  (a symbolic link is followed and stays a link); a target that is not a
  regular file is refused and an error leaves no temporary behind.
- flow.safetensors.load: a truncated or malformed archive is refused by
  file and tensor, never read as whatever numpy makes of it.
- TrainStep.load / load_state_dict: values the optimizer cannot have
  (non-finite, a negative step count or second moment, a step count in the
  metadata that is not one) are refused and the state is kept.
- compile_train with a torch criterion (torch.nn.MSELoss()) trains as a
  PyTorch loop calling criterion(model(x), y) does; a loss that cannot be
  called so is refused.
- generate / compile_causal_lm: arguments that are not integers, token ids
  that are not integers or not in the vocabulary, a max_length beyond the
  model's positions.
"""

import errno
import json
import os
import re
import stat
import struct

import numpy as np
import pytest

from conftest import require

flow = require("flow")
torch = require("torch")
transformers = require("transformers")
from flow import safetensors  # noqa: E402

F = torch.nn.functional


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# --- safetensors.save --------------------------------------------------------

def test_save_through_a_symlink_replaces_its_target_and_keeps_the_link(
        tmp_path):
    real = tmp_path / "real.safetensors"
    link = tmp_path / "link.safetensors"
    safetensors.save({"w": np.zeros(3, np.float32)}, str(real))
    link.symlink_to(real.name)
    safetensors.save({"w": np.ones(3, np.float32)}, str(link))
    assert link.is_symlink() and os.readlink(link) == real.name
    np.testing.assert_array_equal(safetensors.load(str(real))["w"],
                                  np.ones(3, np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "link.safetensors", "real.safetensors"]


def test_save_does_not_follow_a_planted_temporary(tmp_path):
    """The old writer opened `PATH.tmpPID` without O_EXCL: a symbolic link
    planted there made it write into the link's target."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    path = tmp_path / "w.safetensors"
    planted = tmp_path / f"w.safetensors.tmp{os.getpid()}"
    planted.symlink_to(victim)
    safetensors.save({"w": np.arange(4, dtype=np.float32)}, str(path))
    assert victim.read_bytes() == b"precious"
    assert not path.is_symlink()
    np.testing.assert_array_equal(safetensors.load(str(path))["w"],
                                  np.arange(4, dtype=np.float32))


def test_save_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.save({"w": np.zeros(2, np.float32)}, str(path))
    # A new file is made as open() makes one (not mkstemp's 0600).
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    path.chmod(0o640)
    safetensors.save({"w": np.ones(2, np.float32)}, str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


# Only targets under tmp_path: the old writer, run as root, renamed its
# temporary over /dev/null itself (a device refused so is the same check
# as the FIFO's, S_ISREG of the resolved target).
@pytest.mark.parametrize("kind", ["directory", "fifo", "link-to-fifo"])
def test_save_refuses_a_target_that_is_not_a_regular_file(tmp_path, kind):
    if kind == "directory":
        target, what = tmp_path / "d", "it is a directory"
        target.mkdir()
    else:
        fifo = tmp_path / "f"
        os.mkfifo(fifo)
        target, what = fifo, "it is a FIFO"
        if kind == "link-to-fifo":
            target = tmp_path / "link"
            target.symlink_to(fifo)
            what = rf"\(-> '{fifo}'\): {what}"
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(flow.FlowError, match=f"cannot save '{target}'.*"
                       f"{what}, not a regular file"):
        safetensors.save({"w": np.zeros(2, np.float32)}, str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert stat.S_ISFIFO(os.stat(tmp_path / "f").st_mode) if \
        kind != "directory" else list(target.iterdir()) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path,
                                                              monkeypatch):
    path = tmp_path / "w.safetensors"
    safetensors.save({"w": np.zeros(2, np.float32)}, str(path))
    old = path.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(flow.FlowError, match=f"cannot save '{path}': "
                       "No space left on device"):
        safetensors.save({"w": np.ones(2, np.float32)}, str(path))
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]


def test_save_into_a_missing_directory_names_it(tmp_path):
    path = tmp_path / "missing" / "w.safetensors"
    with pytest.raises(flow.FlowError, match=f"cannot save '{path}': "
                       "No such file or directory"):
        safetensors.save({"w": np.zeros(2, np.float32)}, str(path))


def test_save_refuses_a_dtype_the_archive_cannot_hold(tmp_path):
    path = tmp_path / "w.safetensors"
    with pytest.raises(flow.FlowError, match=f"cannot save '{path}': tensor "
                       "'z' is complex64, which a safetensors archive cannot "
                       "hold"):
        safetensors.save({"z": np.zeros(2, np.complex64)}, str(path))
    assert not path.exists()


# --- safetensors.load --------------------------------------------------------

def archive(path, header, body=b""):
    """Writes a raw archive: `header` (a dict, or bytes as they are)."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)
    return str(path)


W = {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}


def test_a_truncated_archive_names_the_tensor(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.save({"a": np.zeros((4, 4), np.float32),
                      "b": np.zeros(16, np.float32)}, str(path))
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    # numpy used to say "When changing to a larger dtype, its size must be
    # a divisor of the total size in bytes of the last axis of the array".
    with pytest.raises(flow.FlowError, match=rf"'{path}' is not a valid "
                       r"safetensors file: tensor 'b' has data_offsets "
                       r"\[64, 128\], outside the 118 bytes of tensor data"):
        safetensors.load(str(path))


@pytest.mark.parametrize("header, body, message", [
    ({"w": dict(W, data_offsets=[0, 0])}, b"\0" * 24,
     r"tensor 'w' has data_offsets \[0, 0\] \(0 bytes\), but F32\[2, 3\] "
     r"is 24 bytes"),
    ({"w": dict(W, shape=[-1, 3])}, b"\0" * 24,
     r"tensor 'w' has shape \[-1, 3\]; a shape is a list of non-negative "
     r"integers"),
    ({"w": dict(W, shape=[2, 3.0])}, b"\0" * 24,
     r"tensor 'w' has shape \[2, 3.0\]"),
    ({"w": dict(W, shape="2x3")}, b"\0" * 24, r"tensor 'w' has shape '2x3'"),
    ({"w": dict(W, data_offsets=[0, 24.0])}, b"\0" * 24,
     r"tensor 'w' has data_offsets \[0, 24.0\]; they are \[begin, end\], "
     r"two integers"),
    ({"w": dict(W, data_offsets=[0, 12, 24])}, b"\0" * 24,
     r"tensor 'w' has data_offsets \[0, 12, 24\]"),
    ({"w": dict(W, data_offsets=[True, 25])}, b"\0" * 25,
     r"tensor 'w' has data_offsets \[True, 25\]"),
    ({"w": dict(W, data_offsets=[24, 0])}, b"\0" * 24,
     r"tensor 'w' has data_offsets \[24, 0\], outside"),
    ({"w": dict(W, data_offsets=[-24, 0])}, b"\0" * 24,
     r"tensor 'w' has data_offsets \[-24, 0\], outside"),
    ({"w": dict(W, dtype="F8")}, b"\0" * 24,
     r"tensor 'w' has unsupported dtype 'F8'"),
    ({"w": {"dtype": "F32", "shape": [2, 3]}}, b"\0" * 24,
     r"tensor 'w' has no data_offsets"),
    ({"w": [0, 24]}, b"\0" * 24, r"tensor 'w' is a JSON list, not an object"),
    ([W], b"\0" * 24, r"the header is a JSON list, not an object"),
    (b'{"w": ', b"", r"the header is not JSON"),
    (b'\xff\xfe{}', b"", r"the header is not JSON"),
    (b'{"w": ' + json.dumps(W).encode() + b', "w": '
     + json.dumps(W).encode() + b'}', b"\0" * 24,
     r"the header names 'w' twice"),
    ({"__metadata__": {"flow.steps": 3}, "w": W}, b"\0" * 24,
     r"__metadata__ is not an object of strings"),
], ids=["offsets-size", "negative-dim", "float-dim", "shape-string",
        "float-offset", "three-offsets", "bool-offset", "begin-after-end",
        "negative-offset", "dtype", "missing-key", "entry-list",
        "header-list", "not-json", "not-utf8", "duplicate", "metadata"])
def test_a_malformed_archive_is_refused_by_name(tmp_path, header, body,
                                                message):
    path = archive(tmp_path / "w.safetensors", header, body)
    with pytest.raises(flow.FlowError, match=rf"'{path}' is not a valid "
                       rf"safetensors file: {message}"):
        safetensors.load(path)


def test_a_file_too_short_for_an_archive(tmp_path):
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    with pytest.raises(flow.FlowError, match=f"'{empty}' is not a valid "
                       "safetensors file: it is empty"):
        safetensors.load(str(empty))
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\1\0\0")
    with pytest.raises(flow.FlowError, match="3 bytes, too short"):
        safetensors.load(str(short))
    long = tmp_path / "long.safetensors"
    long.write_bytes(struct.pack("<Q", 100) + b"{}")
    with pytest.raises(flow.FlowError, match="the header length 100 exceeds "
                       "the 2 bytes after it"):
        safetensors.read_metadata(str(long))
    with pytest.raises(flow.FlowError, match=f"cannot read '{tmp_path}'"):
        safetensors.load(str(tmp_path))


def test_a_valid_archive_still_loads(tmp_path):
    import ml_dtypes
    tensors = {"f": np.arange(6, dtype=np.float32).reshape(2, 3),
               "b": np.ones((2, 2), ml_dtypes.bfloat16),
               "i": np.array(7, np.int64), "e": np.zeros((0, 3), np.float32)}
    path = str(tmp_path / "ok.safetensors")
    safetensors.save(tensors, path, metadata={"k": "v"})
    got = safetensors.load(path)
    assert safetensors.read_metadata(path) == {"k": "v"}
    for name, value in tensors.items():
        assert got[name].dtype == value.dtype and \
            got[name].shape == value.shape, name
        np.testing.assert_array_equal(got[name].astype(np.float32),
                                      value.astype(np.float32))


# --- TrainStep.load / load_state_dict ----------------------------------------

def batches(n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 4, generator=g),
             torch.randint(0, 3, (8,), generator=g)) for _ in range(n)]


@pytest.fixture(scope="module")
def adamw_step():
    """One compiled AdamW step (a 4-3 linear model), two steps taken."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    data = batches()
    step = flow.compile_train(
        model, lambda m, x, y: F.cross_entropy(m(x), y), data[0],
        optimizer=flow.optim.AdamW(lr=1e-2))
    for batch in data[:2]:
        step(*batch)
    return step


def same_state(a, b):
    return set(a) == set(b) and all(torch.equal(a[n], b[n]) for n in a)


def test_the_adamw_state_is_named_as_refused(adamw_step):
    # The names the checks below rely on.
    assert {"optimizer.step", "0.weight.exp_avg_sq",
            "0.weight.exp_avg"} <= set(adamw_step._names)
    assert int(adamw_step.state_dict()["optimizer.step"]) == 2


@pytest.mark.parametrize("name, index, value, message", [
    ("optimizer.step", (), -1,
     r"state 'optimizer.step' is -1: the optimizer's step count "
     r"cannot be negative; the state was not changed"),
    ("0.weight.exp_avg_sq", (1, 2), -1e-3,
     r"state '0.weight.exp_avg_sq' is negative at element \d+ "
     r"\(-0.001\d*\): a second moment .* cannot be"),
    ("0.weight", (2, 1), float("nan"),
     r"state '0.weight' holds nan at element \d+: a training state must "
     r"be finite; the state was not changed"),
    ("0.bias.exp_avg", (0,), float("-inf"),
     r"state '0.bias.exp_avg' holds -inf at element 0:"),
    ("0.bias.exp_avg_sq", (2,), float("inf"),
     r"state '0.bias.exp_avg_sq' holds inf at element 2:"),
], ids=["negative-step", "negative-second-moment", "nan-weight",
        "infinite-first-moment", "infinite-second-moment"])
def test_load_state_dict_refuses_what_the_optimizer_cannot_have(
        adamw_step, name, index, value, message):
    before = adamw_step.state_dict()
    bad = {n: t.clone() for n, t in before.items()}
    bad[name][index] = value
    with pytest.raises(flow.FlowError, match=message):
        adamw_step.load_state_dict(bad)
    assert same_state(adamw_step.state_dict(), before)


def test_load_refuses_a_checkpoint_with_a_bad_value(adamw_step, tmp_path):
    before, steps = adamw_step.state_dict(), adamw_step.steps
    arrays = {n: t.numpy().copy() for n, t in before.items()}
    arrays["0.weight.exp_avg_sq"][0, 3] = -5.0
    path = tmp_path / "bad.safetensors"
    safetensors.save(arrays, str(path), metadata={"flow.steps": "7"})
    with pytest.raises(flow.FlowError, match=r"state '0.weight.exp_avg_sq' "
                       r"is negative at element 3 \(-5.0+\)"):
        adamw_step.load(path)
    assert same_state(adamw_step.state_dict(), before)
    assert adamw_step.steps == steps


@pytest.mark.parametrize("steps", ["-3", "2.5", "abc", "", " 4", "+4"])
def test_load_refuses_a_step_count_that_is_not_one(adamw_step, tmp_path,
                                                  steps):
    before, count = adamw_step.state_dict(), adamw_step.steps
    arrays = {n: t.numpy().copy() for n, t in before.items()}
    arrays["0.weight"] += 1
    path = tmp_path / "steps.safetensors"
    safetensors.save(arrays, str(path), metadata={"flow.steps": steps})
    with pytest.raises(flow.FlowError, match=rf"'{path}': the metadata "
                       rf"flow.steps is '{re.escape(steps)}'; it is the "
                       r"number of steps "
                       r"taken, a non-negative integer"):
        adamw_step.load(path)
    assert same_state(adamw_step.state_dict(), before)
    assert adamw_step.steps == count


def test_a_checkpoint_round_trips(adamw_step, tmp_path):
    path = tmp_path / "ok.safetensors"
    adamw_step.save(path)
    adamw_step.load(path)
    assert adamw_step.steps == 2


def test_saving_a_step_onto_a_directory_leaves_nothing(adamw_step, tmp_path):
    with pytest.raises(flow.FlowError, match=f"cannot save '{tmp_path}': it "
                       "is a directory, not a regular file"):
        adamw_step.save(tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert list(tmp_path.parent.glob(f"*{tmp_path.name}*tmp*")) == []


# --- compile_train with a torch criterion ------------------------------------

@pytest.mark.parametrize("criterion", ["MSELoss", "CrossEntropyLoss"])
def test_a_torch_criterion_trains_as_pytorch(criterion):
    """criterion(model(x), y), as a PyTorch loop calls it. Tolerance: rtol
    1e-5 (atol 1e-7 for weights near 0): the same f32 ops on a 4-3 linear
    model for 4 SGD steps, each a few ulps from PyTorch's (sums in another
    order); a wrong target or argument order is off by 1e-2 or more."""
    torch.manual_seed(1)
    model = torch.nn.Linear(4, 3)
    reference = torch.nn.Linear(4, 3)
    reference.load_state_dict(model.state_dict())
    loss = getattr(torch.nn, criterion)()
    g = torch.Generator().manual_seed(2)
    data = [(torch.randn(8, 4, generator=g),
             torch.randn(8, 3, generator=g) if criterion == "MSELoss" else
             torch.randint(0, 3, (8,), generator=g)) for _ in range(4)]
    step = flow.compile_train(model, loss, data[0],
                              optimizer=flow.optim.SGD(lr=0.1, momentum=0.9))
    opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for x, y in data:
        got = float(step(x, y))
        opt.zero_grad()
        want = loss(reference(x), y)
        want.backward()
        opt.step()
        np.testing.assert_allclose(got, want.item(), rtol=1e-5)
    trained = step.parameters()
    for name, p in reference.named_parameters():
        np.testing.assert_allclose(trained[name].numpy(), p.detach().numpy(),
                                   rtol=1e-5, atol=1e-7, err_msg=name)


def test_a_loss_that_cannot_take_the_batch_is_refused():
    model = torch.nn.Linear(4, 3)
    batch = (torch.randn(2, 4), torch.randint(0, 3, (2,)))
    sgd = flow.optim.SGD(lr=0.1)
    with pytest.raises(flow.FlowError, match=r"loss_fn\(m, x\) cannot be "
                       r"called with the model and the 2 tensor\(s\) of the "
                       r"batch; loss_fn is loss_fn\(model, \*batch\).*"
                       r"criterion\("
                       r"model\(\*batch\[:-1\]\), batch\[-1\]\)"):
        flow.compile_train(model, lambda m, x: m(x).sum(), batch,
                           optimizer=sgd)
    with pytest.raises(flow.FlowError, match="loss_fn is a str, not "
                       r"callable; loss_fn is loss_fn\(model, \*batch\)"):
        flow.compile_train(model, "cross_entropy", batch, optimizer=sgd)
    with pytest.raises(flow.FlowError, match="loss_fn is the model itself"):
        flow.compile_train(model, model, batch, optimizer=sgd)
    with pytest.raises(flow.FlowError, match=r"the criterion MSELoss, which "
                       r"takes the model's output and the target: the batch "
                       r"must be \(inputs..., target\), got 1 element"):
        flow.compile_train(model, torch.nn.MSELoss(), (batch[0],),
                           optimizer=sgd)


def test_a_module_that_takes_the_model_is_still_called_with_it():
    """Only a module that cannot take (model, *batch) is a criterion."""
    from flow.training import _loss_kind

    class Loss(torch.nn.Module):
        def forward(self, model, x, y):
            return F.cross_entropy(model(x), y)

    model = torch.nn.Linear(4, 3)
    batch = (torch.randn(2, 4), torch.randint(0, 3, (2,)))
    assert _loss_kind(model, Loss(), batch) == "function"
    assert _loss_kind(model, torch.nn.CrossEntropyLoss(), batch) == \
        "criterion"
    assert _loss_kind(model, None, batch) == "model"


# --- generation --------------------------------------------------------------

VOCAB = 64


def tiny_gpt2(positions=32):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1,
                                     n_head=2, n_positions=positions)
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="module")
def gpt2_lm():
    model = tiny_gpt2()
    return model, flow.compile_causal_lm(model, max_length=16,
                                         prefill_chunk=4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_new_tokens=2.5),
     r"max_new_tokens must be an integer, got 2.5 \(float\)"),
    (dict(max_new_tokens=True), r"max_new_tokens must be an integer, got "
     r"True \(bool\)"),
    (dict(max_new_tokens="3"), r"max_new_tokens must be an integer"),
    (dict(max_new_tokens=-1), r"max_new_tokens must be at least 0, got -1"),
    (dict(max_new_tokens=2, eos_token_id=1.5),
     r"eos_token_id must be an integer, got 1.5"),
    (dict(max_new_tokens=2, eos_token_id=[3, -1]),
     r"eos_token_id must be at least 0, got -1"),
    (dict(max_new_tokens=2, pad_token_id=0.5),
     r"pad_token_id must be an integer, got 0.5"),
])
def test_generate_arguments_must_be_integers(gpt2_lm, kwargs, message):
    _, lm = gpt2_lm
    with pytest.raises(flow.FlowError, match=message):
        lm.generate(torch.tensor([[1, 2, 3]]), **kwargs)


@pytest.mark.parametrize("ids, dtype", [
    (torch.tensor([[1.0, 2.7]]), "float32"),
    (torch.tensor([[1, 2]], dtype=torch.bfloat16), "bfloat16"),
    (torch.tensor([[True, False]]), "bool"),
    (np.array([[1.0, 2.7]]), "float64"),
    ([[1.5, 2.0]], "float64"),
])
def test_token_ids_that_are_not_integers_are_refused(gpt2_lm, ids, dtype):
    _, lm = gpt2_lm
    with pytest.raises(flow.FlowError, match="input_ids: token ids must be "
                       f"integers, got {dtype}$"):
        lm.generate(ids, max_new_tokens=2)


@pytest.mark.parametrize("bad, where", [(VOCAB, "[0, 1]"), (-1, "[0, 2]"),
                                        (10**6, "[0, 0]")])
def test_token_ids_outside_the_vocabulary_are_refused(gpt2_lm, bad, where):
    _, lm = gpt2_lm
    ids = torch.tensor([[5, 6, 7]])
    ids[0, int(where[4])] = bad
    with pytest.raises(flow.FlowError, match=rf"input_ids\{where[:-1]}\] is "
                       rf"{bad}, outside the vocabulary of {VOCAB} tokens "
                       rf"\(ids 0 to {VOCAB - 1}\)"):
        lm.generate(ids, max_new_tokens=2)


def test_integer_token_ids_of_any_width_generate_the_same(gpt2_lm):
    model, lm = gpt2_lm
    ids = torch.tensor([[5, 9, 2, 40, 7]])
    want = lm.generate(ids, max_new_tokens=6, eos_token_id=[])
    with torch.no_grad():
        eager = model.generate(ids, max_new_tokens=6, do_sample=False,
                               eos_token_id=None, pad_token_id=0)
    assert torch.equal(want, eager)
    for dtype in (np.int32, np.uint8, np.uint64):
        got = lm.generate(ids.numpy().astype(dtype), max_new_tokens=6,
                          eos_token_id=[])
        assert got.dtype == np.int64 and (got == want.numpy()).all(), dtype
    got = lm.generate(ids, max_new_tokens=np.int64(6), eos_token_id=[],
                      pad_token_id=np.int32(0))
    assert torch.equal(got, want)


def test_max_length_beyond_the_positions_is_refused_at_compile_time():
    with pytest.raises(flow.FlowError, match=r"max_length=33 exceeds the 32 "
                       r"positions the model has \(config.n_positions=32\).*"
                       r"max_length <= 32"):
        flow.compile_causal_lm(tiny_gpt2(positions=32), max_length=33)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
        max_position_embeddings=24)
    llama = transformers.LlamaForCausalLM(config).eval()
    with pytest.raises(flow.FlowError, match=r"max_length=64 exceeds the 24 "
                       r"positions the model has "
                       r"\(config.max_position_embeddings=24\)"):
        flow.compile_causal_lm(llama, max_length=64)


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_length=16.0), r"max_length must be an integer, got 16.0"),
    (dict(max_length=0), r"max_length must be positive, got 0"),
    (dict(prefill_chunk="4"), r"prefill_chunk must be an integer"),
    (dict(batch_size=0), r"batch_size must be positive, got 0"),
])
def test_compile_causal_lm_arguments_are_checked(kwargs, message):
    with pytest.raises(flow.FlowError, match=message):
        flow.compile_causal_lm(tiny_gpt2(), **kwargs)
