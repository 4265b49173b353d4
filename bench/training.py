"""Training step time on the CPU: flow.compile_train against PyTorch eager
(forward, backward, torch.optim.AdamW), same machine, same threads, and
optionally torch.compile (AOTAutograd + Inductor on the same step).

    python bench/training.py [--threads 2] [--repeats 3] [--steps 3]
        [--models bert-small,gpt2-small] [--batch 8] [--seq 128] [--inductor]

Models have random weights and dropout 0 (Flow refuses dropout in training
for now): a BERT-small-sized encoder (4 layers, hidden 512, 8 heads, a
sequence-classification loss) and a GPT-2-small-sized decoder (12 layers,
hidden 768, language-modelling loss). A step is forward + backward + AdamW
(+ zero_grad for torch). The time is the median over `repeats` rounds of
each round's median step time over `steps` steps; the engines alternate in
every round. Ratios are torch / Flow: > 1 means Flow is faster. Peak memory
is not measured here yet.
"""

import argparse
import statistics
import sys
import time

import torch

from common import BUILD

sys.path.insert(0, str(BUILD / "python"))
import flow  # noqa: E402


def bert_small(batch, seq):
    import transformers
    config = transformers.BertConfig(
        hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
        intermediate_size=2048, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, num_labels=4,
        attn_implementation="sdpa")
    model = transformers.BertForSequenceClassification(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    labels = torch.randint(0, 4, (batch,))
    return model, (lambda m, i, l: m(input_ids=i, labels=l).loss), (ids, labels)


def gpt2_small(batch, seq):
    import transformers
    config = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0,
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--models", default="bert-small,gpt2-small")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--inductor", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}, batch {args.batch}, sequence {args.seq}")
    print("| model | Flow ms | eager ms | eager / Flow |"
          + (" torch.compile ms | compile / Flow |" if args.inductor else ""))
    for key in args.models.split(","):
        title, make = MODELS[key]
        model, loss_fn, batch = make(args.batch, args.seq)
        start = time.perf_counter()
        step = flow.compile_train(model, loss_fn, batch,
                                  optimizer=flow.optim.AdamW(lr=1e-4),
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
