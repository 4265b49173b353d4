"""Writes an end-to-end case into DIR: a model (model.onnx, or model.mlir
and its weights for torch), its inputs (input_i.npy) and the peer's outputs
(expected_i.npy: onnxruntime or PyTorch eager), with random weights.

    models.py onnx-mlp DIR | torch-cnn DIR | torch-transformer DIR
"""

import pathlib
import sys

import numpy as np


def onnx_mlp(out: pathlib.Path):
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((64, 128)).astype(np.float32) * 0.1
    b1 = rng.standard_normal(128).astype(np.float32) * 0.1
    w2 = rng.standard_normal((128, 10)).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
        helper.make_node("Softmax", ["h3"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, out / "model.onnx")
    x = rng.standard_normal((8, 64)).astype(np.float32)
    np.save(out / "input_0.npy", x)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    np.save(out / "expected_0.npy", y)


def torch_model(out: pathlib.Path, model, example):
    import torch
    import flow
    torch.manual_seed(0)
    model.eval()
    text = flow.import_torch(model, example,
                             parameters=str(out / "model.safetensors"))
    (out / "model.mlir").write_text(text)
    for i, x in enumerate(example):
        np.save(out / f"input_{i}.npy", x.numpy())
    with torch.no_grad():
        y = model(*example)
    np.save(out / "expected_0.npy", y.numpy())


def torch_cnn(out: pathlib.Path):
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(32, 10))
    torch_model(out, model, (torch.randn(2, 3, 16, 16),))


def torch_transformer(out: pathlib.Path):
    import torch
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
        batch_first=True)
    torch_model(out, model, (torch.randn(2, 7, 32),))


CASES = {"onnx-mlp": onnx_mlp, "torch-cnn": torch_cnn,
         "torch-transformer": torch_transformer}

if __name__ == "__main__":
    directory = pathlib.Path(sys.argv[2])
    directory.mkdir(parents=True, exist_ok=True)
    CASES[sys.argv[1]](directory)
