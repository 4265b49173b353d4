"""The extension's ProgramBuilder: ops built by name in C++, result types
inferred by the ops themselves, every failure a BuildError naming the op."""

import numpy as np
import pytest

import flow
from flow import _flow
from flow._emitter import Emitter, Unsupported, string


def test_results_take_the_types_the_ops_infer():
    b = _flow.ProgramBuilder("main")
    x = b.argument([2, 3], "f32")
    c = b.constant([3], "f32", np.arange(3, dtype=np.float32).tobytes())
    y, = b.create("flow.add", [x, c], [])
    assert b.type(y) == ((2, 3), "f32")
    s, = b.create("flow.reduce_sum", [y], [("axes", "array<i64: 1>"),
                                           ("keepdims", "unit")])
    assert b.type(s) == ((2, 1), "f32")
    values, indices = b.create("flow.sort", [y], [("axis", "1 : i64")])
    assert b.type(values) == ((2, 3), "f32")
    assert b.type(indices) == ((2, 3), "i64")
    m, = b.create("flow.compare", [y, c], [("predicate", "lt")])
    assert b.type(m) == ((2, 3), "i1")
    # The few ops whose result type is a choice take it.
    r, = b.create("flow.reshape", [y], [], [((3, 2), "f32")])
    assert b.type(r) == ((3, 2), "f32")
    text = b.finish([s, r], "")
    assert "flow.reduce_sum" in text and "func.func @main" in text


@pytest.mark.parametrize("name, operands, attrs, results, message", [
    ("flow.exp", "i", [], None, "operand #0 must be"),
    ("flow.add", "xy", [], None, "flow.add"),
    ("flow.softmax", "x", [("axis", "5 : i64")], None, "out of range"),
    ("flow.reduce_sum", "x", [("axes", "[1")], None,
     "is not MLIR attribute syntax"),
    ("flow.compare", "xx", [("predicate", "bigger")], None,
     "attribute 'predicate'"),
    ("flow.reshape", "x", [], None, "does not infer its result types"),
    ("flow.reshape", "x", [], [((5,), "f32")], "flow.reshape"),
    ("flow.cast", "x", [], [((2, 3), "f17")], "not an element type"),
    ("flow.nonsense", "x", [], None, "not an op Flow knows"),
    # The MLIR parser would crash on this one: refused before parsing.
    ("flow.transpose", "x", [("permutation", "array<index: 1, 0>")], None,
     "index"),
])
def test_bad_ops_are_refused_by_name(name, operands, attrs, results,
                                     message):
    b = _flow.ProgramBuilder("main")
    values = {"x": b.argument([2, 3], "f32"), "y": b.argument([4], "f32"),
              "i": b.argument([2], "i64")}
    with pytest.raises(_flow.BuildError, match=name.replace(".", r"\.")
                       if "not an element type" not in message else None) \
            as info:
        b.create(name, [values[o] for o in operands], attrs, results)
    assert message in str(info.value)
    # The builder is still usable: a refused op leaves nothing behind.
    y, = b.create("flow.neg", [values["x"]], [])
    assert "flow.neg" in b.finish([y], "")


def test_handles_and_finish_are_checked():
    b = _flow.ProgramBuilder("main")
    x = b.argument([2], "f32")
    with pytest.raises(_flow.BuildError, match="no value 7"):
        b.create("flow.neg", [7], [])
    with pytest.raises(_flow.BuildError, match="no value 3"):
        b.type(3)
    with pytest.raises(_flow.BuildError, match="no value -1"):
        b.finish([-1], "")
    b.finish([x], "")
    with pytest.raises(_flow.BuildError, match="finished"):
        b.create("flow.neg", [x], [])
    with pytest.raises(_flow.BuildError, match="negative dimension"):
        _flow.ProgramBuilder("f").argument([-2], "f32")


def test_result_attributes_are_checked_against_the_results():
    b = _flow.ProgramBuilder("main")
    x = b.argument([2], "f32")
    b.set_result_attribute(1, "flow.state", '"w"')
    with pytest.raises(_flow.BuildError, match="no result -1"):
        b.set_result_attribute(-1, "flow.state", '"w"')
    with pytest.raises(_flow.BuildError, match="not MLIR attribute syntax"):
        b.set_result_attribute(0, "flow.state", '"w')
    with pytest.raises(_flow.BuildError,
                       match="result 1 of a function of 1 results"):
        b.finish([x], "")
    # Nothing was built by the refused finish: a correct one still works.
    y, = b.create("flow.neg", [x], [])
    text = b.finish([x, y], "")
    assert '-> (tensor<2xf32>, tensor<2xf32> {flow.state = "w"})' in text


def test_constants_take_raw_bytes():
    import ml_dtypes
    b = _flow.ProgramBuilder("main")
    cases = [np.array([[1.5, -2.0], [0.25, 3.0]], np.float32),
             np.array([7, -7, 0], np.int8), np.array([1, 65535], np.uint16),
             np.array([True, False, True]), np.full((4, 4), 2.5, np.float64),
             np.array([1.0, -3.5], ml_dtypes.bfloat16),
             np.zeros((0, 3), np.float32)]
    dtypes = ["f32", "i8", "ui16", "i1", "f64", "bf16", "f32"]
    handles = [b.constant(list(a.shape), d, a.tobytes())
               for a, d in zip(cases, dtypes)]
    with pytest.raises(_flow.BuildError, match="3 bytes for 2 elements"):
        b.constant([2], "f32", b"abc")
    text = b.finish(handles, "")
    # A splat is stored once.
    assert "dense<2.500000e+00> : tensor<4x4xf64>" in text
    assert "dense<[true, false, true]>" in text
    program = flow.compile_mlir(text)
    for got, want in zip(program(), cases):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_parameter_names_survive_any_characters(tmp_path):
    e = Emitter()
    weird = 'layer "0"\\weight \u00e9\n'
    w = np.arange(100, dtype=np.float32)
    v = e.constant(w, weird)
    assert string('a"b\\') == '"a\\22b\\5C"'
    text = e.module([v], str(tmp_path / "w.safetensors"))
    e.write_archive(str(tmp_path / "w.safetensors"))
    assert e.parameters.keys() == {weird}
    np.testing.assert_array_equal(np.asarray(flow.compile_mlir(text)()[0]), w)


def test_emitter_turns_build_errors_into_refusals():
    e = Emitter()
    x = e.argument((2, 3), "i64")
    with pytest.raises(Unsupported, match="flow.exp"):
        e.unary("exp", x)


def test_locations_are_the_models_lines():
    e = Emitter()
    x = e.argument((2,), "f32")
    e.locate("model.py", 12)
    y = e.unary("tanh", x)
    e.locate(name="node_7")
    z = e.unary("neg", y)
    text = e.module([z], None)
    assert 'flow.tanh %arg0 : tensor<2xf32> loc("model.py":12:0)' in text
    assert 'loc("node_7")' in text


def test_huge_shapes_are_refused():
    b = _flow.ProgramBuilder("main")
    with pytest.raises(_flow.BuildError, match="2\\^56"):
        b.argument([1 << 40, 1 << 40], "f32")
    with pytest.raises(_flow.BuildError, match="2\\^56"):
        b.constant([1 << 40, 1 << 40], "f32", b"")
