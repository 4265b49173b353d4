"""Dynamic dimensions: `dynamic=` names a dimension of an input and bounds
it; the importer writes every size torch.export computed from it as an
extent over the names, the flow dialect's shape rules check the program,
and a program whose symbolic dimensions are its tensors' rows compiles
once, at its upper bounds, and runs at every size in them (against eager
within 1e-5: the same kernels run, on fewer rows). What does not compile
yet is refused by name."""

import re

import numpy as np
import pytest
import torch

import flow
from conftest import require
from flow.torch_import import import_torch


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


class Block(torch.nn.Module):
    """An attention block whose views and head split read the batch and
    sequence sizes (torch.export's sym_size nodes)."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        split = lambda t: t.view(b, s, self.heads, d // self.heads) \
            .transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(
            split(q), split(k), split(v))
        a = a.transpose(1, 2).reshape(b, s, d)
        return self.norm(x + self.out(a))


def _dims(text):
    return re.search(r"flow\.dims = \[(.*?)\]\}?", text).group(1)


def test_a_dynamic_batch_imports_as_a_symbol():
    text = import_torch(Mlp(), (torch.randn(4, 16),),
                        dynamic={"x": {0: ("batch", 1, 8)}})
    assert '#flow.dim<"batch", 1, 8>' in _dims(text)
    assert "tensor<?x16xf32, #flow.shape<[batch, 16]>>" in text
    assert "-> tensor<?x8xf32, #flow.shape<[batch, 8]>>" in text
    # The shape rules check the program (flow-compile --compile-to=input).
    checked = flow.compile_ir(text, "input")
    assert "#flow.shape<[batch, 32]>" in checked


def test_views_of_symbolic_sizes_give_extents():
    text = import_torch(Block(), (torch.randn(2, 6, 32),),
                        dynamic={"x": {0: ("batch", 1, 8),
                                       1: ("seq", 1, 128)}})
    dims = _dims(text)
    assert '#flow.dim<"batch", 1, 8>' in dims
    assert '#flow.dim<"seq", 1, 128>' in dims
    # The head split [batch, seq, 4, 8] and its transpose, the attention
    # over [batch, 4, seq, 8], and the merge back.
    assert "#flow.shape<[batch, seq, 4, 8]>" in text
    assert "#flow.shape<[batch, 4, seq, 8]>" in text
    assert "flow.attention" in text
    assert "flow.layer_norm" in text
    flow.compile_ir(text, "input")


def test_inputs_sharing_a_symbol_share_its_size():
    class Add(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    text = import_torch(Add(), (torch.randn(3, 4), torch.randn(3, 4)),
                        dynamic={"a": {0: ("n", 1, 16)},
                                 "b": {0: ("n", 1, 16)}})
    assert text.count("#flow.shape<[n, 4]>") >= 3
    assert _dims(text) == '#flow.dim<"n", 1, 16>'


def test_torchvision_resnet18_with_a_dynamic_batch_imports():
    torchvision = require("torchvision")
    model = torchvision.models.resnet18(num_classes=10)
    text = import_torch(model, (torch.randn(2, 3, 32, 32),),
                        dynamic={"x": {0: ("batch", 1, 8)}})
    assert "tensor<?x3x32x32xf32, #flow.shape<[batch, 3, 32, 32]>>" in text
    assert "-> tensor<?x10xf32, #flow.shape<[batch, 10]>>" in text
    flow.compile_ir(text, "input")


class Rows(torch.nn.Module):
    """Per-row work of every kind a kernel splits by rows (GEMMs, a norm, a
    softmax, element-wise ops with broadcast weights) over [batch, 5, 16]."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.norm(self.fc1(x)))
        return torch.log_softmax(self.fc2(h) * 0.5, dim=-1), h.sum(-1)


@pytest.mark.parametrize("model, shape", [(Mlp(), (16,)), (Rows(), (5, 16))])
def test_a_dynamic_batch_compiles_once_and_runs_at_every_size(model, shape):
    torch.manual_seed(0)
    model = model.eval()
    compiled = flow.compile(model, (torch.randn(3, *shape),),
                            dynamic={"x": {0: ("batch", 1, 16)}}, cache=False)
    inputs, outputs = compiled.signature()
    assert inputs == [("f32", ("batch",) + shape)]
    assert all(out[1][0] == "batch" for out in outputs)
    for batch in (1, 2, 7, 16, 3):
        x = torch.randn(batch, *shape)
        with torch.no_grad():
            want = model(x)
        got = compiled(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert g.shape == w.shape
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_a_call_outside_the_bounds_names_input_dimension_symbol_and_size():
    compiled = flow.compile(Mlp(), (torch.randn(4, 16),),
                            dynamic={"x": {0: ("batch", 2, 8)}}, cache=False)
    for batch in (1, 9):
        with pytest.raises(flow.FlowError, match=re.escape(
                f"input 0 dimension 0 is size symbol 'batch', which takes "
                f"sizes in [2, 8]: got {batch} (input shape [{batch},16]) "
                f"(input 0 is the model's 'x')")):
            compiled(torch.randn(batch, 16))
    with pytest.raises(flow.FlowError,
                       match=re.escape("input 0: expected f32[batch,16], got "
                                       "shape [4,15] (input 0 is the model's "
                                       "'x')")):
        compiled(torch.randn(4, 15))


class TwoInputs(torch.nn.Module):
    def forward(self, x, y):
        return x * 2 + y


def test_two_inputs_declared_with_one_symbol_must_agree():
    compiled = flow.compile(
        TwoInputs(), (torch.randn(4, 3), torch.randn(4, 3)),
        dynamic={"x": {0: ("batch", 1, 8)}, "y": {0: ("batch", 1, 8)}},
        cache=False)
    x, y = torch.randn(5, 3), torch.randn(5, 3)
    torch.testing.assert_close(compiled(x, y), x * 2 + y)
    with pytest.raises(flow.FlowError, match=re.escape(
            "input 1 dimension 0 is size symbol 'batch', which input 0 "
            "dimension 0 gave as 5: got 6 (input shape [6,3]) (input 1 is "
            "the model's 'y')")):
        compiled(x, torch.randn(6, 3))


def test_resnet18_and_attention_with_a_dynamic_batch_match_eager():
    """Library convolutions and fused attention count the batch per call;
    pools, norms and residual adds split it over workgroups."""
    torchvision = require("torchvision")
    torch.manual_seed(0)
    cases = [(torchvision.models.resnet18(num_classes=10).eval(),
              (3, 32, 32), (1, 3, 8)),
             (Block().eval(), (6, 32), (1, 4, 2))]
    for model, shape, batches in cases:
        compiled = flow.compile(model, (torch.randn(2, *shape),),
                                dynamic={"x": {0: ("batch", 1, 8)}},
                                cache=False)
        for batch in batches:
            x = torch.randn(batch, *shape)
            with torch.no_grad():
                want = model(x)
            torch.testing.assert_close(compiled(x), want, rtol=1e-4,
                                       atol=1e-4)


def test_what_does_not_compile_yet_is_refused_by_name():
    # A symbolic dimension that is not the rows: the sequence of a batch
    # of one.
    with pytest.raises(flow.FlowError, match=r"dimension 1 \(seq\) is "
                       r"symbolic and is not the row dimension"):
        flow.compile(Block(), (torch.randn(2, 6, 32),),
                     dynamic={"x": {0: ("batch", 1, 4), 1: ("seq", 1, 8)}},
                     cache=False)
    # PyTorch's multi-head attention moves the batch inward.
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True,
                                             dropout=0.0).eval()
    with pytest.raises(flow.FlowError, match=r"dimension 1 \(batch\) is "
                       r"symbolic and is not the row dimension"):
        flow.compile(layer, (torch.randn(2, 5, 32),),
                     dynamic={"src": {0: ("batch", 1, 4)}}, cache=False)
    with pytest.raises(flow.FlowError, match=r"compiling them on a mesh is "
                       r"not supported yet"):
        flow.compile(Mlp(), (torch.randn(4, 16),), mesh=2,
                     dynamic={"x": {0: ("batch", 1, 8)}}, cache=False)


@pytest.mark.parametrize("dynamic, message", [
    ([("x", 0)], r"dynamic= is a dict"),
    ({"x": [0]}, r"dynamic\['x'\] is a dict"),
    ({"x": {0: "batch"}}, r"is \(symbol, min, max\)"),
    ({"x": {0: ("2batch", 1, 8)}}, r"is not a name"),
    ({"x": {0: ("batch", 8, 2)}}, r"needs bounds 1 <= min <= max, got \[8, 2\]"),
    ({"y": {0: ("batch", 1, 8)}}, r"names input\(s\) \['y'\] the model does "
                                  r"not take; its inputs are \['x'\]"),
    ({"x": {2: ("batch", 1, 8)}}, r"names dimension 2, which input 'x' of "
                                  r"rank 2 does not have"),
])
def test_bad_dynamic_specs_are_refused_by_name(dynamic, message):
    with pytest.raises(flow.FlowError, match=message):
        flow.compile(Mlp(), (torch.randn(4, 16),), dynamic=dynamic,
                     cache=False)


def test_one_symbol_with_two_bounds_is_refused():
    with pytest.raises(flow.FlowError, match=r"size symbol 'n' has two "
                                             r"bounds"):
        flow.compile(Mlp(), (torch.randn(4, 16),),
                     dynamic={"x": {0: ("n", 1, 8), 1: ("n", 1, 4)}},
                     cache=False)


def test_an_op_without_symbolic_import_is_named():
    """A slice whose end is the symbolic size: its import takes numbers
    only, so the op is refused by name instead of failing in Python."""
    class Prefix(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.arange(64.0))

        def forward(self, x):
            return x + self.table[: x.shape[0]]

    with pytest.raises(Exception) as info:
        import_torch(Prefix(), (torch.randn(5),),
                     dynamic={"x": {0: ("n", 1, 64)}})
    assert "aten.slice.Tensor" in str(info.value)
    assert "symbolic" in str(info.value)


# ONNX: the model's own dim_param names become size symbols; dynamic=
# gives their bounds.

def _onnx_mlp(batch="batch"):
    import numpy as np
    onnx = require("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((16, 8))
                                       .astype(np.float32), "W"),
               numpy_helper.from_array(rng.standard_normal(8)
                                       .astype(np.float32), "B")]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["m"]),
         helper.make_node("Add", ["m", "B"], ["a"]),
         helper.make_node("Relu", ["a"], ["Y"])], "mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [batch, 8])],
        weights)
    return helper.make_model(graph,
                             opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_an_onnx_dim_param_becomes_a_symbol():
    from flow.onnx_import import import_onnx
    text = import_onnx(_onnx_mlp(), dynamic={"batch": (1, 8)})
    assert _dims(text) == '#flow.dim<"batch", 1, 8>'
    assert "tensor<?x16xf32, #flow.shape<[batch, 16]>>" in text
    assert "-> tensor<?x8xf32, #flow.shape<[batch, 8]>>" in text
    flow.compile_ir(text, "input")
    compiled = flow.compile(_onnx_mlp(), dynamic={"batch": (1, 8)},
                            cache=False)
    ort = require("onnxruntime")
    session = ort.InferenceSession(_onnx_mlp().SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for batch in (1, 5, 8):
        x = np.random.default_rng(batch).standard_normal(
            (batch, 16)).astype(np.float32)
        got = compiled(x)
        want = session.run(None, {"X": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(flow.FlowError, match=r"input 0 dimension 0 is size "
                       r"symbol 'batch', which takes sizes in \[1, 8\]: got 9 "
                       r"\(input shape \[9,16\]\) \(input 0 is the model's "
                       r"'X'\)"):
        compiled(np.zeros((9, 16), np.float32))


@pytest.mark.parametrize("dynamic, message", [
    ({}, r"ONNX input 'X' has the symbolic dimension 'batch': pass "
         r"input_shapes=\{'X': \(\.\.\.\)\}, or keep it symbolic with its "
         r"bounds in dynamic=\{'batch': \(min, max\)\}"),
    ({"batch": (1, 8), "seq": (1, 4)}, r"dynamic= names \['seq'\], which no "
                                       r"input of the model has"),
    ({"batch": (0, 4)}, r"dynamic\['batch'\] is \(min, max\) with "
                        r"1 <= min <= max, got \(0, 4\)"),
    ({"batch size": (1, 4)}, r"cannot name a size symbol"),
])
def test_onnx_symbol_bounds_are_checked(dynamic, message):
    with pytest.raises(flow.FlowError, match=message):
        flow.compile(_onnx_mlp(), dynamic=dynamic, cache=False)


def test_an_onnx_shape_computation_on_a_symbol_is_refused_by_name():
    """Exporters compute shapes with Shape -> Gather -> Concat -> Reshape;
    over a symbolic dimension that chain is not folded yet."""
    import numpy as np
    onnx = require("onnx")
    from onnx import TensorProto, helper, numpy_helper
    from flow.onnx_import import import_onnx
    consts = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("i0", 0), ("axes", [0]), ("minus1", [-1]))]
    graph = helper.make_graph(
        [helper.make_node("Shape", ["X"], ["s"]),
         helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
         helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
         helper.make_node("Concat", ["b1", "minus1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["X", "shape"], ["Y"])], "flatten",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                       ["batch", 4, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                       ["batch", 16])], consts)
    model = helper.make_model(graph,
                              opset_imports=[onnx.helper.make_opsetid("", 17)])
    with pytest.raises(Exception) as info:
        import_onnx(model, dynamic={"batch": (1, 8)})
    assert "Shape (node 's')" in str(info.value)
    assert "symbolic" in str(info.value)


def test_an_exported_program_with_bounded_dims_keeps_torchs_names():
    """torch.export's own dynamic_shapes: the symbols keep torch's names
    (s0, s77, ...) and their bounds."""
    batch = torch.export.Dim("batch", min=1, max=16)
    ep = torch.export.export(Mlp(), (torch.randn(4, 16),),
                             dynamic_shapes=({0: batch},))
    text = import_torch(ep)
    name = re.search(r'#flow.dim<"(\w+)", 1, 16>', text).group(1)
    assert f"tensor<?x16xf32, #flow.shape<[{name}, 16]>>" in text
    flow.compile_ir(text, "input")
