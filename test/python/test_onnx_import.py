"""flow.import_onnx, flow.compile on ONNX models and `flow-compile
model.onnx`, checked against onnxruntime.

Models are exported from PyTorch with random weights (opsets 13 to 21);
tolerances as in test_torch_import.py (f32, rtol 1e-4: summation order and
polynomial transcendental functions differ from onnxruntime's by ~1e-6).
"""

import re
import subprocess
import warnings

import numpy as np
import pytest

from conftest import require

onnx = require("onnx")
ort = require("onnxruntime")
torch = require("torch")
from onnx import TensorProto, helper  # noqa: E402

import flow  # noqa: E402
from flowtest import tool  # noqa: E402

RTOL = 1e-4


def export(module, args, path, opset, dynamo):
    module.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), opset_version=opset,
                          dynamo=dynamo, verbose=False)
    return path


def check_against_ort(path, inputs, rtol=RTOL):
    compiled = flow.compile(path)
    session = ort.InferenceSession(str(path))
    names = [i.name for i in session.get_inputs()]
    want = session.run(None, dict(zip(names, inputs)))
    got = compiled(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        atol = 1e-5 * max(float(np.abs(w).max()), 1.0)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return compiled


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def test_mlp_opset13(tmp_path):
    mlp = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                              torch.nn.Linear(64, 8), torch.nn.Softmax(-1))
    x = torch.randn(4, 32)
    path = export(mlp, (x,), tmp_path / "mlp.onnx", 13, dynamo=False)
    check_against_ort(path, [x.numpy()])


@pytest.mark.parametrize("arch", ["resnet18", "resnet50"])
def test_resnet_opset13(tmp_path, arch):
    torchvision = require("torchvision")
    model = getattr(torchvision.models, arch)(num_classes=10)
    x = torch.randn(2, 3, 32, 32)
    path = export(model, (x,), tmp_path / f"{arch}.onnx", 13, dynamo=False)
    check_against_ort(path, [x.numpy()])


def test_transformer_encoder_layer_opset18(tmp_path):
    require("onnxscript")
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    x = torch.randn(2, 16, 64)
    path = export(layer, (x,), tmp_path / "encoder.onnx", 18, dynamo=True)
    check_against_ort(path, [x.numpy()])


def test_hf_bert_opset18(tmp_path):
    require("onnxscript")
    transformers = require("transformers")
    config = transformers.BertConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=64)
    ids = torch.randint(0, 100, (2, 16))
    path = export(transformers.BertModel(config), (ids,),
                  tmp_path / "bert.onnx", 18, dynamo=True)
    check_against_ort(path, [ids.numpy()])


def test_hf_gpt2_opset21(tmp_path):
    require("onnxscript")
    transformers = require("transformers")
    config = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=2,
                                     n_head=4, n_positions=64,
                                     use_cache=False)
    ids = torch.randint(0, 100, (2, 16))
    path = export(transformers.GPT2LMHeadModel(config), (ids,),
                  tmp_path / "gpt2.onnx", 21, dynamo=True)
    model = onnx.load(str(path))
    assert model.opset_import[0].version == 21
    check_against_ort(path, [ids.numpy()])


# ---------------------------------------------------------------------------
# Hand-written graphs: inputs, errors, the command line
# ---------------------------------------------------------------------------

def graph_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=list(initializers))
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", opset)])


def linear_model(batch="N", opset=17):
    w = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    return graph_model(
        [helper.make_node("MatMul", ["x", "w"], ["y0"]),
         helper.make_node("Relu", ["y0"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])],
        [onnx.numpy_helper.from_array(w, "w")], opset), w


def test_symbolic_dims_need_input_shapes():
    model, w = linear_model()
    with pytest.raises(ValueError, match="symbolic dimension 'N'.*input_shapes"):
        flow.import_onnx(model)
    text = flow.import_onnx(model, input_shapes={"x": (3, 16)})
    assert "tensor<3x16xf32>" in text
    assert 'flow.parameter "w" : tensor<16x8xf32>' in text
    compiled = flow.compile_mlir(text)
    x = np.random.default_rng(1).standard_normal((3, 16), dtype=np.float32)
    np.testing.assert_allclose(compiled(x)[0], np.maximum(x @ w, 0),
                               rtol=1e-5, atol=1e-6)


def test_inputs_by_name_and_errors():
    model, w = linear_model(batch=2)
    compiled = flow.compile(model)
    x = np.ones((2, 16), np.float32)
    np.testing.assert_allclose(compiled(x=x), compiled(x), rtol=0)
    with pytest.raises(flow.FlowError, match="unknown inputs"):
        compiled(z=x)
    with pytest.raises(flow.FlowError, match="takes 1 inputs"):
        compiled(x, x)
    with pytest.raises(flow.FlowError, match=r"expected f32\[2,16\]"):
        compiled(np.ones((2, 15), np.float32))


def test_every_unsupported_op_is_listed():
    model = graph_model(
        # NonZero reads TopK's output: it is named too.
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top"),
         helper.make_node("Relu", ["v"], ["r"]),
         helper.make_node("NonZero", ["r"], ["nz"], name="nonzero")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, None)])
    with pytest.raises(flow.UnsupportedOpsError) as info:
        flow.import_onnx(model)
    message = str(info.value)
    assert "2 unsupported ops" in message
    assert "TopK (node 'top')" in message and "NonZero (node 'nonzero')" in \
        message


def test_old_opsets_are_refused_with_a_way_out():
    model, _ = linear_model(batch=2, opset=11)
    with pytest.raises(flow.UnsupportedOpsError,
                       match="opset 11.*version_converter"):
        flow.import_onnx(model)
    from onnx import version_converter
    upgraded = version_converter.convert_version(model, 13)
    flow.import_onnx(upgraded)


def test_constants_freeze_shape_inputs():
    model = graph_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(flow.UnsupportedOpsError,
                       match="must be known at compile time"):
        flow.import_onnx(model)
    text = flow.import_onnx(model, constants={"shape": np.array([3, 4])})
    assert "tensor<3x4xf32>" in text


def test_element_types_flow_does_not_compute_are_named():
    model = graph_model(
        [helper.make_node("Relu", ["x"], ["y"]),
         helper.make_node("Cast", ["x"], ["z"], to=TensorProto.COMPLEX64)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None),
         helper.make_tensor_value_info("z", TensorProto.COMPLEX64, None)])
    with pytest.raises(flow.UnsupportedOpsError,
                       match="cast to element type COMPLEX64"):
        flow.import_onnx(model)
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT8E4M3FN
    with pytest.raises(flow.UnsupportedOpsError,
                       match=r"element type FLOAT8E4M3FN \(Flow computes in"):
        flow.import_onnx(model)


def test_cumsum_argmax_gather_elements_against_onnxruntime():
    """RoBERTa-style positions (a running sum of a mask), a class index,
    and a per-row pick, against onnxruntime."""
    model = graph_model(
        [helper.make_node("CumSum", ["m", "ax"], ["pos"], exclusive=1),
         helper.make_node("ArgMax", ["x"], ["cls"], axis=1, keepdims=0),
         helper.make_node("ArgMin", ["x"], ["low"], axis=0,
                          select_last_index=1),
         helper.make_node("GatherElements", ["x", "i"], ["pick"], axis=1)],
        [helper.make_tensor_value_info("m", TensorProto.INT64, [3, 10]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 10]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [3, 4])],
        [helper.make_tensor_value_info("pos", TensorProto.INT64, None),
         helper.make_tensor_value_info("cls", TensorProto.INT64, None),
         helper.make_tensor_value_info("low", TensorProto.INT64, None),
         helper.make_tensor_value_info("pick", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array(1, np.int64), "ax")])
    rng = np.random.default_rng(3)
    # Few distinct values: ties everywhere. Indices in [-10, 10): negative
    # ones count from the end, as onnxruntime reads them.
    feeds = [(rng.random((3, 10)) > 0.3).astype(np.int64),
             rng.integers(0, 4, (3, 10)).astype(np.float32),
             rng.integers(-10, 10, (3, 4)).astype(np.int64)]
    want = ort.InferenceSession(model.SerializeToString()).run(
        None, dict(zip(["m", "x", "i"], feeds)))
    got = flow.compile(model)(*feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_constant_pad():
    model = graph_model(
        [helper.make_node("Pad", ["x", "pads", "value"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([0, 1, 2, 1, 0, 3]), "pads"),
         onnx.numpy_helper.from_array(np.array(-1.5, np.float32), "value")])
    x = np.random.default_rng(3).standard_normal((2, 3, 4), dtype=np.float32)
    got = flow.compile(model)(x)
    want = np.pad(x, [(0, 1), (1, 0), (2, 3)], constant_values=-1.5)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([-1], [-9999], [2], [-1]),              # reverse the last axis
    ([5, 2], [0, -9999], [2, 1], [-2, -1]),  # both axes, a step of 2
    ([1, 9], [3, 0], [0, 2], [1, -3]),        # mixed signs
    ([0], [4], [1], [-1]),                   # starts below the end: empty
])
def test_slice_with_negative_steps(starts, ends, axes, steps):
    """ONNX Slice with a negative step (x[::-1] exported) is flow.reverse
    and a forward slice, checked against onnxruntime."""
    model = graph_model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
         for v, n in [(starts, "s"), (ends, "e"), (axes, "a"), (steps, "t")]])
    x = np.random.default_rng(4).standard_normal((2, 3, 8), dtype=np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(
        None, {"x": x})[0]
    got = flow.compile(model)(x)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_corrupt_and_missing_files(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(ValueError, match="cannot read ONNX model"):
        flow.import_onnx(str(bad))
    with pytest.raises(ValueError, match="cannot read ONNX model"):
        flow.import_onnx(str(tmp_path / "missing.onnx"))


def test_flow_compile_accepts_onnx(tmp_path):
    model, w = linear_model(batch=2)
    path = tmp_path / "linear.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "out" / "linear.fbin"
    out.parent.mkdir()
    result = subprocess.run([str(tool("flow-compile")), str(path), "-o",
                             str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    archive = out.with_suffix(".safetensors")
    assert archive.exists()
    # The executable names its archive relative to itself: move both.
    moved = tmp_path / "moved"
    moved.mkdir()
    out.rename(moved / out.name)
    archive.rename(moved / archive.name)
    x = np.random.default_rng(2).standard_normal((2, 16), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    run = subprocess.run([str(tool("flow-run")), str(moved / out.name),
                          f"--input={tmp_path / 'x.npy'}",
                          f"--output-dir={tmp_path / 'res'}"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "res" / "result_0.npy"),
                               np.maximum(x @ w, 0), rtol=1e-5, atol=1e-6)
    # A missing archive is a clear error.
    (moved / archive.name).unlink()
    run = subprocess.run([str(tool("flow-run")), str(moved / out.name),
                          f"--input={tmp_path / 'x.npy'}"],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert re.search(r"cannot open parameter archive '.*linear.safetensors'",
                     run.stderr)


def test_flow_compile_reports_onnx_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    result = subprocess.run([str(tool("flow-compile")), str(bad), "-o",
                             str(tmp_path / "x.fbin")], capture_output=True,
                            text=True)
    assert result.returncode == 1
    assert "cannot read ONNX model" in result.stderr
    assert "Traceback" not in result.stderr


def test_topk_of_many_against_onnxruntime():
    """TopK past the unrolled limit (flow.sort): values and indices as
    onnxruntime gives them (distinct values, so the order is defined)."""
    model = graph_model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1),
         helper.make_node("TopK", ["x", "k"], ["sv", "si"], axis=1,
                          largest=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 500])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         [("v", TensorProto.FLOAT), ("i", TensorProto.INT64),
          ("sv", TensorProto.FLOAT), ("si", TensorProto.INT64)]],
        [onnx.numpy_helper.from_array(np.array([200], np.int64), "k")])
    x = np.random.default_rng(5).permutation(1500).reshape(3, 500).astype(
        np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    got = flow.compile(model)(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
