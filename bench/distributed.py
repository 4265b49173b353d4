"""Data-parallel throughput on 2 and 4 MPI ranks (one process per device)
against one process using all the cores, and the communication volume per
step against the formula.

    python bench/distributed.py [--repeats 3] [--iterations 20]

The MLP (784-1024-1024-10, batch 256) and the encoder layer (batch 8,
sequence 128, width 256) are global programs with only the batch marked
S(0); `flow-compile --mesh=N` partitions them and `mpirun -np N flow-run`
runs them with one thread per rank. The baseline is the unpartitioned
program in one process with one thread per core (what a user runs without
a mesh); one process of one thread is shown too. Speed-up is against the
baseline. Throughput is samples per second from the median call time
(medians of `repeats` runs). The only collective of
data-parallel inference gathers the result: T (N - 1) bytes in all for a
result of T bytes (SBP.md's S -> B cost), T (N - 1) / N per rank; the
runtime's count (flow-run --stats) is printed next to the formula.
"""

import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile

import numpy as np

from common import BIN
from models import encoder_mlir, mlp_mlir

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def with_batch_split(text):
    """Marks the first argument S(0) (the batch)."""
    return re.sub(r"(\(%x: tensor<[^>]*>)", r"\1 {flow.sbp = #flow.sbp<[S(0)]>}",
                  text, count=1)


def run(ranks, fbin, inputs, iterations, stats=False, threads=1):
    cmd = [str(BIN / "flow-run"), str(fbin), *inputs, f"--threads={threads}",
           f"--iterations={iterations}", "--warmup=3"]
    if stats:
        cmd.append("--stats")
    if ranks > 1:
        cmd = [shutil.which("mpirun"), "-np", str(ranks), *cmd]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=ENV).stdout
    median = float(re.search(r"median ([0-9.]+) ms", out).group(1))
    moved = [int(b) for b in re.findall(r"rank 0 collective \d+: (\d+) bytes",
                                        out)]
    return median, moved


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--iterations", type=int, default=20)
    args = p.parse_args()
    models = [("MLP b256", mlp_mlir(256, [784, 1024, 1024, 10]).replace(
        "@mlp(", "@forward("), [(256, 784), (784, 1024), (1024,),
                                (1024, 1024), (1024,), (1024, 10), (10,)],
        256, 256 * 10 * 4)]
    enc, shapes = encoder_mlir(8, 128, 256, 4, 1024)
    models.append(("encoder b8 s128 d256", enc, shapes, 8, 8 * 128 * 256 * 4))
    cores = os.cpu_count()
    print("| model | processes x threads | ms per step | samples/s | "
          "speed-up | gathered bytes per rank (formula) | measured |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, text, shapes, batch, result_bytes in models:
            inputs = []
            for i, s in enumerate(shapes):
                path = tmp / f"in{i}.npy"
                np.save(path, (rng.standard_normal(s) * 0.1).astype(np.float32))
                inputs.append(f"--input={path}")
            base = None
            for ranks, threads in ((1, cores), (1, 1), (2, 1), (4, 1)):
                src = tmp / "m.mlir"
                src.write_text(with_batch_split(text) if ranks > 1 else text)
                fbin = tmp / f"m{ranks}.fbin"
                flags = [f"--mesh={ranks}"] if ranks > 1 else []
                subprocess.run([str(BIN / "flow-compile"), str(src), "-o",
                                str(fbin), *flags], check=True)
                times = []
                moved = []
                for _ in range(args.repeats):
                    t, moved = run(ranks, fbin, inputs, args.iterations,
                                   stats=ranks > 1, threads=threads)
                    times.append(t)
                ms = statistics.median(times)
                base = base or ms
                formula = result_bytes * (ranks - 1) // ranks
                measured = sum(moved) - (result_bytes // ranks if moved else 0)
                print(f"| {name} | {ranks} x {threads} | {ms:.2f} | {batch * 1000 / ms:.0f} "
                      f"| {base / ms:.2f} | {formula} | "
                      f"{measured if ranks > 1 else 0} |", flush=True)


if __name__ == "__main__":
    main()
