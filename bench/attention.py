"""Attention as one fused command (the CPU's blocked attention with an
online softmax, the default) against the same op expanded into matmul,
softmax and matmul (fused_attention=False) and PyTorch eager's
scaled_dot_product_attention, same machine, same threads.

    python bench/attention.py [--threads 2] [--repeats 5]

Each case is the attention alone, on random f32 inputs shaped
[batch, heads, length, 64 or 128]. Latency is the median over `repeats`
rounds of each round's median per-call time, every engine once per round
in turn (the order turning from round to round). Ratios are expanded / fused and eager / fused (> 1: fused is
faster). Arena MB is the transient memory each executable plans
(flow-compile --report): the expanded form holds the scores
[batch, heads, lq, lk] (and the probabilities); the fused one holds none.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import torch

from common import BUILD, interleaved_medians

sys.path.insert(0, str(BUILD / "python"))
import flow  # noqa: E402


class Sdpa(torch.nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, *mask):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask[0] if mask else None,
            is_causal=self.causal)


# (label, batch, heads, lq, lk, head size, causal, key padding mask)
CASES = [
    ("BERT-base layer s128 b8, padding mask", 8, 12, 128, 128, 64, False,
     True),
    ("s512 b2, padding mask", 2, 12, 512, 512, 64, False, True),
    ("prefill s2048 b1, causal", 1, 12, 2048, 2048, 64, True, False),
    ("decode 1 x 2048 keys, b4, 32 heads of 128", 4, 32, 1, 2048, 128,
     False, False),
]


def arena_mb(compiled, fused, workdir):
    source = Path(workdir) / f"{fused}.mlir"
    source.write_text(compiled.text)
    report = Path(workdir) / f"{fused}.json"
    subprocess.run([str(BUILD / "bin" / "flow-compile"), str(source), "-o",
                    str(Path(workdir) / f"{fused}.fbin"),
                    f"--fused-attention={'true' if fused else 'false'}",
                    f"--report={report}"], check=True)
    return json.loads(report.read_text())["arena_bytes"] / 2**20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--cases", default="",
                        help="comma-separated case numbers (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    cases = CASES if not args.cases else [
        CASES[int(i)] for i in args.cases.split(",")]
    rows = []
    for label, b, h, lq, lk, d, causal, padded in cases:
        g = torch.Generator().manual_seed(0)
        inputs = [torch.randn(b, h, lq, d, generator=g),
                  torch.randn(b, h, lk, d, generator=g),
                  torch.randn(b, h, lk, d, generator=g)]
        if padded:
            mask = torch.ones(b, 1, 1, lk, dtype=torch.bool)
            mask[:, ..., lk - lk // 4:] = False
            inputs.append(mask)
        model = Sdpa(causal).eval()
        runners, memory = {}, {}
        with tempfile.TemporaryDirectory() as tmp:
            for name, fused in (("fused", True), ("expanded", False)):
                compiled = flow.compile(model, tuple(inputs),
                                        threads=args.threads,
                                        fused_attention=fused)
                memory[name] = arena_mb(compiled, fused, tmp)
                runners[name] = (lambda c: lambda: c(*inputs))(compiled)

        def eager():
            with torch.no_grad():
                return model(*inputs)
        runners["eager"] = eager
        row = interleaved_medians(runners, args.repeats, args.iterations)
        row.update({f"{name}_mb": mb for name, mb in memory.items()})
        row["case"] = label
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    info = flow.blas_info()
    print(f"Threads: {args.threads}; medians of {args.repeats} rounds of "
          f"{args.iterations} calls. Flow's block products: "
          f"{info['gemm_library']}.\n")
    print("| case | fused ms | expanded ms | eager ms | expanded/fused | "
          "eager/fused | arena MB fused | expanded |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['fused']:.2f} | {r['expanded']:.2f} | "
              f"{r['eager']:.2f} | {r['expanded'] / r['fused']:.2f} | "
              f"{r['eager'] / r['fused']:.2f} | {r['fused_mb']:.1f} | "
              f"{r['expanded_mb']:.1f} |")


if __name__ == "__main__":
    main()
