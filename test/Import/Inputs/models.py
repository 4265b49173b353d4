"""Small models for the importer lit tests: `models.py NAME OUT` writes
an ONNX file, `models.py torch:NAME` prints the imported flow IR."""

import os
import sys
import tempfile

import numpy as np


def onnx_models():
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)

    def model(nodes, inputs, outputs, inits=(), opset=17):
        graph = helper.make_graph(nodes, "g", inputs, outputs,
                                  initializer=list(inits))
        return helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)])

    f = TensorProto.FLOAT
    return {
        # Gemm with transB: a transposed GEMM operand, no transpose op.
        "gemm": model(
            [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
            [helper.make_tensor_value_info("x", f, [4, 64])],
            [helper.make_tensor_value_info("y", f, [4, 32])],
            [numpy_helper.from_array(rng.standard_normal((32, 64))
                                     .astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros(32, np.float32), "b")]),
        # The Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain
        # exporters write folds to one reshape.
        "shape_chain": model(
            [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])],
            [helper.make_tensor_value_info("x", f, [2, 3, 4])],
            [helper.make_tensor_value_info("y", f, None)],
            [numpy_helper.from_array(np.array(0), "zero"),
             numpy_helper.from_array(np.array([0]), "axes"),
             numpy_helper.from_array(np.array([-1]), "minus1")]),
        # A batch the model leaves symbolic (dim_param "batch").
        "dynamic_batch": model(
            [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
            [helper.make_tensor_value_info("x", f, ["batch", 64])],
            [helper.make_tensor_value_info("y", f, ["batch", 32])],
            [numpy_helper.from_array(rng.standard_normal((32, 64))
                                     .astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros(32, np.float32), "b")]),
        # The erf form of GELU that opset < 20 exporters write.
        "gelu_erf": model(
            [helper.make_node("Div", ["x", "sqrt2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]),
             helper.make_node("Mul", ["x", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])],
            [helper.make_tensor_value_info("x", f, [8])],
            [helper.make_tensor_value_info("y", f, [8])],
            [numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")],
            opset=13),
    }


def torch_text(name):
    import torch
    import flow
    torch.manual_seed(0)

    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=True)

    if name == "linear":
        module, args = torch.nn.Linear(64, 32), (torch.randn(4, 64),)
    elif name == "attention":
        module = Attention()
        args = tuple(torch.randn(1, 2, 8, 16) for _ in range(3))
    else:
        raise SystemExit(f"unknown model {name}")
    # The weights go to a scratch file (only the text is checked).
    with tempfile.TemporaryDirectory() as scratch:
        return flow.import_torch(
            module, args, parameters=os.path.join(scratch, "w.safetensors"))


def main():
    name = sys.argv[1]
    if name.startswith("torch:"):
        sys.stdout.write(torch_text(name[6:]))
        return
    import onnx
    onnx.save(onnx_models()[name], sys.argv[2])


if __name__ == "__main__":
    main()
