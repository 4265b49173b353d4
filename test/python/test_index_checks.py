"""Indices out of range are an error, as PyTorch raises, not a silent
clamp: token ids outside an embedding's vocabulary and class targets
outside a loss's classes (ignore_index kept) are refused before the call,
naming the input, the element, the value, the op and the valid range."""

import subprocess

import numpy as np
import pytest

from conftest import require
from flowtest import compile_mlir, tool

flow = require("flow")
torch = require("torch")

VOCAB = 100


class Embed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCAB, 8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, ids):
        return self.head(self.embedding(ids))


@pytest.fixture(scope="module")
def embed():
    torch.manual_seed(0)
    model = Embed().eval()
    ids = torch.randint(0, VOCAB, (2, 5))
    return model, flow.compile(model, (ids,))


@pytest.mark.parametrize("bad", [VOCAB, 10**9, -1, -5])
def test_token_ids_outside_the_vocabulary_raise(embed, bad):
    model, compiled = embed
    ids = torch.randint(0, VOCAB, (2, 5))
    ids[1, 2] = bad
    with pytest.raises(IndexError):
        model(ids)                          # what eager does
    with pytest.raises(flow.FlowError) as info:
        compiled(ids)
    message = str(info.value)
    assert f"input 0 holds {bad} at element 7, an index out of range for " \
           "flow.gather at " in message, message
    assert f"(indices are 0 to {VOCAB - 1})" in message, message


def test_ids_in_range_still_match_eager(embed):
    model, compiled = embed
    ids = torch.tensor([[0, VOCAB - 1, 5, 6, 7], [1, 2, 3, 4, 99]])
    with torch.no_grad():
        want = model(ids)
    torch.testing.assert_close(compiled(ids), want, rtol=1e-5, atol=1e-6)


class Loss(torch.nn.Module):
    def __init__(self, ignore_index=-100):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.ignore_index = ignore_index

    def forward(self, x, target):
        return torch.nn.functional.cross_entropy(
            self.linear(x), target, ignore_index=self.ignore_index)


@pytest.fixture(scope="module")
def loss():
    torch.manual_seed(1)
    model = Loss().eval()
    x, t = torch.randn(6, 4), torch.randint(0, 3, (6,))
    return model, flow.compile(model, (x, t))


@pytest.mark.parametrize("bad", [3, 7, -1])
def test_class_targets_outside_the_classes_raise(loss, bad):
    model, compiled = loss
    x, t = torch.randn(6, 4), torch.randint(0, 3, (6,))
    t[4] = bad
    with pytest.raises((IndexError, RuntimeError)):
        model(x, t)                          # what eager does
    with pytest.raises(flow.FlowError) as info:
        compiled(x, t)
    message = str(info.value)
    assert f"input 1 holds {bad} at element 4, an index out of range for " \
           "flow.gather_elements at " in message, message
    assert "(indices are 0 to 2, or -100 (ignored))" in message, message


def test_ignore_index_is_kept(loss):
    model, compiled = loss
    x, t = torch.randn(6, 4), torch.tensor([0, -100, 2, 1, -100, 2])
    with torch.no_grad():
        want = model(x, t)
    torch.testing.assert_close(compiled(x, t), want, rtol=1e-5, atol=1e-6)


def test_training_refuses_a_bad_target_and_keeps_the_state():
    torch.manual_seed(2)
    model = torch.nn.Linear(4, 3)
    x, t = torch.randn(6, 4), torch.randint(0, 3, (6,))
    step = flow.compile_train(model, torch.nn.CrossEntropyLoss(), (x, t),
                              optimizer=flow.optim.SGD(lr=0.1))
    step(x, t)
    before = {k: v.clone() for k, v in step.state_dict().items()}
    bad = t.clone()
    bad[0] = 3
    with pytest.raises(flow.FlowError,
                       match=r"input \d+ holds 3 at element 0, an index out "
                             r"of range for flow.gather_elements"):
        step(x, bad)
    after = step.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


GATHER = """
func.func @main(%t: tensor<10x4xf32>, %ids: tensor<3xi32>) -> tensor<3x4xf32> {
  %e = flow.gather %t[%ids] axis = 0 : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}
"""


def test_flow_run_refuses_out_of_range_ids(tmp_path):
    fbin = compile_mlir(GATHER, tmp_path)
    np.save(tmp_path / "t.npy", np.arange(40, dtype=np.float32).reshape(10, 4))
    np.save(tmp_path / "ok.npy", np.array([0, 9, 3], np.int32))
    np.save(tmp_path / "bad.npy", np.array([0, 10, 3], np.int32))
    ok = subprocess.run([str(tool("flow-run")), str(fbin),
                         f"--input={tmp_path / 't.npy'}",
                         f"--input={tmp_path / 'ok.npy'}"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([str(tool("flow-run")), str(fbin),
                          f"--input={tmp_path / 't.npy'}",
                          f"--input={tmp_path / 'bad.npy'}"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "function 'main': input 1 holds 10 at element 1, an index out of " \
           "range for flow.gather at " in bad.stderr, bad.stderr
    assert "(indices are 0 to 9)" in bad.stderr


def test_onnx_gather_counts_negative_indices_from_the_end(tmp_path):
    """ONNX Gather takes indices in [-n, n): -1 is the last row; -7 and 6
    of 6 rows are refused (onnxruntime refuses them too)."""
    onnx = require("onnx")
    ort = require("onnxruntime")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Gather", ["t", "i"], ["y"], axis=0)], "g",
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [6, 2]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "g.onnx"
    onnx.save(model, str(path))
    t = np.arange(12, dtype=np.float32).reshape(6, 2)
    i = np.array([-1, 0, 5], np.int64)
    compiled = flow.compile(str(path), (t, i))
    want = ort.InferenceSession(str(path)).run(None, {"t": t, "i": i})[0]
    np.testing.assert_array_equal(compiled(t, i), want)
    for bad in (-7, 6):
        i[1] = bad
        with pytest.raises(flow.FlowError,
                           match=rf"input 1 holds {bad} at element 1, an "
                                 r"index out of range for flow.gather at .* "
                                 r"\(indices are -6 to 5\)"):
            compiled(t, i)
