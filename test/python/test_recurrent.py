"""Recurrent layers: ONNX LSTM, GRU and RNN (every direction, biases,
initial states, peepholes, per-element sequence lengths, both layouts)
against onnxruntime, and torch's nn.LSTM / nn.GRU / nn.RNN (which
torch.export decomposes into matmuls and gates) against eager.

Tolerance rtol 1e-5 with an absolute floor of 1e-6: a few steps of f32
matmuls and sigmoid/tanh, summed in a different order than the reference.
"""

import numpy as np
import pytest

from conftest import require

import flow  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


def onnx_rnn(kind, seq, batch, inp, hidden, direction="forward", layout=0,
             bias=True, initial=True, peepholes=False, lens=False,
             **attrs):
    onnx = require("onnx")
    from onnx import TensorProto, helper
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(7)

    def init(name, *shape):
        return onnx.numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.5).astype(np.float32), name)
    inits = [init("W", dirs, gates * hidden, inp),
             init("R", dirs, gates * hidden, hidden)]
    names = ["X", "W", "R"]
    names.append("B" if bias else "")
    if bias:
        inits.append(init("B", dirs, 2 * gates * hidden))
    names.append("lens" if lens else "")
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs = [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, [batch, seq, inp] if layout else
        [seq, batch, inp])]
    if lens:
        inputs.append(helper.make_tensor_value_info(
            "lens", TensorProto.INT32, [batch]))
    if initial:
        names.append("h0")
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT,
                                                    list(state)))
        if kind == "LSTM":
            names.append("c0")
            inputs.append(helper.make_tensor_value_info(
                "c0", TensorProto.FLOAT, list(state)))
    if peepholes:
        while len(names) < 7:
            names.append("")
        names.append("P")
        inits.append(init("P", dirs, 3 * hidden))
    while names and not names[-1]:
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else [])
    node = helper.make_node(kind, names, outs, hidden_size=hidden,
                            direction=direction, layout=layout, **attrs)
    graph = helper.make_graph(
        [node], "g", inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
         for o in outs], initializer=inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    feeds = [rng.standard_normal([batch, seq, inp] if layout else
                                 [seq, batch, inp]).astype(np.float32)]
    if lens:
        feeds.append(rng.integers(1, seq + 1, batch).astype(np.int32))
        feeds[-1][0] = seq
    if initial:
        feeds.append(rng.standard_normal(state).astype(np.float32))
        if kind == "LSTM":
            feeds.append(rng.standard_normal(state).astype(np.float32))
    return model, feeds


def against_ort(model, feeds):
    ort = require("onnxruntime")
    names = [i.name for i in model.graph.input]
    want = ort.InferenceSession(model.SerializeToString()).run(
        None, dict(zip(names, feeds)))
    got = flow.compile(model)(*feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def against_ort_batchwise(kind, *args, **kwargs):
    """layout = 1 (batch first), which onnxruntime does not run: against
    the same layer with layout = 0 on transposed inputs and outputs."""
    ort = require("onnxruntime")
    model0, feeds0 = onnx_rnn(kind, *args, layout=0, **kwargs)
    model1, _ = onnx_rnn(kind, *args, layout=1, **kwargs)
    names = [i.name for i in model0.graph.input]
    want = ort.InferenceSession(model0.SerializeToString()).run(
        None, dict(zip(names, feeds0)))
    feeds1 = [f.transpose(1, 0, 2) if f.ndim == 3 else f for f in feeds0]
    got = flow.compile(model1)(*feeds1)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.transpose(2, 0, 1, 3) if w.ndim == 4 else w.transpose(1, 0, 2)
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_onnx_lstm(direction):
    against_ort(*onnx_rnn("LSTM", 5, 3, 4, 6, direction, peepholes=True))


def test_onnx_lstm_sequence_lengths_layout_and_clip():
    against_ort_batchwise("LSTM", 6, 3, 4, 5, "bidirectional", lens=True,
                          clip=0.8)
    against_ort(*onnx_rnn("LSTM", 4, 2, 3, 5, bias=False, initial=False,
                          input_forget=1))


@pytest.mark.parametrize("before_reset", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_onnx_gru(direction, before_reset):
    against_ort(*onnx_rnn("GRU", 5, 3, 4, 6, direction,
                          linear_before_reset=before_reset, lens=True))


def test_onnx_gru_batchwise_and_rnn_activations():
    against_ort_batchwise("GRU", 4, 2, 3, 5, bias=False)
    against_ort(*onnx_rnn("RNN", 5, 3, 4, 6, "bidirectional",
                          activations=["Relu", "Tanh"]))
    against_ort(*onnx_rnn("RNN", 5, 2, 4, 3, lens=True,
                          activations=["LeakyRelu"], activation_alpha=[0.2]))


def test_onnx_rnn_with_an_unknown_activation_is_refused():
    model, _ = onnx_rnn("RNN", 3, 2, 4, 3, activations=["Gelu"])
    with pytest.raises(flow.UnsupportedOpsError, match="activation Gelu"):
        flow.import_onnx(model)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_torch_recurrent_layers(cls):
    torch = require("torch")
    torch.manual_seed(0)
    module = getattr(torch.nn, cls)(4, 6, num_layers=2, bidirectional=True,
                                    batch_first=True).eval()
    x = torch.randn(3, 5, 4)
    compiled = flow.compile(module, (x,))
    got = torch.utils._pytree.tree_leaves(compiled(x))
    with torch.no_grad():
        want = torch.utils._pytree.tree_leaves(module(x))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)
