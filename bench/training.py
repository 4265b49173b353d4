"""Training step time on the CPU: flow.compile_train against PyTorch eager
(forward, backward, torch.optim.AdamW), same machine, same threads, and
optionally torch.compile (AOTAutograd + Inductor on the same step).

    python bench/training.py [--threads 2] [--repeats 3] [--steps 3]
        [--models bert-small,gpt2-small] [--batch 8] [--seq 128] [--inductor]
        [--dropout P] [--recompute]

Models have random weights and dropout P (default 0; each engine draws its
own masks): a BERT-small-sized encoder (4 layers, hidden 512, 8 heads, a
sequence-classification loss) and a GPT-2-small-sized decoder (12 layers,
hidden 768, language-modelling loss). `--recompute` compiles Flow's step
with recompute="elementwise". A step is forward + backward + AdamW
(+ zero_grad for torch). The time is the median over `repeats` rounds of
each round's median step time over `steps` steps; the engines alternate in
every round. Ratios are torch / Flow: > 1 means Flow is faster.

    python bench/training.py --memory [--models ...]

measures peak memory instead: each engine in a process of its own builds
the model (Flow also compiles it), resets the process' peak resident size
(/proc/self/clear_refs), runs `steps` steps and reports the peak resident
size during them (VmHWM: everything resident, the torch model's own
weights included on both sides) and what the steps added to the size
before them.
"""

import argparse
import re
import statistics
import subprocess
import sys
import time

import torch

from common import BUILD

sys.path.insert(0, str(BUILD / "python"))
import flow  # noqa: E402


def bert_small(batch, seq, dropout=0.0):
    import transformers
    config = transformers.BertConfig(
        hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
        intermediate_size=2048, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout, num_labels=4,
        attn_implementation="sdpa")
    model = transformers.BertForSequenceClassification(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    labels = torch.randint(0, 4, (batch,))
    return model, (lambda m, i, l: m(input_ids=i, labels=l).loss), (ids, labels)


def gpt2_small(batch, seq, dropout=0.0):
    import transformers
    config = transformers.GPT2Config(resid_pdrop=dropout, embd_pdrop=dropout,
                                     attn_pdrop=dropout,
                                     attn_implementation="sdpa")
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    return model, (lambda m, i: m(input_ids=i, labels=i).loss), (ids,)


MODELS = {"bert-small": ("BERT-small (4x512) classification", bert_small),
          "gpt2-small": ("GPT-2 small (12x768) LM", gpt2_small)}


def step_times(run, steps):
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _recompute(args):
    return "elementwise" if args.recompute else None


def _status_kib(field):
    with open("/proc/self/status") as f:
        return int(re.search(rf"{field}:\s+(\d+)", f.read())[1])


def memory_child(engine, key, args):
    """One engine's peak memory over `steps` steps, in this process."""
    torch.set_num_threads(args.threads)
    model, loss_fn, batch = MODELS[key][1](args.batch, args.seq, args.dropout)
    if engine == "flow":
        step = flow.compile_train(model, loss_fn, batch,
                                  optimizer=flow.optim.AdamW(lr=1e-4),
                                  recompute=_recompute(args),
                                  threads=args.threads)
        run = lambda: step(*batch)  # noqa: E731
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def run():
            opt.zero_grad()
            loss_fn(model, *batch).backward()
            opt.step()
    import gc
    gc.collect()
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    for _ in range(args.steps):
        run()
    print(before, _status_kib("VmHWM"))


def memory(args):
    print("| model | Flow peak MiB | eager peak MiB | eager / Flow | "
          "Flow steps add MiB | eager steps add MiB |")
    for key in args.models.split(","):
        got = {}
        for engine in ("flow", "eager"):
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", engine,
                 "--models", key, "--threads", str(args.threads),
                 "--steps", str(args.steps), "--batch", str(args.batch),
                 "--seq", str(args.seq), "--dropout", str(args.dropout)]
                + (["--recompute"] if args.recompute else []),
                capture_output=True, text=True, check=True)
            before, peak = map(int, out.stdout.split()[-2:])
            got[engine] = (before / 1024, peak / 1024)
        (fb, fp), (eb, ep) = got["flow"], got["eager"]
        print(f"| {MODELS[key][0]} | {fp:.0f} | {ep:.0f} | {ep / fp:.2f} | "
              f"{fp - fb:.0f} | {ep - eb:.0f} |", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--models", default="bert-small,gpt2-small")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--inductor", action="store_true")
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--memory-child", choices=["flow", "eager"])
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--recompute", action="store_true")
    args = parser.parse_args()
    if args.memory_child:
        return memory_child(args.memory_child, args.models, args)
    if args.memory:
        return memory(args)
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}, batch {args.batch}, sequence {args.seq}, "
          f"dropout {args.dropout}, recompute {args.recompute}")
    print("| model | Flow ms | eager ms | eager / Flow |"
          + (" torch.compile ms | compile / Flow |" if args.inductor else ""))
    for key in args.models.split(","):
        title, make = MODELS[key]
        model, loss_fn, batch = make(args.batch, args.seq, args.dropout)
        start = time.perf_counter()
        step = flow.compile_train(model, loss_fn, batch,
                                  optimizer=flow.optim.AdamW(lr=1e-4),
                                  recompute=_recompute(args),
                                  threads=args.threads)
        compile_s = time.perf_counter() - start
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def eager():
            opt.zero_grad()
            loss_fn(model, *batch).backward()
            opt.step()

        compiled = None
        if args.inductor:
            @torch.compile
            def compiled_step():
                opt.zero_grad()
                loss_fn(model, *batch).backward()
                opt.step()
            compiled = compiled_step
            compiled()  # compile outside the timing

        step(*batch)  # first call outside the timing
        eager()
        rounds = {"flow": [], "eager": [], "compile": []}
        for _ in range(args.repeats):
            rounds["flow"].append(step_times(lambda: step(*batch), args.steps))
            rounds["eager"].append(step_times(eager, args.steps))
            if compiled:
                rounds["compile"].append(step_times(compiled, args.steps))
        f = statistics.median(rounds["flow"])
        e = statistics.median(rounds["eager"])
        line = f"| {title} | {f:.0f} | {e:.0f} | {e / f:.2f} |"
        if compiled:
            c = statistics.median(rounds["compile"])
            line += f" {c:.0f} | {c / f:.2f} |"
        print(line + f"  (Flow compile {compile_s:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
