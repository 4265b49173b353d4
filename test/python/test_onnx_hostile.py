"""Invalid and hostile ONNX graphs: each is refused with one flow.FlowError
naming the model, the tensor or node and what was expected, never a
traceback from numpy, never a silent import, and never an allocation of
the absurd sizes a graph can ask for."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import require

onnx = require("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import flow  # noqa: E402
from flow.onnx_import import MAX_TENSOR_BYTES  # noqa: E402
from flowtest import tool  # noqa: E402


def model_of(nodes, inputs, outputs, initializers=(), opset=17,
             value_info=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=list(initializers),
                              value_info=list(value_info))
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", opset)])


def tensor(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def refused(model, *patterns, **kwargs):
    """Imports `model`, which must raise FlowError matching every pattern;
    returns the message."""
    with pytest.raises(flow.FlowError) as info:
        flow.import_onnx(model, **kwargs)
    message = str(info.value)
    assert message.startswith("ONNX model "), message
    for pattern in patterns:
        assert re.search(pattern, message), (pattern, message)
    return message


X = tensor("x", [2, 3])
Y = tensor("y", [2, 3])


# 1. Static single assignment -------------------------------------------------

def test_two_nodes_writing_one_name_are_refused():
    model = model_of([helper.make_node("Relu", ["x"], ["y"], name="a"),
                      helper.make_node("Neg", ["x"], ["y"], name="b")],
                     [X], [Y])
    refused(model, r"\(graph 'g'\)",
            r"'y' is written by node 'a' \(Relu\) and by node 'b' \(Neg\)",
            r"SSA")


def test_a_node_writing_an_input_or_initializer_is_refused():
    model = model_of([helper.make_node("Relu", ["x"], ["x"], name="a")],
                     [X], [tensor("x", [2, 3])])
    refused(model, r"'x' is written by a graph input and by node 'a' "
            r"\(Relu\)")
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    model = model_of([helper.make_node("Relu", ["x"], ["w"], name="a"),
                      helper.make_node("Add", ["x", "w"], ["y"])],
                     [X], [Y], [w])
    refused(model, r"'w' is written by an initializer and by node 'a' "
            r"\(Relu\)")
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])],
                     [X], [Y], [w, w])
    refused(model, r"'w' is written by an initializer and by an "
            r"initializer")


def test_an_initializer_listed_as_an_input_is_accepted():
    """IR 3 lists initializers among the inputs: valid, and a constant."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])],
                     [X, tensor("w", [2, 3])], [Y],
                     [numpy_helper.from_array(w, "w")])
    program = flow.onnx_import.import_program(model)
    assert program.input_names == ["x"]


def test_reads_of_undefined_or_later_names_are_refused():
    model = model_of([helper.make_node("Add", ["x", "z"], ["y"], name="a")],
                     [X], [Y])
    refused(model, r"node 'a' \(Add\) reads 'z', which nothing defines")
    model = model_of([helper.make_node("Neg", ["t"], ["y"], name="a"),
                      helper.make_node("Relu", ["x"], ["t"])],
                     [X], [Y])
    refused(model, r"node 'a' \(Neg\) reads 't' before node #1 \(Relu\) "
            r"writes it; ONNX nodes are in topological order")


def test_graph_outputs_nothing_computes_are_refused():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])],
                     [X], [Y, tensor("q", [2, 3])])
    refused(model, r"graph output 'q' is not computed")


def test_errors_name_the_file_and_reach_the_command_line(tmp_path):
    model = model_of([helper.make_node("Relu", ["x"], ["y"], name="a"),
                      helper.make_node("Neg", ["x"], ["y"], name="b")],
                     [X], [Y])
    path = tmp_path / "dup.onnx"
    onnx.save(model, str(path))
    with pytest.raises(flow.FlowError,
                       match=r"ONNX model '.*dup\.onnx': 'y' is written"):
        flow.compile(str(path))
    for cmd in ([str(tool("flow-compile")), str(path), "-o",
                 str(tmp_path / "dup.fbin")],
                [sys.executable, "-m", "flow.onnx_import", str(path)]):
        result = subprocess.run(cmd, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH":
                                     os.path.dirname(flow.__path__[0])})
        assert result.returncode == 1, result.stderr
        assert "'y' is written by node 'a' (Relu)" in result.stderr
        assert "Traceback" not in result.stderr


# 2. Declared output shapes and absurd sizes ----------------------------------

def expand_model(out_shape, target, x_const=False, dtype=np.float32):
    shape = numpy_helper.from_array(np.array(target, np.int64), "shape")
    inits = [shape]
    inputs = [tensor("x", [1, 1])]
    if x_const:
        inits.append(numpy_helper.from_array(np.ones((1, 1), dtype), "x"))
        inputs = []
    return model_of([helper.make_node("Expand", ["x", "shape"], ["y"],
                                      name="grow")],
                    inputs, [tensor("y", out_shape)], inits)


def test_declared_output_shape_must_match():
    refused(expand_model([2, 3], [4, 3]),
            r"graph output 'y' is declared with shape \[2, 3\], but the "
            r"graph computes \[4, 3\]")
    refused(expand_model([4], [4, 3]), r"declared with shape \[4\]")
    # Symbolic or unknown dimensions, or no shape at all, match.
    for declared in (["N", 3], [4, None], None):
        text = flow.import_onnx(expand_model(declared, [4, 3]))
        assert "tensor<4x3xf32>" in text


@pytest.mark.parametrize("x_const", [False, True])
def test_expand_to_absurd_sizes_is_refused(x_const):
    # 2^40 elements of f32 (4 TiB): refused before anything is allocated,
    # whether the input is an argument or a constant that would be folded.
    message = refused(expand_model([2, 3], [1 << 20, 1 << 20], x_const),
                      r"node 'grow' \(Expand\) output 'y' has shape "
                      r"\[1048576, 1048576\]: 1099511627776 elements",
                      str(MAX_TENSOR_BYTES))
    assert "4398046511104 bytes" in message


def test_constant_of_shape_and_range_to_absurd_sizes_are_refused():
    shape = numpy_helper.from_array(np.array([1 << 21, 1 << 21], np.int64),
                                    "shape")
    model = model_of([helper.make_node("ConstantOfShape", ["shape"], ["y"],
                                       name="fill")], [],
                     [tensor("y", None)], [shape])
    refused(model, r"node 'fill' \(ConstantOfShape\)'s result has shape "
            r"\[2097152, 2097152\]", r"17592186044416 bytes")
    bounds = [numpy_helper.from_array(np.array(v, np.int64), n)
              for v, n in [(0, "lo"), (1 << 40, "hi"), (1, "step")]]
    model = model_of([helper.make_node("Range", ["lo", "hi", "step"], ["y"],
                                       name="iota")], [],
                     [tensor("y", None, TensorProto.INT64)], bounds)
    refused(model, r"node 'iota' \(Range\)'s result has shape "
            r"\[1099511627776\]")


def test_large_constant_of_shape_is_a_broadcast_not_a_folded_constant():
    """Above the folding limit (but sane), ConstantOfShape is computed at
    run time rather than materialized at import."""
    shape = numpy_helper.from_array(np.array([4096, 8192], np.int64), "shape")
    model = model_of([helper.make_node(
        "ConstantOfShape", ["shape"], ["y"],
        value=numpy_helper.from_array(np.array([1.5], np.float32)))], [],
        [tensor("y", [4096, 8192])], [shape])
    program = flow.onnx_import.import_program(model)
    assert "flow.broadcast_to" in program.text
    assert "tensor<4096x8192xf32>" in program.text
    assert program.archive == ""  # nothing stored


# 3. Versions -----------------------------------------------------------------

def test_unknown_opset_and_ir_versions_are_refused():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [X], [Y],
                     opset=9999)
    newest = onnx.defs.onnx_opset_version()
    refused(model, r"default domain is version 9999",
            rf"opsets 13 to {newest}\b")
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [X], [Y])
    model.ir_version = 999
    refused(model, rf"ir_version 999 is newer than the newest Flow reads, "
            rf"{onnx.IR_VERSION}\b")
    # The newest opset and IR version are accepted.
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [X], [Y],
                     opset=newest)
    model.ir_version = onnx.IR_VERSION
    assert "flow.relu" in flow.import_onnx(model)


def test_nodes_of_unknown_domains_are_refused():
    model = model_of([helper.make_node("Relu", ["x"], ["y"], name="r",
                                       domain="com.example")], [X], [Y])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(flow.UnsupportedOpsError,
                       match=r"Relu \(node 'r'\): domain 'com.example'"):
        flow.import_onnx(model)


# 4. Negative and huge dimensions ---------------------------------------------

def test_negative_and_huge_input_dimensions_are_refused():
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    refused(model_of(relu, [tensor("x", [2, -3])], [tensor("y", None)]),
            r"input 'x' has dimension 1 = -3 \(shape \[2, -3\]\)")
    refused(model_of(relu, [tensor("x", [1 << 30, 1 << 30])],
                     [tensor("y", None)]),
            r"input 'x' has shape \[1073741824, 1073741824\]: "
            r"1152921504606846976 elements")
    refused(model_of(relu, [tensor("x", ["N", 3])], [tensor("y", None)]),
            r"input 'x' has dimension 0 = -2",
            input_shapes={"x": (-2, 3)})
    refused(model_of(relu, [X], [tensor("y", [2, -1])]),
            r"output 'y' has dimension 1 = -1")
    refused(model_of(relu, [X], [Y], value_info=[tensor("v", [-7])]),
            r"value_info 'v' has dimension 0 = -7")


def test_negative_and_huge_initializer_dimensions_are_refused():
    add = [helper.make_node("Add", ["x", "w"], ["y"])]
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.dims[0] = -2
    refused(model_of(add, [X], [Y], [w]),
            r"initializer 'w' has dimension 0 = -2")
    w.dims[:] = [1 << 40, 1 << 40]
    refused(model_of(add, [X], [Y], [w]),
            r"initializer 'w' has shape \[1099511627776, 1099511627776\]")


def test_reshape_and_expand_to_negative_shapes_are_refused():
    for op, target, pattern in [
            ("Reshape", [-2, -3], r"node 'n' \(Reshape\) reshapes to "
             r"\[-2, -3\]"),
            ("Expand", [2, -3], r"node 'n' \(Expand\) expands to \[2, -3\]")]:
        model = model_of(
            [helper.make_node(op, ["x", "s"], ["y"], name="n")],
            [X], [tensor("y", None)],
            [numpy_helper.from_array(np.array(target, np.int64), "s")])
        refused(model, pattern)


# 5. Initializer data that does not fill its dims -----------------------------

def test_initializer_data_must_match_its_dims():
    add = [helper.make_node("Add", ["x", "w"], ["y"])]
    w = numpy_helper.from_array(np.ones(6, np.float32), "w")
    w.dims[:] = [20, 30]
    refused(model_of(add, [X], [Y], [w]),
            r"initializer 'w': dims \[20, 30\] need 600 elements of FLOAT "
            r"\(2400 bytes\), the data holds 6 \(24 bytes\)")
    w.dims[:] = [2, 2]
    refused(model_of(add, [X], [Y], [w]),
            r"dims \[2, 2\] need 4 elements of FLOAT \(16 bytes\), the data "
            r"holds 6 \(24 bytes\)")
    w.raw_data = b"\0" * 7
    refused(model_of(add, [X], [Y], [w]), r"the data holds 7 bytes")
    typed = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1.0] * 6)
    del typed.float_data[-1]
    refused(model_of(add, [X], [Y], [typed]),
            r"initializer 'w': dims \[2, 3\] need 6 elements of FLOAT "
            r"\(24 bytes\), the data holds 5$")


def test_initializer_external_data_that_cannot_be_read_is_named():
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    onnx.external_data_helper.set_external_data(w, "missing-weights.bin")
    w.ClearField("raw_data")
    model = model_of([helper.make_node("Add", ["x", "w"], ["y"])],
                     [X], [Y], [w])
    refused(model, r"initializer 'w': cannot read its external data "
            r"\(.*missing-weights\.bin")
