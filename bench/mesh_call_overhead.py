"""What a call of a mesh executable costs beyond its kernels: the same small
function compiled for one device and for a mesh of 2, run side by side.

    python bench/mesh_call_overhead.py [--iterations 5000] [--repeats 3]

The function is one element-wise op on an `--rows` x 16 f32 tensor (a
kernel of about a microsecond), so the time per call is the runtime's own
work. One device: `flow-run --iterations` in one process. Mesh of 2: the
same function with its input and output split `S(0)`, under `mpirun -np 2`
(1 thread per rank): each call checks that the processes passed the same
inputs (a digest of each input, gathered from every rank), slices this
rank's piece of every input, runs, and gathers the output's pieces on every
rank (an all-gather). A mesh with a B input and a partial output reduced
(an all-reduce) is the third line. Times are medians of `repeats` runs of
`iterations` calls each (flow-run's median per call).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

PROGRAMS = {
    "one device": """
func.func @f(%x: tensor<{r}x16xf32>) -> tensor<{r}x16xf32> {{
  %y = flow.relu %x : tensor<{r}x16xf32>
  return %y : tensor<{r}x16xf32>
}}""",
    "mesh of 2, S(0) in and out": """
flow.mesh @mesh [2]
func.func @f(%x: tensor<{r}x16xf32> {{flow.sbp = #flow.sbp<[S(0)]>}})
    -> (tensor<{r}x16xf32> {{flow.sbp = #flow.sbp<[S(0)]>}})
    attributes {{flow.mesh = @mesh}} {{
  %y = flow.relu %x : tensor<{r}x16xf32>
  return %y : tensor<{r}x16xf32>
}}""",
    "mesh of 2, B in, all-reduce out": """
flow.mesh @mesh [2]
func.func @f(%x: tensor<{r}x16xf32> {{flow.sbp = #flow.sbp<[B]>}})
    -> (tensor<{r}x16xf32> {{flow.sbp = #flow.sbp<[B]>}})
    attributes {{flow.mesh = @mesh}} {{
  %p = flow.annotate %x as #flow.sbp<[P]> on @mesh : tensor<{r}x16xf32>
  %y = flow.annotate %p as #flow.sbp<[B]> on @mesh : tensor<{r}x16xf32>
  return %y : tensor<{r}x16xf32>
}}""",
}


def median_us(command, env):
    done = subprocess.run(command, capture_output=True, text=True, env=env,
                          timeout=600)
    if done.returncode != 0:
        sys.exit(done.stderr or done.stdout)
    return 1e3 * float(re.search(r"median ([\d.e+-]+) ms", done.stdout)[1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(ROOT, "build")))
    args = parser.parse_args()
    env = dict(os.environ, **MPI_ENV)
    tools = os.path.join(args.build, "bin")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        x = os.path.join(tmp, "x.npy")
        np.save(x, np.ones((args.rows, 16), np.float32))
        for name, text in PROGRAMS.items():
            src, fbin = os.path.join(tmp, "f.mlir"), os.path.join(tmp, "f.fbin")
            with open(src, "w") as f:
                f.write(text.format(r=args.rows))
            subprocess.run([os.path.join(tools, "flow-compile"), src, "-o",
                            fbin], check=True)
            run = [os.path.join(tools, "flow-run"), fbin, f"--input={x}",
                   f"--iterations={args.iterations}", "--warmup=100",
                   "--threads=1"]
            if "mesh" in name:
                run = ["mpirun", "-np", "2"] + run
            times = [median_us(run, env) for _ in range(args.repeats)]
            rows.append((name, statistics.median(times)))
    base = rows[0][1]
    print(f"{args.rows}x16 f32, 1 thread per process, median of "
          f"{args.repeats} x {args.iterations} calls")
    print("| executable | us per call | beyond one device, us |")
    print("|---|---|---|")
    for name, us in rows:
        print(f"| {name} | {us:.2f} | {us - base:.2f} |")


if __name__ == "__main__":
    main()
