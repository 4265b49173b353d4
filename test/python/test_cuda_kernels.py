"""The kernels the CUDA target emits, checked without a GPU: row reductions
whose temporaries come near a block's 48 KiB of shared memory are accepted
by the toolkit's ptxas (flow-compile assembles the cubin and fails where
ptxas refuses it), counting the buffers gpu.all_reduce adds when lowered."""

import re
import subprocess
from pathlib import Path

import pytest

from conftest import build_dir

CUDA = Path("/usr/local/cuda")


def toolkit():
    ptxas = CUDA / "bin" / "ptxas"
    libdevice = CUDA / "nvvm" / "libdevice" / "libdevice.10.bc"
    if not ptxas.exists() or not libdevice.exists():
        pytest.skip("no CUDA toolkit (ptxas and libdevice) in /usr/local/cuda")
    return ptxas


def row_ops(kind, dtype, n):
    """One function per kind: a row reduction over rows of `n` elements."""
    t = f"tensor<2x{n}x{dtype}>"
    w = f"tensor<{n}x{dtype}>"
    if kind == "softmax":
        body = f"%y = flow.softmax %x axis = 1 : {t}"
    elif kind == "log_softmax":
        body = f"%y = flow.log_softmax %x axis = 1 : {t}"
    elif kind == "layer_norm":
        body = (f"%y = flow.layer_norm %x weight %w bias %w axis = 1 "
                f"epsilon = 1.0e-5 : ({t}, {w}, {w}) -> {t}")
    elif kind == "rms_norm":
        body = (f"%y = flow.rms_norm %x weight %w axis = 1 epsilon = 1.0e-6 "
                f": ({t}, {w}) -> {t}")
    elif kind == "prologue_softmax":
        # A fused prologue: the row's exp(x) * x is a temporary too.
        body = (f"%e = flow.exp %x : {t}\n"
                f"  %m = flow.mul %e, %x : ({t}, {t}) -> {t}\n"
                f"  %y = flow.softmax %m axis = 1 : {t}")
    else:
        raise ValueError(kind)
    return (f"func.func @{kind}_{n}(%x: {t}, %w: {w}) -> {t} {{\n"
            f"  {body}\n  return %y : {t}\n}}\n")


KINDS = ["softmax", "log_softmax", "layer_norm", "rms_norm",
         "prologue_softmax"]


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("kind", KINDS)
def test_rows_near_the_shared_memory_limit_assemble(kind, dtype, tmp_path):
    """Rows whose temporaries take just under, at and just over 48 KiB:
    every kernel assembles for sm_80 and sm_90, and no kernel declares more
    static shared memory than a block has without opting in."""
    toolkit()
    per = 4 if dtype == "f32" else 2
    limit = 48 * 1024 // per
    # Temporaries of one and of two rows' worth around the limit.
    lengths = sorted({limit - 64, limit - 8, limit, limit + 40,
                      limit // 2 - 8, limit // 2, limit // 2 + 24})
    source = tmp_path / "rows.mlir"
    source.write_text("".join(row_ops(kind, dtype, n) for n in lengths))
    compiler = str(build_dir() / "bin" / "flow-compile")
    for arch in ("sm_80", "sm_90"):
        ptx = tmp_path / f"rows-{arch}.ptx"
        subprocess.run([compiler, str(source), "--target=cuda",
                        f"--gpu-arch={arch}", "--compile-to=ptx", "-o",
                        str(ptx)], check=True, capture_output=True)
        check_shared(ptx.read_text())
        done = subprocess.run([compiler, str(source), "--target=cuda",
                               f"--gpu-arch={arch}", "-o",
                               str(tmp_path / f"rows-{arch}.fbin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def check_shared(ptx):
    """Each entry's static shared memory (declared in its body, or at
    module level and named in its body) is at most 48 KiB."""
    sizes = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2,
             "f16": 2, "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8,
             "u64": 8, "s64": 8, "f64": 8}
    decl = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+"
                      r"([\w$]+)\[(\d+)\]", re.M)

    def declared(text):
        return {name: sizes[t] * int(n) for t, name, n in decl.findall(text)}

    first = ptx.find(".entry")
    assert first >= 0, "no kernel entry in the PTX"
    module_level = declared(ptx[:first])
    entries = re.split(r"(?=\.visible \.entry|\.entry )", ptx[first:])
    checked = 0
    for body in entries:
        name = re.search(r"\.entry\s+([\w$]+)", body)
        if not name:
            continue
        total = sum(declared(body).values()) + sum(
            b for n, b in module_level.items() if n in body)
        assert total <= 48 * 1024, (
            f"{name.group(1)} declares {total} bytes of static shared memory")
        checked += 1
    assert checked > 0


def test_check_shared_sees_too_much():
    """The checker itself: a module-level buffer named by an entry counts."""
    ptx = (".shared .align 16 .b8 big[49100];\n"
           ".shared .align 4 .b8 red[128];\n"
           ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
           "  st.shared.f32 [big], %f1;\n  st.shared.f32 [red], %f1;\n}\n")
    with pytest.raises(AssertionError, match="49228 bytes"):
        check_shared(ptx)


# ---------------------------------------------------------------------------
# Launch shapes: large buffers are never left to one block
# ---------------------------------------------------------------------------

def grid_one_on_large(gpu_ir, limit=65536):
    """(kernel, argument, elements) for each launch of one block (grid 1)
    that touches a buffer of more than `limit` elements: such a launch
    leaves all but one SM of a GPU idle."""
    bad = []
    kernels = re.finditer(
        r"gpu\.func @(\w+)\((.*?)\)(?: workgroup\(.*?\))? kernel attributes "
        r"\{(.*?)\} \{\n(.*?)\n    \}", gpu_ir, re.S)
    for name, args, attrs, body in (k.groups() for k in kernels):
        grid = re.search(r"flow\.grid = array<i64: (\d+), (\d+), (\d+)>",
                         attrs)
        assert grid, f"{name} has no launch grid"
        if tuple(map(int, grid.groups())) != (1, 1, 1):
            continue
        for arg, shape in re.findall(r"(%arg\d+): memref<((?:\d+x)*)[a-z]",
                                     args):
            n = 1
            for d in filter(None, shape.split("x")):
                n *= int(d)
            if n > limit and re.search(re.escape(arg) + r"\b", body):
                bad.append((name, arg, n))
    return bad


def test_grid_check_sees_one_block_on_a_large_buffer():
    """The check itself, on the launch a whole-buffer sum had before its
    reduction was split."""
    ir = ("    gpu.func @k0(%arg0: memref<4096x768xf32>, %arg1: memref<f32>) "
          "kernel attributes {flow.grid = array<i64: 1, 1, 1>} {\n"
          "      %0 = memref.load %arg0[%c0, %c0] : memref<4096x768xf32>\n"
          "    }\n")
    assert grid_one_on_large(ir) == [("k0", "%arg0", 4096 * 768)]


def _training_step_text(model, loss, batch):
    """The flow-dialect text of one SGD step of `model` (what
    flow.compile_train compiles)."""
    import tempfile
    from flow import optim
    from flow.torch_import import import_program
    from flow.training import _loss_kind, _loss_module
    trainable = {f"model.{n}": n for n, p in model.named_parameters()
                 if p.requires_grad}
    with tempfile.TemporaryDirectory() as tmp:
        program = import_program(
            _loss_module(model, loss, _loss_kind(model, loss, batch)), batch,
            parameters=f"{tmp}/w.safetensors", function="train_step",
            training=(trainable,
                      optim._dictionary(optim.SGD(lr=0.01), None,
                                        skip_nonfinite=True,
                                        shard_state=False), ()))
        return program.text


def test_bert_training_step_fills_the_grid():
    """A BERT-base-shaped training step (2 layers, batch 8, sequence 128):
    its loss, bias gradients and embedding gradients reduce or scatter
    buffers of up to 786k elements; none runs as one block (the loss and
    the three embedding gradients did before their reductions were split
    and their sequential loops spread)."""
    from conftest import require
    torch = require("torch")
    transformers = require("transformers")
    import flow
    torch.manual_seed(0)
    config = transformers.BertConfig(
        num_hidden_layers=2, vocab_size=1000, max_position_embeddings=128,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

    class Bert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = transformers.BertModel(config,
                                               add_pooling_layer=False)

        def forward(self, ids):
            return self.bert(ids).last_hidden_state

    batch = (torch.randint(0, 1000, (8, 128)), torch.randn(8, 128, 768))
    text = _training_step_text(Bert().train(), torch.nn.MSELoss(), batch)
    gpu = flow.compile_ir(text, "gpu", target="cuda")
    assert gpu.count("gpu.func @") > 20
    assert grid_one_on_large(gpu) == []


def test_resnet50_fills_the_grid():
    """ResNet-50's inference kernels (batch 2): none runs a large buffer
    as one block."""
    from conftest import require
    torch = require("torch")
    torchvision = require("torchvision")
    import flow
    from flow.torch_import import import_torch
    import tempfile
    model = torchvision.models.resnet50().eval()
    with tempfile.TemporaryDirectory() as tmp:
        text = import_torch(model, (torch.randn(2, 3, 224, 224),),
                            parameters=f"{tmp}/w.safetensors")
        gpu = flow.compile_ir(text, "gpu", target="cuda")
    # Its convolutions are cuDNN's; pooling and the rest are kernels.
    assert gpu.count("gpu.func @") > 0
    assert grid_one_on_large(gpu) == []


# ---------------------------------------------------------------------------
# Split reductions, numerically (the CUDA target's kernels emulated)
# ---------------------------------------------------------------------------

SPLIT_CASES = [
    # op, shape, axes, dtype: a total, a bias gradient, few long rows,
    # rows whose length has few divisors, a mean, a 3-D total per batch,
    # an outermost reduction of a 3-D tensor, an integer total.
    ("reduce_sum", (4096, 768), [0, 1], "f32"),
    ("reduce_sum", (4096, 768), [0], "f32"),
    ("reduce_sum", (64, 8192), [1], "f32"),
    ("reduce_max", (3, 50000), [1], "f32"),
    ("reduce_mean", (2048, 96), [0], "f32"),
    ("reduce_sum", (8, 16, 4096), [1, 2], "f32"),
    ("reduce_sum", (512, 4, 33), [0], "f32"),
    ("reduce_sum", (100000,), [0], "i32"),
]


@pytest.mark.parametrize("op,shape,axes,dtype", SPLIT_CASES)
def test_split_reductions_match_numpy(op, shape, axes, dtype):
    """Each reduction compiled for CUDA with its kernels emulated on the CPU
    (the split's stages run as the GPU would run them) against numpy in
    f64; the launch that reads the input uses more than one block."""
    import numpy as np
    import flow
    rng = np.random.default_rng(5)
    kept = [d for i, d in enumerate(shape) if i not in axes]
    t = "x".join(map(str, shape)) + "x" + dtype
    o = "".join(f"{d}x" for d in kept) + dtype
    text = (f"func.func @main(%x: tensor<{t}>) -> tensor<{o}> {{\n"
            f"  %s = flow.{op} %x {axes} : tensor<{t}> -> tensor<{o}>\n"
            f"  return %s : tensor<{o}>\n}}")
    if dtype == "f32":
        x = rng.standard_normal(shape).astype(np.float32)
    else:
        x = rng.integers(-100, 100, size=shape).astype(np.int32)
    module = flow.compile_mlir(text, target="cuda-emulated")
    got = module(x)
    got = np.asarray(got[0] if isinstance(got, (list, tuple)) else got)
    reduce = {"reduce_sum": np.sum, "reduce_max": np.max,
              "reduce_mean": np.mean}[op]
    want = reduce(x.astype(np.float64) if dtype == "f32" else x,
                  axis=tuple(axes))
    if dtype == "i32":
        np.testing.assert_array_equal(got, want)
    else:
        # f32 sums of n terms of magnitude <= 5 in any order: within
        # n * 2^-24 * 5 of the exact sum (the mean divided by its n).
        n = int(np.prod([shape[a] for a in axes]))
        bound = n * 2.0 ** -24 * 5 / (n if op == "reduce_mean" else 1)
        np.testing.assert_allclose(got, want, rtol=0, atol=bound)
    gpu = flow.compile_ir(text, "gpu", target="cuda")
    assert grid_one_on_large(gpu, limit=65536) == []
