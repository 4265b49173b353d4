"""Does the time model rank plans as they run? Plans of a training step on
2 MPI ranks of this machine, modeled (cpu-mpi) and measured.

    python bench/auto_parallel_measured.py [--repeats 3] [--iterations 20]

An MLP training step (SGD; loss the mean square of the output) in two
shapes, a large batch with small weights and a small batch with large
weights, each placed four ways on a mesh of 2: replicated (every rank
computes the whole step), data parallel (the batch split, weights
replicated), tensor parallel (the first weight's columns and the second's
rows split) and the auto plan (`--auto-parallel`). For each, the report's
modeled step time on `cpu-mpi` and the measured median of `flow-run
--iterations` under `mpirun -np 2` (one thread per rank; the slowest
rank; median over `repeats` runs), OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
unset. The table says whether measuring ranks the plans as the model
does.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

STEP = """flow.mesh @m [2]
func.func @step(%x: tensor<{B}x{D}xf32>{xs},
                %w1: tensor<{D}x{H}xf32> {{flow.requires_grad{w1s}}},
                %w2: tensor<{H}x{D}xf32> {{flow.requires_grad{w2s}}}) -> tensor<f32>
    attributes {{flow.mesh = @m, flow.optimizer = {{kind = "sgd"}}}} {{
  %h = flow.matmul %x, %w1 : (tensor<{B}x{D}xf32>, tensor<{D}x{H}xf32>) -> tensor<{B}x{H}xf32>
  %r = flow.relu %h : tensor<{B}x{H}xf32>
  %y = flow.matmul %r, %w2 : (tensor<{B}x{H}xf32>, tensor<{H}x{D}xf32>) -> tensor<{B}x{D}xf32>
  %q = flow.mul %y, %y : (tensor<{B}x{D}xf32>, tensor<{B}x{D}xf32>) -> tensor<{B}x{D}xf32>
  %s = flow.reduce_mean %q [0, 1] : tensor<{B}x{D}xf32> -> tensor<f32>
  return %s : tensor<f32>
}}
"""

SHAPES = {"large batch, small weights": dict(B=4096, D=256, H=256),
          "small batch, large weights": dict(B=16, D=1024, H=4096)}


def sbp(text):
    return f" {{flow.sbp = #flow.sbp<[{text}]>}}" if text else ""


PLANS = {
    "replicated": dict(xs=sbp("B"), w1s=", flow.sbp = #flow.sbp<[B]>",
                       w2s=", flow.sbp = #flow.sbp<[B]>"),
    "data parallel": dict(xs=sbp("S(0)"), w1s=", flow.sbp = #flow.sbp<[B]>",
                          w2s=", flow.sbp = #flow.sbp<[B]>"),
    "tensor parallel": dict(xs=sbp("B"), w1s=", flow.sbp = #flow.sbp<[S(1)]>",
                            w2s=", flow.sbp = #flow.sbp<[S(0)]>"),
    "auto": dict(xs="", w1s="", w2s=""),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(ROOT, "build")))
    args = parser.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    env = dict(os.environ)
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    rng = np.random.default_rng(0)
    print("| step | plan | modeled ms (cpu-mpi) | measured ms (2 ranks) "
          "| collectives |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for shape_name, shape in SHAPES.items():
            inputs = []
            values = [rng.standard_normal((shape["B"], shape["D"])),
                      rng.standard_normal((shape["D"], shape["H"])) * 0.05,
                      rng.standard_normal((shape["H"], shape["D"])) * 0.05,
                      np.float32(0.01)]
            for i, v in enumerate(values):
                path = os.path.join(d, f"in{i}.npy")
                np.save(path, np.asarray(v, np.float32))
                inputs.append(f"--input={path}")
            modeled, measured = {}, {}
            for plan, pins in PLANS.items():
                text = STEP.format(**shape, **pins)
                source = os.path.join(d, "step.mlir")
                with open(source, "w") as f:
                    f.write(text)
                fbin = os.path.join(d, "step.fbin")
                report = os.path.join(d, "report.json")
                flags = ["--auto-parallel"] if plan == "auto" else []
                subprocess.run([os.path.join(bin_dir, "flow-compile"), source,
                                "-o", fbin, f"--report={report}", *flags],
                               check=True, env=env)
                with open(report) as f:
                    r = json.load(f)
                modeled[plan] = r["modeled_plans"][0]["total_seconds"] * 1e3
                kinds = sorted({c["op"] for c in r["collective_ops"]})
                runs = []
                for _ in range(args.repeats):
                    out = subprocess.run(
                        ["mpirun", "-np", "2",
                         os.path.join(bin_dir, "flow-run"), fbin, *inputs,
                         "--threads=1", f"--iterations={args.iterations}",
                         "--warmup=3"],
                        check=True, capture_output=True, text=True, env=env)
                    runs.append(max(float(m) for m in re.findall(
                        r"median ([0-9.]+) ms", out.stdout)))
                measured[plan] = statistics.median(runs)
                print(f"| {shape_name} | {plan} | {modeled[plan]:.2f} | "
                      f"{measured[plan]:.2f} | {', '.join(kinds) or '-'} |",
                      flush=True)
            by_model = sorted(modeled, key=modeled.get)
            by_measure = sorted(measured, key=measured.get)
            print(f"| {shape_name} | order | {' < '.join(by_model)} | "
                  f"{' < '.join(by_measure)} | "
                  f"{'same' if by_model == by_measure else 'differs'} |",
                  flush=True)


if __name__ == "__main__":
    main()
