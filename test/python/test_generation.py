"""Greedy generation (flow.compile_causal_lm) against Hugging Face's
generate(do_sample=False), token for token, on tiny LLaMA-style and GPT-2
models with random weights; the errors a user meets; the shared archive."""

import re

import pytest
import torch

import flow
from conftest import require

transformers = require("transformers")


def tiny(family, vocab=256, **extra):
    torch.manual_seed(0)
    if family == "gpt2":
        config = transformers.GPT2Config(vocab_size=vocab, n_embd=64,
                                         n_layer=2, n_head=4, n_positions=256,
                                         **extra)
        return transformers.GPT2LMHeadModel(config).eval()
    config = getattr(transformers, f"{family}Config")(
        vocab_size=vocab, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, **extra)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


@pytest.fixture(scope="module", params=["Llama", "gpt2", "Qwen2"])
def model_and_lm(request):
    model = tiny(request.param)
    return model, flow.compile_causal_lm(model, max_length=96,
                                         prefill_chunk=16)


def hf_greedy(model, ids, new, **kwargs):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new, do_sample=False,
                              **kwargs)


# Prompt lengths: shorter than a chunk, exactly one, one more (a chunk
# padded at its start), several.
@pytest.mark.parametrize("length", [5, 16, 17, 40])
def test_generate_matches_hugging_face_greedy(model_and_lm, length):
    model, lm = model_and_lm
    torch.manual_seed(length)
    ids = torch.randint(3, 256, (1, length))
    # No EOS: the whole 40 tokens are compared.
    want = hf_greedy(model, ids, 40, eos_token_id=None, pad_token_id=0)
    got = lm.generate(ids, max_new_tokens=40, eos_token_id=[])
    assert isinstance(got, torch.Tensor)
    assert got.shape == (1, length + 40)
    assert torch.equal(got, want), (got[0, length:].tolist(),
                                    want[0, length:].tolist())


def test_generate_stops_at_eos_as_hugging_face_does(model_and_lm):
    model, lm = model_and_lm
    ids = torch.randint(3, 256, (1, 9))
    free = hf_greedy(model, ids, 30, eos_token_id=None, pad_token_id=0)
    eos = int(free[0, 9 + 6])  # the seventh new token
    want = hf_greedy(model, ids, 30, eos_token_id=eos, pad_token_id=0)
    got = lm.generate(ids, max_new_tokens=30, eos_token_id=eos)
    assert got.shape[1] < 9 + 30
    assert torch.equal(got, want)


def test_generate_numpy_in_numpy_out(model_and_lm):
    model, lm = model_and_lm
    ids = torch.randint(3, 256, (1, 7))
    got = lm.generate(ids.numpy(), max_new_tokens=5, eos_token_id=[])
    assert not isinstance(got, torch.Tensor)
    want = hf_greedy(model, ids, 5, eos_token_id=None, pad_token_id=0)
    assert (got == want.numpy()).all()


def test_left_padded_batch():
    """Two prompts of different lengths in one batch, the shorter padded
    on the left, as Hugging Face generates them."""
    model = tiny("Llama")
    lm = flow.compile_causal_lm(model, max_length=64, prefill_chunk=8,
                                batch_size=2)
    ids = torch.randint(3, 256, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.int64)
    mask[1, :4] = 0
    ids[1, :4] = 0
    want = hf_greedy(model, ids, 20, attention_mask=mask, eos_token_id=None,
                     pad_token_id=0)
    got = lm.generate(ids, max_new_tokens=20, attention_mask=mask,
                      eos_token_id=[])
    assert torch.equal(got, want)


@pytest.mark.parametrize("family", ["Llama", "gpt2"])
def test_the_two_functions_share_one_archive(tmp_path, family):
    """GPT-2 ties its output weights to its embedding: one tensor, used
    twice in each function, stored once."""
    model = tiny(family, vocab=300)  # a shape only the embedding has
    archive = tmp_path / "weights.safetensors"
    lm = flow.compile_causal_lm(model, max_length=32, prefill_chunk=8,
                                parameters=archive)
    # parameters() counts a tied tensor once.
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    # Tensors up to the inline limit may be constants in the text instead.
    from flow._emitter import INLINE_BYTES
    large = sum(p.numel() * p.element_size() for p in model.parameters()
                if p.numel() * p.element_size() > INLINE_BYTES)
    # Every weight once (plus a header and small folded constants), not
    # once per function or per use.
    assert large <= archive.stat().st_size < 1.2 * weights
    # The embedding table (300 x 64), and an untied output layer's: each
    # one parameter, the same in both functions (GPT-2's output layer reads
    # its tied table under the same name).
    tables = sum(1 for p in model.parameters() if tuple(p.shape) == (300, 64))
    table = re.compile(r'flow.parameter "([^"]+)" : tensor<300x64xf32>')
    prefill, decode = (set(table.findall(t)) for t in lm.texts)
    assert len(prefill) == tables and prefill == decode


def test_errors_name_what_is_wrong(model_and_lm):
    _, lm = model_and_lm
    with pytest.raises(flow.FlowError, match="max_length=96"):
        lm.generate(torch.zeros(1, 90, dtype=torch.long), max_new_tokens=10)
    with pytest.raises(flow.FlowError, match="batch size compiled for"):
        lm.generate(torch.zeros(2, 4, dtype=torch.long), max_new_tokens=2)
    with pytest.raises(flow.FlowError, match="empty"):
        lm.generate(torch.zeros(1, 0, dtype=torch.long), max_new_tokens=2)


def test_sliding_window_beyond_max_length_is_refused():
    model = tiny("Mistral", sliding_window=16)
    with pytest.raises(flow.FlowError, match="sliding window of 16"):
        flow.compile_causal_lm(model, max_length=64)


def test_export_keeps_each_submodules_mode():
    """A wrapper in training mode around a model in eval mode: compiling
    it must not leave the model training (its dropout would then change
    every later eager call)."""
    inner = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    inner.eval()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    wrapper = Wrapper()
    assert wrapper.training and not inner.training
    flow.compile(wrapper, (torch.randn(2, 4),))
    assert wrapper.training and not inner.training


@pytest.mark.parametrize("family", ["gpt2", "Llama"])
def test_the_steps_import_without_decompositions(family, monkeypatch):
    # Every op of the prefill and decode steps (their masks' `&` and
    # `.to(device, bool)` included) is one Flow imports as exported, so
    # torch.export's decompositions, a retrace of the whole program (half
    # of the compile time), never run.
    import flow.torch_import as torch_import

    def refuse(ep):
        raise AssertionError("the program took the decomposed path")
    monkeypatch.setattr(torch_import, "_decompose", refuse)
    model = tiny(family)
    lm = flow.compile_causal_lm(model, max_length=32, prefill_chunk=8,
                                cache=False)
    ids = torch.randint(3, 256, (1, 5))
    want = hf_greedy(model, ids, 12, eos_token_id=None, pad_token_id=0)
    got = lm.generate(ids, max_new_tokens=12, eos_token_id=[])
    assert torch.equal(got, want)
