"""Greedy generation for decoder LLMs: a prefill function and a decode-step
function compiled from one model, sharing one weight archive, with the
key/value cache as explicit state.

    lm = flow.compile_causal_lm(model, max_length=256)
    tokens = lm.generate(input_ids, max_new_tokens=64)

Shapes are static, as everywhere in Flow, and the cache is a static one
(as Hugging Face's StaticCache): `max_length` slots per layer, of which the
tokens so far fill a prefix and a mask hides the rest. Both functions take
the whole cache, the mask over its slots, the new tokens and their
positions, and return the last token's logits and the new tokens' keys and
values, which `generate` writes into the cache. The prefill function takes
`prefill_chunk` tokens at a time: a prompt is cut into chunks aligned to
its end (the first chunk padded at its start with masked slots), so every
prompt length runs on the same two executables and nothing is compiled
after construction. Attention over masked slots costs a little compute
(max_length keys instead of the tokens so far), never accuracy: a masked
key's weight is exactly zero.

The two executables map the same safetensors archive (weights that both
programs use are stored once), so the weights are resident once.
"""

import inspect
import operator
import os
import tempfile
from typing import List, Optional

import numpy as np

from . import safetensors
from ._flow import FlowError


def _cache_tensors(cache) -> List[tuple]:
    """[(keys, values)] per layer of a Hugging Face cache object."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    if isinstance(cache, (tuple, list)):
        return [(k, v) for k, v in cache]
    raise FlowError(f"the model returns a cache of type "
                    f"{type(cache).__name__}, which Flow cannot read")


def _forward_kwarg(model, *names) -> Optional[str]:
    params = inspect.signature(model.forward).parameters
    for name in names:
        if name in params:
            return name
    return None


def _integer(name: str, value, minimum: int) -> int:
    """`value` as an int, refused by `name` unless it is an integer (a
    Python or numpy one, not a bool or a float) of at least `minimum`."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise FlowError(f"{name} must be an integer, got {value!r} "
                        f"({type(value).__name__})") from None
    if number < minimum:
        raise FlowError(f"{name} must be "
                        + ("positive" if minimum == 1 else
                           f"at least {minimum}") + f", got {number}")
    return number


def _token_ids(name: str, value) -> np.ndarray:
    """`value` (a torch tensor, array or nested list) as a numpy array of
    integers, unconverted; a float or bool one is refused (converting
    would truncate it silently)."""
    if type(value).__module__.startswith("torch"):
        import torch
        if value.dtype.is_floating_point or value.dtype.is_complex or \
                value.dtype == torch.bool:
            raise FlowError(f"{name}: token ids must be integers, got "
                            f"{str(value.dtype).replace('torch.', '')}")
        return value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise FlowError(f"{name}: token ids must be integers, got "
                        f"{array.dtype}")
    return array


def _position_limit(config) -> Optional[tuple]:
    """(the config's name for it, the number of positions the model has
    embeddings for), or None when its config gives none."""
    for attribute in ("n_positions", "max_position_embeddings"):
        limit = getattr(config, attribute, None)
        if isinstance(limit, int) and not isinstance(limit, bool) and \
                limit > 0:
            return attribute, limit
    return None


def _sliding_window(config) -> Optional[int]:
    window = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None and "sliding_attention" not in layer_types:
        return None
    return window if isinstance(window, int) and window > 0 else None


class _Step:
    """Builds the torch module both functions are exported from."""

    @staticmethod
    def make(model, layers: int):
        import torch
        from transformers import DynamicCache

        # Newer transformers name the cache argument `cache` and keep
        # `past_key_values` as a deprecated alias.
        cache_kw = _forward_kwarg(model, "cache", "past_key_values")
        keep_kw = _forward_kwarg(model, "logits_to_keep", "num_logits_to_keep")
        if cache_kw is None:
            raise FlowError(f"{type(model).__name__}.forward takes no cache "
                            "(cache or past_key_values)")

        class Step(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, ids, mask, positions, *kv):
                try:
                    cache = DynamicCache(config=self.model.config)
                except TypeError:
                    cache = DynamicCache()
                for i in range(layers):
                    cache.update(kv[2 * i], kv[2 * i + 1], i)
                kwargs = {cache_kw: cache, "attention_mask": mask,
                          "position_ids": positions, "use_cache": True}
                if keep_kw is not None:
                    kwargs[keep_kw] = 1
                out = self.model(input_ids=ids, **kwargs)
                new = ids.shape[1]
                results = [out.logits[:, -1, :]]
                for k, v in _cache_tensors(out.past_key_values):
                    results += [k[:, :, -new:, :], v[:, :, -new:, :]]
                return tuple(results)

        return Step()


class CausalLM:
    """A decoder LLM compiled for greedy generation (see the module's
    docstring). Build it with flow.compile_causal_lm."""

    def __init__(self, model, *, max_length: int = 512,
                 prefill_chunk: int = 64, batch_size: int = 1,
                 threads: int = 0, fusion: bool = True,
                 precision: str = "f32", parameters: Optional[str] = None,
                 cache: bool = True):
        import torch
        from . import compile_mlir
        from .torch_import import import_program

        max_length = _integer("max_length", max_length, 1)
        prefill_chunk = _integer("prefill_chunk", prefill_chunk, 1)
        batch_size = _integer("batch_size", batch_size, 1)
        config = getattr(model, "config", None)
        limit = _position_limit(config) if config is not None else None
        if limit is not None and max_length > limit[1]:
            raise FlowError(
                f"max_length={max_length} exceeds the {limit[1]} positions "
                f"the model has (config.{limit[0]}={limit[1]}): tokens past "
                f"position {limit[1] - 1} have no position embedding; "
                f"compile with max_length <= {limit[1]}")
        window = _sliding_window(config) if config is not None else None
        if window is not None and max_length > window:
            raise FlowError(
                f"the model attends through a sliding window of {window} "
                f"tokens; Flow's static cache holds every token, so "
                f"max_length must be at most {window} (got {max_length})")
        self.max_length = max_length
        self.chunk = min(prefill_chunk, max_length)
        self.batch = batch_size

        # One eager call tells the cache's layout: layers, heads, head size
        # and dtype of the keys and values.
        training = model.training
        model.eval()
        try:
            with torch.no_grad():
                probe = model(input_ids=torch.zeros(batch_size, 1,
                                                     dtype=torch.long),
                              use_cache=True)
        finally:
            model.train(training)
        cache = getattr(probe, "past_key_values", None)
        if cache is None:
            raise FlowError(f"{type(model).__name__} returned no cache with "
                            "use_cache=True: it is not a decoder Flow can "
                            "generate with")
        layout = _cache_tensors(cache)
        self.layers = len(layout)
        self.vocab = probe.logits.shape[-1]
        self._kv_shapes = [(tuple(k.shape[:2]) + (max_length, k.shape[3]),
                            tuple(v.shape[:2]) + (max_length, v.shape[3]))
                           for k, v in layout]
        self._kv_dtypes = [(k.dtype, v.dtype) for k, v in layout]

        step = _Step.make(model, self.layers)
        keep = parameters is not None
        archive = os.fspath(parameters) if keep else None
        if not keep:
            fd, archive = tempfile.mkstemp(prefix="flow-", suffix=".safetensors")
            os.close(fd)
        shared = {}
        try:
            programs = [import_program(step, self._example(tokens),
                                       parameters=archive, shared=shared,
                                       function=name)
                        for name, tokens in (("prefill", self.chunk),
                                             ("decode", 1))]
            safetensors.save(shared, archive)
            self._prefill, self._decode = (
                compile_mlir(p.text, threads=threads, fusion=fusion,
                             precision=precision, cache=cache)
                for p in programs)
        finally:
            if not keep and os.path.exists(archive):
                os.unlink(archive)
        self.texts = [p.text for p in programs]
        # Hugging Face's generate stops at the generation config's EOS.
        generation_config = getattr(model, "generation_config", None)
        self.eos_token_id = getattr(generation_config, "eos_token_id", None)
        if self.eos_token_id is None and config is not None:
            self.eos_token_id = getattr(config, "eos_token_id", None)
        self.pad_token_id = getattr(generation_config, "pad_token_id", None)

    def _example(self, tokens: int):
        import torch
        b, m = self.batch, self.max_length
        kv = []
        for (ks, vs), (kd, vd) in zip(self._kv_shapes, self._kv_dtypes):
            kv += [torch.zeros(ks, dtype=kd), torch.zeros(vs, dtype=vd)]
        return (torch.zeros(b, tokens, dtype=torch.long),
                torch.ones(b, m + tokens, dtype=torch.long),
                torch.zeros(b, tokens, dtype=torch.long), *kv)

    def _empty_cache(self):
        from .torch_import import _to_numpy
        import torch
        return [_to_numpy(torch.zeros(shape, dtype=dtype))
                for pair in zip(self._kv_shapes, self._kv_dtypes)
                for shape, dtype in zip(*pair)]

    def generate(self, input_ids, max_new_tokens: int = 20,
                 attention_mask=None, eos_token_id=None,
                 pad_token_id=None):
        """Greedy decoding, as Hugging Face's generate(do_sample=False):
        returns the prompt followed by the new tokens, [batch, length].
        Rows that produced `eos_token_id` continue with `pad_token_id`
        (default: the EOS id), and generation stops when every row has.
        `attention_mask` marks padding in left-padded prompts. Torch in,
        torch out; numpy otherwise."""
        as_torch = type(input_ids).__module__.startswith("torch")
        given = _token_ids("input_ids", input_ids)
        if given.ndim != 2 or given.shape[0] != self.batch:
            raise FlowError(f"input_ids must be [{self.batch}, length] (the "
                            f"batch size compiled for), got "
                            f"{list(given.shape)}")
        batch, length = given.shape
        if length < 1:
            raise FlowError("the prompt is empty")
        # Checked before converting (a uint64 id would wrap): an id
        # outside the vocabulary reads past the embedding table.
        outside = (given < 0) | (given >= self.vocab)
        if outside.any():
            row, column = (int(i) for i in np.argwhere(outside)[0])
            raise FlowError(
                f"input_ids[{row}, {column}] is {given[row, column]}, "
                f"outside the vocabulary of {self.vocab} tokens (ids 0 to "
                f"{self.vocab - 1})")
        ids = given.astype(np.int64, copy=False)
        max_new_tokens = _integer("max_new_tokens", max_new_tokens, 0)
        if length + max_new_tokens > self.max_length:
            raise FlowError(
                f"{length} prompt tokens and {max_new_tokens} new ones need "
                f"{length + max_new_tokens} cache slots; the model was "
                f"compiled with max_length={self.max_length}")
        if attention_mask is None:
            prompt_mask = np.ones_like(ids)
        else:
            prompt_mask = np.asarray(
                attention_mask.cpu() if hasattr(attention_mask, "cpu")
                else attention_mask, dtype=np.int64)
            if prompt_mask.shape != ids.shape:
                raise FlowError("attention_mask must have the shape of "
                                "input_ids")
        if max_new_tokens == 0:
            return input_ids
        if eos_token_id is None:
            eos_token_id = self.eos_token_id
        eos = set()
        if eos_token_id is not None:
            listed = eos_token_id if isinstance(
                eos_token_id, (list, tuple, set)) else \
                np.atleast_1d(np.asarray(eos_token_id)).tolist()
            eos = {_integer("eos_token_id", e, 0) for e in listed}
        if pad_token_id is None:
            pad_token_id = self.pad_token_id
        if pad_token_id is not None:
            pad_token_id = _integer("pad_token_id", pad_token_id, 0)
        pad = pad_token_id if pad_token_id is not None else (
            min(eos) if eos else 0)

        cache = self._empty_cache()
        slots = np.zeros((batch, self.max_length), dtype=np.int64)
        # Positions as Hugging Face derives them from the mask.
        positions = np.cumsum(prompt_mask, axis=1) - 1
        positions[prompt_mask == 0] = 1
        used = 0

        def run(function, tokens, token_mask, token_positions, start):
            """Runs `tokens` (the last `len(start..)` of which go into
            the cache from slot `used`) and returns the last logits."""
            nonlocal used
            mask = np.concatenate([slots, token_mask], axis=1)
            out = function(tokens, mask, token_positions, *cache)
            kept = tokens.shape[1] - start
            for i, new in enumerate(out[1:]):
                cache[i][:, :, used:used + kept, :] = new[:, :, start:, :]
            slots[:, used:used + kept] = token_mask[:, start:]
            used += kept
            return out[0]

        # Prefill in chunks aligned to the prompt's end.
        c = self.chunk
        lead = -length % c
        padded = np.concatenate([np.zeros((batch, lead), np.int64), ids], 1)
        padded_mask = np.concatenate(
            [np.zeros((batch, lead), np.int64), prompt_mask], 1)
        padded_pos = np.concatenate(
            [np.ones((batch, lead), np.int64), positions], 1)
        for s in range(0, padded.shape[1], c):
            logits = run(self._prefill, padded[:, s:s + c],
                         padded_mask[:, s:s + c], padded_pos[:, s:s + c],
                         lead if s == 0 else 0)

        out = [ids]
        done = np.zeros(batch, dtype=bool)
        next_pos = positions[:, -1:] + 1
        for step in range(max_new_tokens):
            token = np.argmax(logits, axis=-1).astype(np.int64)
            token = np.where(done, pad, token)
            out.append(token[:, None])
            if eos:
                done |= np.isin(token, list(eos))
            if done.all() or step == max_new_tokens - 1:
                break
            logits = run(self._decode, token[:, None],
                         np.ones((batch, 1), np.int64), next_pos, 0)
            next_pos = next_pos + 1
        result = np.concatenate(out, axis=1)
        if as_torch:
            import torch
            return torch.from_numpy(result)
        return result


def compile_causal_lm(model, *, max_length: int = 512,
                      prefill_chunk: int = 64, batch_size: int = 1,
                      threads: int = 0, fusion: bool = True,
                      precision: str = "f32",
                      parameters: Optional[str] = None,
                      cache: bool = True) -> CausalLM:
    """Compiles a Hugging Face causal LM (a decoder returning logits and a
    key/value cache) for greedy generation; see CausalLM.generate.
    `max_length` bounds prompt plus new tokens; `prefill_chunk` is how many
    prompt tokens one prefill call takes; `parameters` keeps the shared
    weight archive at that path (otherwise a temporary file, removed once
    both executables have mapped it); `cache=False` compiles both
    executables even when the compile cache holds them (flow.cache)."""
    return CausalLM(model, max_length=max_length,
                    prefill_chunk=prefill_chunk, batch_size=batch_size,
                    threads=threads, fusion=fusion, precision=precision,
                    parameters=parameters, cache=cache)
