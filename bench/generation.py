"""Tokens per second of greedy generation: Flow (flow.compile_causal_lm)
against Hugging Face generate on PyTorch eager and on torch.compile, side
by side in one process, same threads, random weights.

    python bench/generation.py [--threads 2] [--prompt 128] [--new 64]
        [--repeats 3] [--models gpt2,llama]

Each row: a GPT-2-small-shaped model (124M parameters) and a LLaMA-shaped
one of about 100M; batch 1; the time from the prompt to the last new token
(prefill included), median of `--repeats` runs after one warm-up;
tokens/s counts the new tokens. Every engine's tokens are checked equal to
eager's first (a benchmark of wrong answers is worthless).
"""

import argparse
import os
import statistics
import time

import torch
import transformers

import flow


def gpt2_small():
    config = transformers.GPT2Config()  # 12 layers, 768 wide, 50257 tokens
    return transformers.GPT2LMHeadModel(config).eval()


def llama_100m():
    config = transformers.LlamaConfig(
        vocab_size=32000, hidden_size=768, intermediate_size=2048,
        num_hidden_layers=8, num_attention_heads=12, num_key_value_heads=4,
        max_position_embeddings=1024)
    return transformers.LlamaForCausalLM(config).eval()


MODELS = {"gpt2": ("GPT-2 small", gpt2_small), "llama": ("LLaMA ~100M",
                                                        llama_100m)}


def interleaved(engines, repeats):
    """Median seconds of each engine, the runs interleaved (eager, Flow,
    Inductor, eager, ...) so that the machine's drift hits all alike; the
    first call of each is a warm-up (and torch.compile's compilation).
    Returns ({name: seconds}, {name: tokens})."""
    outputs = {name: fn() for name, fn in engines.items()}
    times = {name: [] for name in engines}
    for _ in range(repeats):
        for name, fn in engines.items():
            start = time.perf_counter()
            outputs[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {n: statistics.median(t) for n, t in times.items()}, outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--no-inductor", action="store_true")
    args = parser.parse_args()
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var} is set; a user's machine does not set it")
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}, prompt {args.prompt}, {args.new} new "
          f"tokens, batch 1, median of {args.repeats}; "
          f"GEMM: {flow.blas_info()}")
    print("| model | params | Flow tok/s | eager tok/s | Inductor tok/s "
          "| eager/Flow time | Inductor/Flow time | Flow compile s |")
    print("|---|---|---|---|---|---|---|---|")
    for key in args.models.split(","):
        label, make = MODELS[key]
        torch.manual_seed(0)
        model = make()
        params = sum(p.numel() for p in model.parameters()) / 1e6
        ids = torch.randint(0, model.config.vocab_size, (1, args.prompt))
        hf_kwargs = dict(max_new_tokens=args.new, min_new_tokens=args.new,
                         do_sample=False, pad_token_id=0)

        def eager():
            with torch.no_grad():
                return model.generate(ids, **hf_kwargs)

        start = time.perf_counter()
        lm = flow.compile_causal_lm(model, max_length=args.prompt + args.new,
                                    threads=args.threads)
        compile_s = time.perf_counter() - start
        engines = {"eager": eager,
                   "flow": lambda: lm.generate(ids, max_new_tokens=args.new,
                                               eos_token_id=[])}
        if not args.no_inductor:
            compiled = torch.compile(model)

            def inductor():
                with torch.no_grad():
                    return compiled.generate(ids, **hf_kwargs)

            engines["inductor"] = inductor
        times, outputs = interleaved(engines, args.repeats)
        want = outputs["eager"]
        assert torch.equal(outputs["flow"], want), \
            "Flow's tokens differ from eager's"
        if "inductor" in outputs and not torch.equal(outputs["inductor"], want):
            print(f"note: Inductor's tokens differ from eager's on {label}")
        t_eager, t_flow = times["eager"], times["flow"]
        t_inductor = times.get("inductor", float("nan"))
        rate = lambda t: args.new / t
        print(f"| {label} | {params:.0f}M | {rate(t_flow):.1f} | "
              f"{rate(t_eager):.1f} | {rate(t_inductor):.1f} | "
              f"{t_eager / t_flow:.2f} | {t_inductor / t_flow:.2f} | "
              f"{compile_s:.1f} |", flush=True)


if __name__ == "__main__":
    main()
