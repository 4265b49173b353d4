"""Products of one input by several weights joined into one GEMM
(flow-fuse-sibling-matmuls, --sibling-matmuls=true; off by default): Flow
with the join, Flow without it and PyTorch eager, same machine, same
threads.

    python bench/joined_projections.py [--threads 2] [--repeats 5]

Models have random weights: Hugging Face BERT-base (12 layers, hidden 768,
sequence 128; q, k and v join) at batch 1 and 8, and a LLaMA-style decoder
MLP (hidden 2048, 5632 intermediate; gate and up join) on 1 and 32 tokens.
Latency is the median over `repeats` rounds of each round's median per-call
time, every engine once per round in turn. Ratios are apart / joined (> 1:
the join is faster) and eager / joined. Parameter MB is what the
executable binds (compiled.module.parameter_bytes): weights read in place
from the archive and the joined copies made at load; a part read in place
is released once copied (its pages are dropped, read back only if another
command reads it).
"""

import argparse
import os
import sys
import tempfile
import warnings

import torch

from common import BUILD, interleaved_medians

sys.path.insert(0, str(BUILD / "python"))
import flow  # noqa: E402


def bert(batch):
    import transformers
    config = transformers.BertConfig(attn_implementation="sdpa")
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    return model, (torch.randint(0, config.vocab_size, (batch, 128)),)


class GatedMlp(torch.nn.Module):
    def __init__(self, d=2048, hidden=5632):
        super().__init__()
        self.gate = torch.nn.Linear(d, hidden, bias=False)
        self.up = torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def mlp(tokens):
    return GatedMlp().eval(), (torch.randn(1, tokens, 2048),)


CASES_ALL = [("BERT-base s128 b1", bert, 1), ("BERT-base s128 b8", bert, 8),
         ("gated MLP 2048x5632, 1 token", mlp, 1),
         ("gated MLP 2048x5632, 32 tokens", mlp, 32)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="",
                        help="comma-separated case numbers (default: all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    rows = []
    cases = CASES_ALL if not args.cases else [
        CASES_ALL[int(i)] for i in args.cases.split(",")]
    for label, make, size in cases:
        torch.manual_seed(0)
        model, inputs = make(size)
        with tempfile.TemporaryDirectory() as tmp:
            runners, memory = {}, {}
            for name, joined in (("joined", True), ("apart", False)):
                compiled = flow.compile(
                    model, inputs, threads=args.threads,
                    sibling_matmuls=joined,
                    parameters=os.path.join(tmp, f"{name}.safetensors"))
                memory[name] = compiled.module.parameter_bytes / 2**20
                runners[name] = (lambda c: lambda: c(*inputs))(compiled)

            def eager():
                with torch.no_grad():
                    return model(*inputs)
            runners["eager"] = eager
            row = interleaved_medians(runners, args.repeats,
                                      args.iterations)
            row.update({f"{name}_mb": mb for name, mb in memory.items()})
        row["model"] = label
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    info = flow.blas_info()
    print(f"Threads: {args.threads}; medians of {args.repeats} rounds of "
          f"{args.iterations} calls. Flow's GEMMs: {info['gemm_library']} "
          f"({info['gemm_kernels']}).\n")
    print("| model | joined ms | apart ms | eager ms | apart/joined | "
          "eager/joined | parameter MB joined | apart |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['joined']:.2f} | {r['apart']:.2f} | "
              f"{r['eager']:.2f} | {r['apart'] / r['joined']:.3f} | "
              f"{r['eager'] / r['joined']:.2f} | {r['joined_mb']:.0f} | "
              f"{r['apart_mb']:.0f} |")


if __name__ == "__main__":
    main()
