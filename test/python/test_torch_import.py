"""flow.import_torch and flow.compile on PyTorch models, checked against
torch eager.

Tolerances: f32 models are compared with rtol 1e-4 and an absolute floor
of 1e-5 times the output's largest magnitude. Flow and PyTorch sum in
different orders (blocked GEMMs, im2col convolutions) and Flow's exp, tanh
and erf are polynomials accurate to a few ulp, so a deep f32 network differs
from eager by 1e-6 relative; 1e-4 leaves room for that and still catches
any wrong op, layout or parameter.
"""

import math
import re

import numpy as np
import pytest

from conftest import require

torch = require("torch")
import flow  # noqa: E402
from flow import safetensors  # noqa: E402

RTOL = 1e-4


def assert_close(got, want, rtol=RTOL):
    got = got.detach().float().numpy() if isinstance(got, torch.Tensor) \
        else np.asarray(got, dtype=np.float32)
    want = want.detach().float().numpy()
    assert got.shape == want.shape
    atol = 1e-5 * max(float(np.abs(want).max()), 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check(module, args, kwargs=None, rtol=RTOL, **options):
    module.eval()
    compiled = flow.compile(module, args, kwargs, **options)
    with torch.no_grad():
        want = module(*args, **(kwargs or {}))
    got = compiled(*args, **(kwargs or {}))
    want_leaves, want_spec = torch.utils._pytree.tree_flatten(want)
    got_leaves, got_spec = torch.utils._pytree.tree_flatten(got)
    assert got_spec == want_spec
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(w, torch.Tensor):
            assert isinstance(g, torch.Tensor)
            assert g.dtype == w.dtype
            assert_close(g, w, rtol)
        else:
            assert g == w
    return compiled


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


# ---------------------------------------------------------------------------
# The models of the issue
# ---------------------------------------------------------------------------

def test_mlp():
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    check(mlp, (torch.randn(4, 64),))


def test_transformer_encoder_layer():
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    check(layer, (torch.randn(2, 16, 64),))


def test_transformer_encoder_layer_norm_first_gelu():
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True,
                                             norm_first=True,
                                             activation="gelu")
    check(layer, (torch.randn(1, 8, 32),))


@pytest.mark.parametrize("arch", ["resnet18", "resnet50"])
def test_torchvision_resnet(arch):
    torchvision = require("torchvision")
    model = getattr(torchvision.models, arch)(num_classes=10)
    # Non-trivial batch-norm statistics, as a trained model has.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    check(model, (torch.randn(2, 3, 32, 32),))


def _bert_config(transformers):
    return transformers.BertConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=64)


def test_hf_bert_returns_model_output():
    transformers = require("transformers")
    model = transformers.BertModel(_bert_config(transformers))
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 12:] = 0
    compiled = check(model, (ids,), {"attention_mask": mask})
    out = compiled(ids, attention_mask=mask)
    assert type(out).__name__ == "BaseModelOutputWithPoolingAndCrossAttentions"
    assert out.last_hidden_state.shape == (2, 16, 64)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_hf_gpt2(attention):
    transformers = require("transformers")
    config = transformers.GPT2Config(
        vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64,
        use_cache=False, attn_implementation=attention)
    model = transformers.GPT2LMHeadModel(config)
    check(model, (torch.randint(0, 100, (2, 16)),))


@pytest.mark.parametrize("family", ["Llama", "Qwen2"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_hf_decoder_causal_lm_with_left_padding(family, attention):
    """A decoder LLM's causal-LM head on a left-padded batch. Under
    attention="sdpa" the padded queries see no key at all: PyTorch's
    attention gives them zeros (aten._safe_softmax), a plain softmax NaN,
    which used to make every logit of that sequence non-finite."""
    transformers = require("transformers")
    config = getattr(transformers, f"{family}Config")(
        vocab_size=100, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        use_cache=False, attn_implementation=attention)
    model = transformers.AutoModelForCausalLM.from_config(config)
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, :5] = 0
    compiled = check(model, (ids,), {"attention_mask": mask})
    logits = compiled(ids, attention_mask=mask).logits
    assert torch.isfinite(logits).all()


def test_hf_roberta_positions_from_its_input_ids():
    """RoBERTa numbers positions with a running sum over the tokens that
    are not padding (torch.cumsum of the input), so they are computed at
    run time: a batch with padding at its end against eager."""
    transformers = require("transformers")
    config = transformers.RobertaConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=40, pad_token_id=1)
    model = transformers.RobertaModel(config)
    ids = torch.randint(2, 100, (2, 16))
    ids[1, 11:] = config.pad_token_id
    mask = (ids != config.pad_token_id).long()
    compiled = check(model, (ids,), {"attention_mask": mask})
    # Other padding at run time gives other positions.
    ids2 = torch.randint(2, 100, (2, 16))
    ids2[0, 5:] = config.pad_token_id
    mask2 = (ids2 != config.pad_token_id).long()
    with torch.no_grad():
        want = model(ids2, attention_mask=mask2).last_hidden_state
    got = compiled(ids2, attention_mask=mask2).last_hidden_state
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family", ["Llama", "GPT2"])
def test_hf_decoder_default_config_returns_its_cache(family):
    """A decoder with its default config (use_cache on) returns its keys
    and values in a cache object: the compiled model returns the same type,
    each layer's keys and values matching eager's."""
    transformers = require("transformers")
    if family == "GPT2":
        config = transformers.GPT2Config(vocab_size=100, n_embd=64, n_layer=2,
                                         n_head=4, n_positions=64)
    else:
        config = transformers.LlamaConfig(
            vocab_size=100, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    assert config.use_cache
    model = transformers.AutoModelForCausalLM.from_config(config)
    ids = torch.randint(0, 100, (1, 8))
    compiled = check(model, (ids,))
    with torch.no_grad():
        want = model(ids)
    got = compiled(ids)
    cache = got.past_key_values
    assert type(cache) is type(want.past_key_values)
    assert len(cache.layers) == config.num_hidden_layers
    for g, w in zip(cache.layers, want.past_key_values.layers):
        assert_close(g.keys, w.keys)
        assert_close(g.values, w.values)


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_with_queries_that_see_no_key(mask_kind):
    """Rows of the attention mask that hide every key give zeros, as
    PyTorch's attention does; a NaN in the input still comes out NaN."""
    q, k, v = (torch.randn(2, 3, 6, 8) for _ in range(3))
    keep = torch.rand(2, 1, 6, 6) > 0.4
    keep[0, 0, 2] = False          # query 2 of batch 0 sees nothing
    keep[1, 0, :, 0] = True        # others see at least one key
    if mask_kind == "bool":
        mask = keep
    else:
        mask = torch.zeros(2, 1, 6, 6).masked_fill(~keep, float("-inf"))

    def attend(q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=m)

    compiled = check(Lambda(attend), (q, k, v, mask))
    got = compiled(q, k, v, mask)
    assert torch.isfinite(got).all()
    assert (got[0, :, 2] == 0).all()
    q_nan = q.clone()
    q_nan[1, 0, 3, 0] = float("nan")
    got_nan = compiled(q_nan, k, v, mask)
    assert torch.isnan(got_nan[1, 0, 3]).all()
    assert torch.isfinite(got_nan[0]).all()


def _extremes():
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    with_inf = x.clone()
    with_inf[0, :3] = float("-inf")
    with_inf[1, :] = float("-inf")
    with_nan = x.clone()
    with_nan[2, 4] = float("nan")
    with_nan[0, 1] = float("inf")
    lowest = torch.finfo(torch.float32).min
    return {
        "softmax_of_-inf": (lambda a: a.softmax(-1), with_inf),
        "log_softmax_of_-inf": (lambda a: a.log_softmax(-1), with_inf),
        "mask_of_finfo_min": (lambda a: (a + torch.where(a > 0, 0.0, lowest))
                              .softmax(-1), x),
        "finfo_min_twice": (lambda a: a * 0 + lowest + lowest, x),
        "exp_overflow": (lambda a: (a * 100).exp(), x),
        "nan_through_relu_clamp": (lambda a: torch.relu(a) + a.clamp(-.5, .5),
                                   with_nan),
        "nan_through_max_min": (lambda a: a.amax(-1) + a.amin(-1), with_nan),
        "nan_and_inf_through_softmax_norm": (
            lambda a: a.softmax(-1) + torch.nn.functional.layer_norm(a, (8,)),
            with_nan),
        "saturating_activations": (
            lambda a: (a * 1e4).tanh() + (a * 1e4).sigmoid()
            + torch.nn.functional.gelu(a * 1e4)
            + torch.nn.functional.silu(a * 1e4), x),
        "log_and_division_by_zero": (lambda a: (a * 0).log() + a / (a * 0), x),
    }


@pytest.mark.parametrize("name", sorted(_extremes()))
def test_numeric_extremes(name):
    """Infinities, NaNs and values near the float limits come out where
    eager puts them (same positions, same signs); the finite rest matches."""
    fn, x = _extremes()[name]
    module = Lambda(fn).eval()
    with torch.no_grad():
        want = module(x)
    got = flow.compile(module, (x,))(x)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    infinite = torch.isinf(want)
    assert torch.equal(torch.isinf(got), infinite)
    assert torch.equal(got[infinite], want[infinite])
    finite = torch.isfinite(want)
    if finite.any():
        assert_close(got[finite], want[finite])


# ---------------------------------------------------------------------------
# The usual suspects, one module each
# ---------------------------------------------------------------------------

class Lambda(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


SUSPECTS = {
    "view_permute_reshape": (lambda x: x.view(2, 3, 4, 5).permute(0, 2, 3, 1)
                             .reshape(8, 15), [(2, 60)]),
    "expand_add": (lambda x, y: x.expand(4, 3, 5) + y, [(3, 1), (4, 3, 5)]),
    "slicing": (lambda x: x[:, 1:5:2, -3:] * 2 + x[:, :2, :3].sum(),
                [(3, 8, 6)]),
    "select_unsqueeze_squeeze": (lambda x: x[1].unsqueeze(0).squeeze(0)
                                 + x[:, 2].sum(0, keepdim=True), [(4, 5)]),
    "cat_split": (lambda x, y: torch.cat(torch.split(torch.cat([x, y], 1),
                                                     [2, 5], 1)[::-1], 1),
                  [(3, 3), (3, 4)]),
    "chunk_stack_like": (lambda x: sum(c * (i + 1) for i, c in
                                       enumerate(x.chunk(3, dim=-1))),
                         [(2, 9)]),
    "softmax_log_softmax": (lambda x: x.softmax(-1) + x.log_softmax(0),
                            [(5, 7)]),
    "layer_norm": (torch.nn.LayerNorm([6, 8]), [(2, 6, 8)]),
    "gather_take_along": (lambda x: torch.gather(
        x, 1, (x.abs() * 3).long().clamp(max=5)), [(4, 6)]),
    "elu_selu_celu": (lambda x: torch.nn.functional.elu(x)
                      + torch.nn.functional.selu(x)
                      + torch.nn.functional.celu(x, 0.5), [(4, 6)]),
    "softplus_mish_logsigmoid": (lambda x: torch.nn.functional.softplus(x * 8)
                                 + torch.nn.functional.mish(x)
                                 + torch.nn.functional.logsigmoid(x * 8),
                                 [(4, 6)]),
    # Tiny arguments, where log(1 + x) and exp(x) - 1 would lose every
    # digit (scaled back up, so the tolerance sees it).
    "log1p_expm1_tiny": (lambda x: torch.log1p(x * 1e-6) * 1e6
                         + torch.expm1(x * 1e-6) * 1e6
                         + torch.log1p(x.abs()) + torch.expm1(x), [(4, 6)]),
    "leaky_relu_sign": (lambda x: torch.nn.functional.leaky_relu(x, 0.1)
                        + torch.sign(x - x.round()), [(4, 6)]),
    "tan_sinh_cosh_isinf": (lambda x: torch.tan(x) + torch.sinh(x)
                            + torch.cosh(x)
                            + torch.isinf(x / (x > 0)).float(), [(4, 6)]),
    "remainder_fmod_div_modes": (lambda x: torch.remainder(x * 3, 0.7)
                                 + torch.fmod(x * 3, 0.7)
                                 + torch.floor_divide(x * 3, 0.7)
                                 + torch.div(x, 0.3, rounding_mode="trunc"),
                                 [(4, 6)]),
    "integer_remainder_and_floor_division": (lambda x: (
        ((x * 10).long() % 3) + torch.fmod((x * 10).long(), -4)
        + torch.div((x * 10).long(), 3, rounding_mode="floor")
        + torch.div((x * 10).long(), -3, rounding_mode="trunc")).float(),
        [(4, 6)]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [(4, 6)]),
    "max_min_dim": (lambda x: torch.max(x, 1, keepdim=True).values
                    + torch.min(x, 0, keepdim=True).values
                    + torch.max(x, 1, keepdim=True).indices
                    + torch.min(x, 0).indices, [(4, 6)]),
    "var_std": (lambda x: x.var(1, keepdim=True) + x.std(0)
                + x.var(correction=0), [(4, 6)]),
    "group_norm_instance_norm": (lambda x: torch.nn.functional.group_norm(
        x, 2, torch.arange(4.0) + 1, torch.ones(4)) + torch.nn.functional
        .instance_norm(x), [(2, 4, 3, 5)]),
    "upsample_nearest": (lambda x: torch.nn.functional.interpolate(
        x, scale_factor=2)[..., :5, :7] + torch.nn.functional.interpolate(
            x, size=(5, 7)), [(1, 2, 3, 4)]),
    "floor_ceil_round": (lambda x: (x * 4).floor() + (x * 4).ceil() * 2
                         + (x * 4).round() * 3, [(5, 7)]),
    "cumsum_argmax_argmin": (lambda x: x.cumsum(1) * x.argmax(1, keepdim=True)
                             + x.argmin(0) + x.argmax(), [(4, 6)]),
    # Rotary embeddings of positions the model takes as an input.
    "sin_cos_of_positions": (lambda p: torch.cat(
        [(p * 10.0).sin(), (p * 1000.0).cos()], -1), [(3, 8)]),
    "gelu_tanh_silu": (lambda x: torch.nn.functional.gelu(x, approximate="tanh")
                       + torch.nn.functional.silu(x), [(4, 9)]),
    "addmm_bmm_baddbmm": (lambda a, b, c: torch.bmm(a, b) + torch.baddbmm(
        c, a, b, beta=0.5, alpha=2.0), [(2, 3, 4), (2, 4, 5), (2, 3, 5)]),
    "batch_norm_pool_flatten": (torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.AvgPool2d(2, ceil_mode=True), torch.nn.Flatten()),
        [(2, 3, 12, 12)]),
    "adaptive_avg_pool": (torch.nn.AdaptiveAvgPool2d((2, 2)), [(1, 4, 8, 6)]),
    "grouped_strided_conv": (torch.nn.Conv2d(4, 8, 3, stride=2, padding=2,
                                             dilation=2, groups=2),
                             [(1, 4, 11, 11)]),
    "dropout_eval": (torch.nn.Sequential(torch.nn.Dropout(0.5),
                                         torch.nn.Linear(5, 3)), [(2, 5)]),
    "masked_fill_where": (lambda x: x.masked_fill(x > 0.5, -1.0)
                          + torch.where(x < 0, x * 2, x), [(4, 6)]),
    "clamp_hardtanh_relu6": (lambda x: x.clamp(-0.5, 0.7) + torch.nn.functional
                             .hardtanh(x) + torch.nn.functional.relu6(x * 8),
                             [(3, 7)]),
    "pow_sqrt_rsqrt_recip": (lambda x: x.pow(3) + (x.abs() + 1).sqrt()
                             + (x * x + 1).rsqrt() + 1 / (x * x + 2)
                             + (x.abs() + 0.5) ** 2.5, [(5, 5)]),
    "reductions": (lambda x: x.mean((1, 2)) + x.sum(-1).amax(1)
                   + x.amin(dim=(1, 2)), [(3, 4, 5)]),
    "pad": (lambda x: torch.nn.functional.pad(x, (1, 2, 0, 3), value=0.5),
            [(2, 3, 4)]),
    # Decomposes to mean and an as_strided view over size-1 dimensions.
    "adaptive_avg_pool_to_one": (torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.LayerNorm(8)), [(2, 3, 9, 9)]),
    "sdpa_causal": (lambda q, k, v: torch.nn.functional.
                    scaled_dot_product_attention(q, k, v, is_causal=True),
                    [(2, 3, 8, 16)] * 3),
    "casts": (lambda x: (x * 100).to(torch.int64).to(torch.float32) / 100
              + (x > 0).float(), [(4, 4)]),
    # Floor division and Python's remainder of negative integers.
    "int_math": (lambda i: (i * 3 - 1) // 2 + (i * 3 - 1) % 4
                 + (i * 3 - 1) // -3, [("i64", (40,))]),
    "flip": (lambda x, i: x.flip(0, -1) + x.flip(1) * 2
             + i.flip(0).float().sum(), [(3, 4, 5), ("i64", (6,))]),
}


def _make_args(specs):
    args = []
    for spec in specs:
        if spec[0] == "i64":
            args.append(torch.randint(-5, 5, spec[1]))
        else:
            args.append(torch.randn(*spec))
    return tuple(args)


@pytest.mark.parametrize("name", sorted(SUSPECTS))
def test_usual_suspects(name):
    fn, specs = SUSPECTS[name]
    module = fn if isinstance(fn, torch.nn.Module) else Lambda(fn)
    check(module, _make_args(specs))


# ---------------------------------------------------------------------------
# Inputs, outputs and parameters
# ---------------------------------------------------------------------------

class TupleDict(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x, extra):
        y = self.fc(x)
        return {"logits": y, "pair": (y.relu(), extra["bias"] + 1)}


def test_structured_inputs_and_outputs():
    module = TupleDict()
    args = (torch.randn(3, 8), {"bias": torch.randn(4)})
    compiled = check(module, args)
    out = compiled(*args)
    assert set(out) == {"logits", "pair"} and isinstance(out["pair"], tuple)
    with pytest.raises(flow.FlowError, match="structure"):
        compiled(torch.randn(3, 8))


def test_numpy_in_numpy_out_and_no_input_copy():
    module = torch.nn.Linear(8, 4).eval()
    compiled = flow.compile(module, (torch.randn(2, 8),))
    x = np.random.default_rng(0).standard_normal((2, 8), dtype=np.float32)
    out = compiled(x)
    assert isinstance(out, np.ndarray)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    # Torch outputs wrap the runtime's arrays without a copy.
    t = compiled(torch.from_numpy(x))
    assert isinstance(t, torch.Tensor) and not t.requires_grad


def test_wrong_input_shape_and_dtype_are_errors():
    compiled = flow.compile(torch.nn.Linear(8, 4), (torch.randn(2, 8),))
    with pytest.raises(flow.FlowError, match=r"expected f32\[2,8\], got shape"):
        compiled(torch.randn(3, 8))
    with pytest.raises(flow.FlowError, match="expected f32"):
        compiled(torch.randn(2, 8, dtype=torch.float64))


def test_weights_go_to_the_archive(tmp_path):
    module = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 2)).eval()
    archive = tmp_path / "mlp.safetensors"
    text = flow.import_torch(module, (torch.randn(1, 32),), parameters=archive)
    assert f'flow.parameters = "{archive}"' in text
    # Both weights and the first bias are parameters (the weights as the
    # model holds them: the GEMM reads them transposed); the 8-byte bias of
    # the last layer is inline.
    params = re.findall(r'flow.parameter "([^"]+)"', text)
    assert sorted(params) == ["0.bias", "0.weight", "2.weight"]
    stored = safetensors.load(str(archive))
    np.testing.assert_array_equal(stored["0.weight"],
                                  module[0].weight.detach().numpy())
    assert "dense<" in text  # the small bias
    # The archive is all flow-compile and flow-run need.
    compiled = flow.compile_mlir(text)
    x = torch.randn(1, 32)
    (y,) = compiled(x.numpy())
    with torch.no_grad():
        np.testing.assert_allclose(y, module(x).numpy(), rtol=1e-5, atol=1e-6)


def test_kept_archive_and_temporary_archive(tmp_path):
    module = torch.nn.Linear(64, 64)
    kept = tmp_path / "kept.safetensors"
    flow.compile(module, (torch.randn(1, 64),), parameters=kept)
    assert kept.exists()
    compiled = flow.compile(module, (torch.randn(1, 64),))
    archive = re.search(r'flow.parameters = "([^"]+)"', compiled.text).group(1)
    import os
    assert not os.path.exists(archive)  # mapped, then removed
    compiled(torch.randn(1, 64))


def test_bf16_model():
    module = torch.nn.Linear(16, 8).to(torch.bfloat16).eval()
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    compiled = flow.compile(module, (x,))
    got = compiled(x)
    assert got.dtype == torch.bfloat16
    with torch.no_grad():
        want = module(x)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(),
                               rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------------------
# Errors a user can act on
# ---------------------------------------------------------------------------

class TwoUnsupported(torch.nn.Module):
    def forward(self, x):
        y = torch.cummax(x, 0).values   # line A
        z = torch.logcumsumexp(x, 0)      # line B
        return y + z


def test_unsupported_ops_are_all_named_with_source_lines():
    with pytest.raises(flow.UnsupportedOpsError) as info:
        flow.import_torch(TwoUnsupported(), (torch.randn(4, 4),))
    message = str(info.value)
    assert "2 unsupported ops" in message
    assert "aten.cummax.default" in message and "aten.logcumsumexp" in message
    assert "test_torch_import.py" in message
    assert ("torch.cummax(x, 0)" in message
            and "torch.logcumsumexp(x, 0)" in message)
    ops = [op for op, *_ in info.value.ops]
    assert len(ops) == 2


def test_an_unbounded_dynamic_dimension_is_refused():
    """A program exported with torch's own dynamic_shapes: a dimension
    without an upper bound cannot be a size symbol (test_dynamic_shapes.py
    covers bounded ones)."""
    module = torch.nn.Linear(4, 4)
    batch = torch.export.Dim("batch")
    ep = torch.export.export(module, (torch.randn(3, 4),),
                             dynamic_shapes=({0: batch},))
    with pytest.raises(flow.UnsupportedOpsError,
                       match=r"size symbol '\w+' has no finite bounds in "
                             r"the exported program: give its \(min, max\) "
                             r"in dynamic="):
        flow.import_torch(ep)


def test_imported_text_reports_source_locations(tmp_path):
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.tanh(x) * 3  # the line the IR points at

    text = flow.import_torch(Model(), (torch.randn(2),))
    assert re.search(r'flow.tanh .* loc\(".*test_torch_import.py":\d+:0\)',
                     text)
    assert math.isfinite(len(text))


def test_batch_norm_folds_into_the_convolution():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, bias=False),
                                torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 4, 1),
                                torch.nn.BatchNorm2d(4, affine=False))
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 10, 10)
    text = flow.import_torch(model.eval(), (x,))
    assert "flow.batch_norm" not in text
    assert text.count("flow.conv2d") == 2
    check(model, (x,))


def test_a_training_module_compiles_in_eval_mode_and_stays_training():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5),
                                torch.nn.BatchNorm1d(8))
    model.train()
    x = torch.randn(4, 8)
    compiled = flow.compile(model, (x,))
    assert model.training
    model.eval()
    with torch.no_grad():
        want = model(x)
    assert_close(compiled(x), want)


class TopKAndSort(torch.nn.Module):
    def forward(self, x):
        a = torch.topk(x, 3, dim=1)
        b = torch.topk(x, 2, dim=0, largest=False)
        c = torch.sort(x, dim=1, descending=True)
        d = torch.sort(x.round(), dim=1, stable=True)  # ties keep order
        return (a.values, a.indices, b.values, b.indices, c.values,
                c.indices, d.values, d.indices)


def test_topk_and_sort_in_pytorch_order():
    """Values and indices exactly as eager's: best first, the first of
    equal values first, a NaN as the largest, rows of -inf."""
    x = torch.randn(4, 9)
    x[1, 3] = float("nan")
    x[2, :4] = float("-inf")
    model = TopKAndSort()
    compiled = flow.compile(model, (x,))
    for want, got in zip(model(x), compiled(x)):
        assert got.dtype == want.dtype
        if want.dtype == torch.int64:
            assert torch.equal(got, want)
        else:
            torch.testing.assert_close(got, want, rtol=0, atol=0,
                                       equal_nan=True)


class LongSorts(torch.nn.Module):
    def forward(self, x):
        a = torch.topk(x, 100, dim=1)
        b = torch.topk(x, 70, dim=1, largest=False)
        c = torch.sort(x, dim=1, descending=True, stable=True)
        d = torch.argsort(x, dim=1, stable=True)
        return a.values, a.indices, b.values, b.indices, c.values, \
            c.indices, d


def test_topk_and_sort_beyond_the_unrolled_limit():
    """Past 64 elements, flow.sort: exactly eager's stable order, with
    ties, NaNs and infinities in rows of 300."""
    x = (torch.randn(3, 300) * 4).round()  # many ties
    x[0, 10], x[0, 200], x[1, 5] = float("nan"), float("nan"), float("inf")
    x[2, :50] = float("-inf")
    model = LongSorts()
    compiled = flow.compile(model, (x,))
    want, got = model(x), compiled(x)
    for i, (w, g) in enumerate(zip(want, got)):
        assert g.dtype == w.dtype
        if w.dtype != torch.int64:
            torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
        elif i >= 4:  # the stable sorts: exactly eager's permutation
            assert torch.equal(g, w)
    # top-k orders ties as it likes in eager; Flow's indices pick the
    # values, first index first among equal ones.
    for values, indices in ((got[0], got[1]), (got[2], got[3])):
        torch.testing.assert_close(x.gather(1, indices), values, rtol=0,
                                   atol=0, equal_nan=True)
        same = (values[:, 1:] == values[:, :-1]) | \
            (values[:, 1:].isnan() & values[:, :-1].isnan())
        assert bool((indices[:, 1:] > indices[:, :-1])[same].all())


class MergedSorts(torch.nn.Module):
    def forward(self, x, y, z):
        a = torch.sort(x, dim=0, stable=True)
        b = torch.sort(y, dim=1, descending=True, stable=True)
        return a.values, a.indices, b.values, b.indices, \
            torch.argsort(z, stable=True)


def test_long_rows_merge_sort_in_eagers_order():
    """Rows of 128 or more merge-sort: exactly eager's stable permutation
    for a long integer column (axis 0), float rows of 5000 with ties, NaNs
    and -inf sorted descending, and a rank-1 row of 129."""
    x = torch.randint(-50, 50, (1000, 3), dtype=torch.int32)
    y = (torch.randn(2, 5000) * 8).round()
    y[0, 7], y[1, 4000] = float("nan"), float("nan")
    y[1, :10] = float("-inf")
    z = torch.randn(129)
    model = MergedSorts()
    want, got = model(x, y, z), flow.compile(model, (x, y, z))(x, y, z)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype
        if w.dtype == torch.int64:
            assert torch.equal(g, w)
        else:
            torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def test_one_hot_and_run_time_assertions():
    """torch.nn.functional.one_hot checks its classes with _assert_async:
    the checks run on every call and fail with PyTorch's message."""
    class OneHot(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.one_hot(x, 5).float() * 2.0

    x = torch.tensor([[1, 4], [0, 3]])
    compiled = check(OneHot(), (x,))
    with pytest.raises(flow.FlowError,
                       match="smaller than num_classes"):
        compiled(torch.tensor([[1, 5], [0, 3]]))
    with pytest.raises(flow.FlowError, match="non-negative"):
        compiled(torch.tensor([[1, -1], [0, 3]]))


class _Encoderish(torch.nn.Module):
    """Linear, layer norm, GELU and attention: ops Flow imports as
    torch.export leaves them."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.proj(x))
        q = h.view(2, 8, 4, 8).transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        return self.norm(a.transpose(1, 2).reshape(2, 8, 32) + x)


def test_imports_as_exported_without_decompositions(monkeypatch):
    """A program whose every op has a handler and mutates nothing is
    imported without core-ATen decompositions (they retrace it: seconds
    for a BERT), with the same numerics."""
    from flow import torch_import
    torch.manual_seed(0)
    module, x = _Encoderish(), torch.randn(2, 8, 32)
    module.eval()
    assert torch_import._imports_as_exported(torch_import._export(module, (x,)))

    def refuse(ep):
        raise AssertionError("decomposed a program Flow imports as exported")

    monkeypatch.setattr(torch_import, "_decompose", refuse)
    text = flow.import_torch(module, (x,))
    assert "flow.layer_norm" in text
    check(module, (x,))


class _InPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.bn(self.conv(x))
        y += x.mean()
        return torch.relu_(y)


def _refuse_decompositions(monkeypatch):
    from flow import torch_import

    def refuse(ep):
        raise AssertionError("decomposed a program Flow imports as exported")
    monkeypatch.setattr(torch_import, "_decompose", refuse)


def test_in_place_ops_and_batch_norms_import_as_exported(monkeypatch):
    """In-place ops that write over results nothing reads afterwards (y +=,
    relu_, as in a ResNet block) import as their functional twins, and a
    batch norm after a convolution folds into it, without the core-ATen
    decompositions (they retrace the program: seconds for a ResNet-50)."""
    from flow import torch_import
    torch.manual_seed(1)
    module, x = _InPlace(), torch.randn(1, 3, 8, 8)
    module.eval()
    with torch.no_grad():  # give the batch norm statistics that matter
        module.bn.running_mean.uniform_(-1, 1)
        module.bn.running_var.uniform_(0.5, 2)
    assert torch_import._imports_as_exported(
        torch_import._export(module, (x,)))
    _refuse_decompositions(monkeypatch)
    text = flow.import_torch(module, (x,))
    assert "flow.batch_norm" not in text and "flow.conv2d" in text
    check(module, (x,))


class _LinearBatchNorm(torch.nn.Module):
    """A batch norm with no convolution before it (kept as a batch norm)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 5)
        self.bn = torch.nn.BatchNorm1d(5)

    def forward(self, x):
        return torch.relu_(self.bn(self.fc(x)))


def test_batch_norm_alone_imports_as_exported(monkeypatch):
    torch.manual_seed(2)
    module, x = _LinearBatchNorm(), torch.randn(4, 6)
    module.eval()
    with torch.no_grad():
        module.bn.running_mean.uniform_(-1, 1)
        module.bn.running_var.uniform_(0.5, 2)
    _refuse_decompositions(monkeypatch)
    text = flow.import_torch(module, (x,))
    assert "flow.batch_norm" in text
    check(module, (x,))


class _ReadAfterWrite(torch.nn.Module):
    """y is read after add_ wrote over it: torch.export's graph reads add_'s
    result there (the same tensor), so the functional add is eager's
    answer."""

    def forward(self, x):
        y = x * 2
        z = y.add_(1)
        return y * 3 + z


def test_reads_after_an_in_place_op_see_its_result(monkeypatch):
    torch.manual_seed(4)
    module, x = _ReadAfterWrite(), torch.randn(3, 4)
    _refuse_decompositions(monkeypatch)
    compiled = flow.compile(module, (x,))
    torch.testing.assert_close(compiled(x), module(x), rtol=1e-6, atol=1e-6)


class _ViewOfWritten(torch.nn.Module):
    """A view taken before relu_ sees what relu_ wrote."""

    def forward(self, x):
        y = x * 2
        v = y.view(-1)
        y.relu_()
        return v + 1


class _WritesInput(torch.nn.Module):
    def forward(self, x):
        return x.relu_() * 2


@pytest.mark.parametrize("module_class", [_ViewOfWritten, _WritesInput])
def test_in_place_ops_that_are_seen_are_decomposed(monkeypatch, module_class):
    """An in-place op whose write something else sees (a later reader, a
    view, the caller's input) takes the decomposed path, with eager's
    answer."""
    from flow import torch_import
    torch.manual_seed(3)
    module, x = module_class(), torch.randn(3, 4)
    assert not torch_import._imports_as_exported(
        torch_import._export(module, (x.clone(),)))
    calls = []
    decompose = torch_import._decompose
    monkeypatch.setattr(torch_import, "_decompose",
                        lambda ep: calls.append(1) or decompose(ep))
    compiled = flow.compile(module, (x.clone(),))
    want = module(x.clone())
    got = compiled(x.clone())
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert calls
