"""Tensor-parallel inference: the weights each process holds and the time
per call, Megatron placements on 1, 2 and 4 processes.

    python bench/tensor_parallel.py [--calls 20] [--repeats 3] [--ranks 1,2,4]

Models (random weights, `torch.manual_seed(0)`): an MLP E-4E-E and a
pre-norm transformer block (standard attention: heads reshaped and
transposed), E = 512, 8 heads, batch 8 x 128 tokens. Megatron placements
by weight name: the first linear (and q, k, v) split by output rows, the
second (and the attention output) by input columns.

Each configuration runs in fresh processes: one process with every core
(`threads=0`) and the model on one device, then `mpirun -np p` with one
thread per process (p x 1 thread: on this 2-core machine 4 processes
share 2 cores). The figures are medians of `repeats` runs of `calls`
calls; `weights` is `compiled.module.parameter_bytes` on each rank (its
pieces of split weights plus what it reads whole), against the model's
whole weights. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the
environment, as a user's machine would not set them.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
E, HEADS, BATCH, TOKENS = 512, 8, 8, 128


def models():
    import torch

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (torch.nn.Linear(E, E)
                                              for _ in range(4))

        def forward(self, x):
            b, s, _ = x.shape
            heads = lambda t: t.view(b, s, HEADS, E // HEADS).transpose(1, 2)
            q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
            a = (q @ k.transpose(-2, -1) / math.sqrt(E // HEADS)).softmax(-1)
            return self.o((a @ v).transpose(1, 2).reshape(b, s, E))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(E), torch.nn.LayerNorm(E)
            self.attn = Attention()
            self.fc1 = torch.nn.Linear(E, 4 * E)
            self.fc2 = torch.nn.Linear(4 * E, E)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(torch.nn.functional.gelu(
                self.fc1(self.ln2(x))))

    def mlp():
        return torch.nn.Sequential(torch.nn.Linear(E, 4 * E), torch.nn.GELU(),
                                   torch.nn.Linear(4 * E, E))

    import flow
    s0, s1 = flow.sbp.split(0), flow.sbp.split(1)
    block_sbp = {f"attn.{n}.{w}": s0 for n in "qkv" for w in ("weight", "bias")}
    block_sbp.update({"attn.o.weight": s1, "fc1.weight": s0, "fc1.bias": s0,
                      "fc2.weight": s1})
    return {
        "MLP 512-2048-512": (mlp, {"0.weight": s0, "0.bias": s0,
                                   "2.weight": s1}),
        "transformer block (8 heads)": (Block, block_sbp),
    }


def worker(name, ranks, calls, repeats, out):
    import torch
    import flow
    torch.manual_seed(0)
    make, sbp = models()[name]
    model = make().eval()
    x = torch.randn(BATCH, TOKENS, E)
    if ranks == 1:
        compiled = flow.compile(model, (x,), threads=0)
    else:
        compiled = flow.compile(model, (x,), mesh=ranks, sbp=sbp, threads=1)
    with torch.no_grad():
        want = model(x)
    got = compiled(x)
    err = float((got - want).abs().max() / want.abs().max())
    times = []
    for _ in range(repeats):
        compiled(x)
        start = time.perf_counter()
        for _ in range(calls):
            compiled(x)
        times.append((time.perf_counter() - start) / calls * 1e3)
    whole = sum(p.numel() * p.element_size() for p in model.parameters())
    # One file per rank (mpirun may merge the ranks' printed lines).
    with open(f"{out}.{compiled.module.rank}", "w") as f:
        json.dump({"rank": compiled.module.rank,
                   "weights": compiled.module.parameter_bytes,
                   "whole": whole, "ms": statistics.median(times),
                   "err": err}, f)


def run(name, ranks, args):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env.update(MPI_ENV)
    env["PYTHONPATH"] = os.path.join(args.build, "python")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result")
        command = [sys.executable, __file__, "--worker", name, "--ranks",
                   str(ranks), "--calls", str(args.calls), "--repeats",
                   str(args.repeats), "--out", out]
        if ranks > 1:
            command = ["mpirun", "-np", str(ranks)] + command
        done = subprocess.run(command, capture_output=True, text=True,
                              env=env, timeout=1800)
        if done.returncode != 0:
            sys.exit(done.stderr[-4000:] or done.stdout[-4000:])
        rows = []
        for rank in range(ranks):
            with open(f"{out}.{rank}") as f:
                rows.append(json.load(f))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--worker")
    parser.add_argument("--out")
    parser.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(ROOT, "build")))
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, int(args.ranks), args.calls, args.repeats,
                      args.out)
    print("| model | processes x threads | ms per call | weights per rank, "
          "bytes | of the whole | max error vs eager |")
    print("|---|---|---|---|---|---|")
    for name in models():
        for ranks in [int(r) for r in args.ranks.split(",")]:
            rows = run(name, ranks, args)
            held = [r["weights"] for r in rows]
            whole = rows[0]["whole"]
            print(f"| {name} | {ranks} x {'all' if ranks == 1 else 1} | "
                  f"{max(r['ms'] for r in rows):.1f} | "
                  f"{min(held):,}-{max(held):,} | "
                  f"{max(held) / whole:.3f} | "
                  f"{max(r['err'] for r in rows):.1e} |", flush=True)


if __name__ == "__main__":
    main()
