"""The models and GEMMs the GPU check runs (torch only: this file is read both
where the kit is compiled and on the GPU machine, which has no Flow compiler).

Each case builds its module and inputs from names alone (deterministic_init,
uniform), so both machines hold the same weights and inputs whatever their
PyTorch and NumPy versions: the kit stores Flow's executable and its
compressed parameter archive, the GPU machine rebuilds the module to compute
PyTorch's answer and time PyTorch, and checks the digests agree.
"""

import dataclasses
import hashlib
import importlib
import math
import zlib
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch


@dataclasses.dataclass
class Case:
    name: str
    #: Builds (module, example inputs) from the seed, in float32.
    build: Callable[[], Tuple[torch.nn.Module, Tuple[torch.Tensor, ...]]]
    #: "f32", "bf16" (Flow's --precision=bf16: bf16 operands of matrix
    #: products and convolutions, f32 sums; PyTorch runs the module in
    #: bf16 autocast) or "f16" (the module and its inputs in float16).
    precision: str
    #: |flow - torch| <= atol + rtol * |torch|, element-wise.
    atol: float
    rtol: float
    #: Benchmarked against eager and torch.compile (else numerics only).
    bench: bool = False
    #: A small case the CPU dry run (emulated kernels) also runs.
    small: bool = False
    #: Cases with the same model and element type share a parameter
    #: archive.
    model: str = ""
    #: Python packages the module needs beyond torch: without one, the
    #: case is reported as skipped (with why) and the others still run.
    needs: Tuple[str, ...] = ()
    #: Run by `check.py --quick` (a few minutes on one GPU).
    quick: bool = False
    #: More flow-compile flags (a compile option measured against the
    #: same model without it).
    flags: Tuple[str, ...] = ()


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 128), torch.nn.GELU(),
            torch.nn.Linear(128, 10), torch.nn.LogSoftmax(dim=-1))

    def forward(self, x):
        return self.net(x)


class _Bert(torch.nn.Module):
    """BERT-base's encoder (random weights), returning the last hidden
    state."""

    def __init__(self, layers=12):
        super().__init__()
        import transformers
        config = transformers.BertConfig(num_hidden_layers=layers,
                                         attn_implementation="sdpa")
        self.bert = transformers.BertModel(config, add_pooling_layer=False)
        self.vocab = config.vocab_size

    def forward(self, ids):
        return self.bert(ids).last_hidden_state


def _raw(seed: str, words: int) -> np.ndarray:
    """`words` 64-bit words from PCG64 seeded by `seed`'s CRC: the raw bit
    stream, which NumPy keeps the same across versions (its distributions
    may change)."""
    generator = np.random.PCG64(zlib.crc32(seed.encode()))
    return generator.random_raw(words).astype(np.uint64)


def signs(seed: str, count: int) -> np.ndarray:
    """`count` values of +1 or -1 (float32) from `seed`."""
    bits = np.unpackbits(_raw(seed, (count + 63) // 64).view(np.uint8))
    return (bits[:count].astype(np.float32) * 2 - 1)


def uniform(seed: str, shape) -> np.ndarray:
    """Floats in [-1, 1) from `seed` (24 bits each)."""
    count = int(np.prod(shape))
    raw = _raw(seed, count) >> np.uint64(40)
    return (raw.astype(np.float64) / 2**23 - 1).astype(np.float32).reshape(
        shape)


def integers(seed: str, high: int, shape) -> np.ndarray:
    count = int(np.prod(shape))
    return (_raw(seed, count) % np.uint64(high)).astype(np.int64).reshape(
        shape)


def deterministic_init(module: torch.nn.Module) -> torch.nn.Module:
    """Sets every floating-point parameter and buffer from its name alone,
    the same on every machine and PyTorch version: norms' weights 1 and
    statistics (0, 1); other matrices +-1/sqrt(fan_in); vectors +-0.02.
    Two values per tensor keep the parameter archive compressible (a bit
    per weight), so the kit carries BERT-base's weights in ~14 MB."""
    norms = (torch.nn.LayerNorm, torch.nn.modules.batchnorm._BatchNorm)
    with torch.no_grad():
        for prefix, sub in module.named_modules():
            for name, tensor in list(sub.named_parameters(recurse=False)) + \
                    list(sub.named_buffers(recurse=False)):
                if not tensor.is_floating_point():
                    continue
                full = f"{prefix}.{name}" if prefix else name
                if isinstance(sub, norms) and name in ("weight",
                                                       "running_var"):
                    tensor.fill_(1.0)
                elif isinstance(sub, norms) and name == "running_mean":
                    tensor.zero_()
                else:
                    scale = (1 / math.sqrt(tensor[0].numel())
                             if tensor.dim() >= 2 else 0.02)
                    values = signs(full, tensor.numel()) * scale
                    tensor.copy_(torch.from_numpy(values).reshape(
                        tensor.shape))
    return module


def digest(tensors) -> str:
    """SHA-256 of tensors' bytes (to check both machines built the same)."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _seeded(fn):
    def build():
        module, inputs = fn()
        return deterministic_init(module), inputs
    return build


def _mlp():
    return _Mlp().eval(), (torch.from_numpy(uniform("mlp.x", (32, 784))),)


def _bert(batch, layers=12):
    def build():
        model = _Bert(layers).eval()
        ids = integers(f"bert.ids.{batch}", model.vocab, (batch, 128))
        return model, (torch.from_numpy(ids),)
    return build


def _resnet50(batch):
    def build():
        import torchvision
        x = uniform(f"resnet50.x.{batch}", (batch, 3, 224, 224))
        return torchvision.models.resnet50().eval(), (torch.from_numpy(x),)
    return build


def _tiny_cnn():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(32, 10)).eval()
    return model, (torch.from_numpy(uniform("cnn.x", (2, 3, 32, 32))),)


# f32 products on the GPU are f32 (no TF32 on either side); bf16 operands
# carry 8 bits of mantissa, so outputs of a deep model move by ~1e-2
# relative; BERT's last hidden state is layer-normed (values ~1).
CASES: List[Case] = [
    Case("mlp-f32", _seeded(_mlp), "f32", 1e-4, 1e-4, small=True, model="mlp",
         quick=True),
    Case("cnn-f32", _seeded(_tiny_cnn), "f32", 1e-4, 1e-4, small=True,
         model="cnn", quick=True),
    Case("bert2-f32", _seeded(_bert(2, layers=2)), "f32", 1e-3, 1e-3,
         small=True, model="bert2", needs=("transformers",)),
    Case("bert-b1-f32", _seeded(_bert(1)), "f32", 2e-3, 2e-3, bench=True,
         model="bert", needs=("transformers",), quick=True),
    Case("bert-b1-bf16", _seeded(_bert(1)), "bf16", 0.1, 0.05, bench=True,
         model="bert", needs=("transformers",)),
    Case("bert-b32-bf16", _seeded(_bert(32)), "bf16", 0.1, 0.05,
         bench=True, model="bert", needs=("transformers",)),
    Case("bert-b1-f16", _seeded(_bert(1)), "f16", 0.05, 0.02, bench=True,
         model="bert", needs=("transformers",), quick=True),
    Case("bert-b32-f16", _seeded(_bert(32)), "f16", 0.05, 0.02, bench=True,
         model="bert", needs=("transformers",)),
    # q, k and v as one GEMM (opt-in: no faster on the CPU; this row says
    # whether it pays on a GPU, against bert-b1-f16).
    Case("bert-b1-f16-joined", _seeded(_bert(1)), "f16", 0.05, 0.02,
         bench=True, model="bert", needs=("transformers",),
         flags=("--sibling-matmuls=true",)),
    Case("resnet50-b1-f32", _seeded(_resnet50(1)), "f32", 1e-2, 1e-3,
         bench=True, model="resnet50", needs=("torchvision",), quick=True),
    Case("resnet50-b1-bf16", _seeded(_resnet50(1)), "bf16", 0.5, 0.05,
         bench=True, model="resnet50", needs=("torchvision",)),
    Case("resnet50-b32-bf16", _seeded(_resnet50(32)), "bf16", 0.5, 0.05,
         bench=True, model="resnet50", needs=("torchvision",)),
    Case("resnet50-b1-f16", _seeded(_resnet50(1)), "f16", 0.5, 0.05,
         bench=True, model="resnet50", needs=("torchvision",), quick=True),
    Case("resnet50-b32-f16", _seeded(_resnet50(32)), "f16", 0.5, 0.05,
         bench=True, model="resnet50", needs=("torchvision",)),
]

#: GEMMs n x n x n timed against cuBLAS through torch.matmul, by name:
#: (operand and result type, n, TF32 multiplies allowed on both sides).
GEMMS: Dict[str, Tuple[str, int, bool]] = {
    "gemm-f32-4096": ("f32", 4096, False),
    "gemm-tf32-4096": ("f32", 4096, True),
    "gemm-f16-4096": ("f16", 4096, False),
    "gemm-bf16-4096": ("bf16", 4096, False),
}
#: The GEMMs `check.py --quick` runs (and the small ones).
QUICK_GEMMS = ("gemm-f16-4096", "gemm-bf16-4096")
#: Small GEMMs for the CPU dry run (`prepare.py --small`).
SMALL_GEMMS: Dict[str, Tuple[str, int, bool]] = {
    "gemm-f32-256": ("f32", 256, False),
    "gemm-bf16-256": ("bf16", 256, False),
}


def gemm_tolerance(dtype: str, tf32: bool) -> Tuple[float, float]:
    """(atol, rtol) of a GEMM's result against torch.matmul's of uniform
    [-1, 1) operands (sums of n products, |C| ~ sqrt(n) / 3): both sum in
    f32 and round once to the result type, so they differ by the order of
    the sums and a unit in the last place or two of f16 (11 bits) and bf16
    (8 bits); TF32 rounds the operands to 11 bits first. A wrong layout or
    a missed block is off by the size of the values."""
    if dtype == "bf16":
        return 0.5, 2 ** -6
    if dtype == "f16":
        return 0.06, 2 ** -9
    return (0.1, 2 ** -9) if tf32 else (2e-3, 1e-4)


def by_name() -> Dict[str, Case]:
    return {case.name: case for case in CASES}


def unavailable(packages) -> str:
    """Why one of `packages` cannot be imported ("" when all can)."""
    for name in packages:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 (a broken install counts too)
            return f"{name} is not importable: {type(e).__name__}: {e}"
    return ""


def half(module, inputs, precision):
    """The module and inputs as a case's precision runs them in PyTorch
    (f16: converted; bf16 and f32: as built)."""
    if precision != "f16":
        return module, inputs
    return module.half(), tuple(
        t.half() if t.is_floating_point() else t for t in inputs)


#: Mesh sizes of the collectives case (run where the machine has that many
#: GPUs and an MPI launcher; the CPU dry run runs 2 processes on the CPU).
MESHES: List[int] = [2, 4, 8]


def collectives_mlir(n: int) -> str:
    """A Megatron MLP on a mesh of `n` whose outputs need every collective:
    W1 split by columns and W2 by rows make the second product a partial
    sum; `y` is all-reduced, `ys` reduce-scattered over rows, the hidden
    layer all-gathered (`h`) and moved from a column split to a row split
    (`hs`, an all-to-all). Rows and columns are not multiples of n (uneven
    pieces)."""
    sbp = lambda s: f"#flow.sbp<[{s}]>"
    return f"""flow.mesh @mesh [{n}]
func.func @forward(%x: tensor<10x24xf32>, %w1: tensor<24x37xf32> {{flow.sbp = {sbp("S(1)")}}},
                   %w2: tensor<37x24xf32> {{flow.sbp = {sbp("S(0)")}}})
    -> (tensor<10x24xf32>, tensor<10x24xf32>, tensor<10x37xf32>, tensor<10x37xf32>)
    attributes {{flow.mesh = @mesh}} {{
  %a = flow.annotate %w1 as {sbp("S(1)")} on @mesh : tensor<24x37xf32>
  %b = flow.annotate %w2 as {sbp("S(0)")} on @mesh : tensor<37x24xf32>
  %h0 = flow.matmul %x, %a : (tensor<10x24xf32>, tensor<24x37xf32>) -> tensor<10x37xf32>
  %h = flow.relu %h0 : tensor<10x37xf32>
  %hc = flow.annotate %h as {sbp("S(1)")} on @mesh : tensor<10x37xf32>
  %p = flow.matmul %hc, %b : (tensor<10x37xf32>, tensor<37x24xf32>) -> tensor<10x24xf32>
  %y = flow.annotate %p as {sbp("B")} on @mesh : tensor<10x24xf32>
  %ys0 = flow.annotate %p as {sbp("S(0)")} on @mesh : tensor<10x24xf32>
  %ys = flow.exp %ys0 : tensor<10x24xf32>
  %hb = flow.annotate %hc as {sbp("B")} on @mesh : tensor<10x37xf32>
  %hg = flow.neg %hb : tensor<10x37xf32>
  %hs0 = flow.annotate %hc as {sbp("S(0)")} on @mesh : tensor<10x37xf32>
  %hs = flow.abs %hs0 : tensor<10x37xf32>
  return %y, %ys, %hg, %hs : tensor<10x24xf32>, tensor<10x24xf32>, tensor<10x37xf32>, tensor<10x37xf32>
}}
"""


def collectives_reference(x, w1, w2):
    h = np.maximum(x @ w1, 0)
    y = h @ w2
    return [y, np.exp(y), -h, np.abs(h)]


# ---------------------------------------------------------------------------
# A training step: the state resident on the device between steps
# ---------------------------------------------------------------------------

#: The training case: an MLP (256 -> 512 -> tanh -> 10) with a softmax
#: cross-entropy loss and AdamW (weight decay, clipping at norm 1), run for
#: TRAIN_STEPS steps by `flow-run --steps` with a learning rate per step.
TRAIN_BATCH, TRAIN_IN, TRAIN_HIDDEN, TRAIN_CLASSES = 64, 256, 512, 10
TRAIN_STEPS = 10
#: eps is 1e-3, not AdamW's 1e-8: an update is lr * m / (sqrt(v) + eps), so
#: with eps = 1e-8 a gradient that sums to ~1e-9 (a few cancel out in a
#: layer this size) moves its weight by up to lr in either direction
#: depending on the order of the sums, and no tolerance tells a wrong
#: kernel from a reordered sum; with 1e-3 an error of the gradient moves
#: a weight by lr / eps times that error at most.
TRAIN_NAMES = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
TRAIN_ADAMW = dict(lr=0.01, betas=(0.9, 0.999), eps=1e-3, weight_decay=0.05)
TRAIN_MAX_NORM = 1.0


def training_mlir() -> str:
    b, i, h, c = TRAIN_BATCH, TRAIN_IN, TRAIN_HIDDEN, TRAIN_CLASSES
    o = TRAIN_ADAMW
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + "xf32>"
    return f"""func.func @step(%x: {t(b, i)},
    %w1: {t(i, h)} {{flow.requires_grad, flow.state = "fc1.weight"}},
    %b1: {t(h)} {{flow.requires_grad, flow.state = "fc1.bias"}},
    %w2: {t(h, c)} {{flow.requires_grad, flow.state = "fc2.weight"}},
    %b2: {t(c)} {{flow.requires_grad, flow.state = "fc2.bias"}},
    %t: {t(b, c)}) -> tensor<f32>
    attributes {{flow.optimizer = {{kind = "adamw", beta1 = {o["betas"][0]},
      beta2 = {o["betas"][1]}, eps = {o["eps"]:.1e}, weight_decay = {o["weight_decay"]},
      max_grad_norm = {TRAIN_MAX_NORM}}}}} {{
  %h0 = flow.matmul %x, %w1 : ({t(b, i)}, {t(i, h)}) -> {t(b, h)}
  %h1 = flow.add %h0, %b1 : ({t(b, h)}, {t(h)}) -> {t(b, h)}
  %h = flow.tanh %h1 : {t(b, h)}
  %z0 = flow.matmul %h, %w2 : ({t(b, h)}, {t(h, c)}) -> {t(b, c)}
  %z = flow.add %z0, %b2 : ({t(b, c)}, {t(c)}) -> {t(b, c)}
  %lp = flow.log_softmax %z axis = 1 : {t(b, c)}
  %p = flow.mul %lp, %t : ({t(b, c)}, {t(b, c)}) -> {t(b, c)}
  %s = flow.reduce_sum %p [0, 1] : {t(b, c)} -> tensor<f32>
  %n = flow.constant dense<{-1.0 / b}> : tensor<f32>
  %l = flow.mul %s, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}}
"""


def training_problem():
    """The first parameters (as the step's state names them), the batches
    (x, one-hot targets) and the learning rate of every step."""
    i, h, c = TRAIN_IN, TRAIN_HIDDEN, TRAIN_CLASSES
    params = {"fc1.weight": uniform("train.w1", (i, h)) / np.float32(16),
              "fc1.bias": uniform("train.b1", (h,)) / np.float32(16),
              "fc2.weight": uniform("train.w2", (h, c)) / np.float32(16),
              "fc2.bias": uniform("train.b2", (c,)) / np.float32(16)}
    batches = []
    for k in range(TRAIN_STEPS):
        x = uniform(f"train.x{k}", (TRAIN_BATCH, i))
        t = np.eye(c, dtype=np.float32)[integers(f"train.t{k}", c,
                                                 (TRAIN_BATCH,))]
        batches.append((x, t))
    lrs = [TRAIN_ADAMW["lr"] * 0.9 ** k for k in range(TRAIN_STEPS)]
    return params, batches, lrs


def training_reference(params, batches, lrs, device):
    """torch.optim.AdamW on `device` (no TF32): the losses and the final
    parameters."""
    p = {k: torch.tensor(v, device=device, requires_grad=True)
         for k, v in params.items()}
    opt = torch.optim.AdamW([p[k] for k in TRAIN_NAMES], **TRAIN_ADAMW)
    losses = []
    for (x, t), lr in zip(batches, lrs):
        for group in opt.param_groups:
            group["lr"] = lr
        x, t = torch.tensor(x, device=device), torch.tensor(t, device=device)
        h = torch.tanh(x @ p["fc1.weight"] + p["fc1.bias"])
        z = h @ p["fc2.weight"] + p["fc2.bias"]
        loss = -(torch.log_softmax(z, 1) * t).sum() / TRAIN_BATCH
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p[k] for k in TRAIN_NAMES],
                                       TRAIN_MAX_NORM)
        opt.step()
        losses.append(float(loss.detach()))
    return losses, {k: v.detach().cpu().numpy() for k, v in p.items()}
