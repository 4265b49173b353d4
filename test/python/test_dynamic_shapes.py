"""Dynamic dimensions from PyTorch: `dynamic=` names a dimension of an
input and bounds it; the importer writes every size torch.export computed
from it as an extent over the names, the flow dialect's shape rules check
the program, and flow.compile says plainly that compiling such a program
further is not supported yet."""

import re

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


def test_compiling_a_dynamic_program_says_it_is_not_supported_yet():
    with pytest.raises(flow.FlowError,
                       match=r"has dynamic dimensions \(batch\).*not "
                             r"supported yet"):
        flow.compile(Mlp(), (torch.randn(4, 16),),
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
