"""Does the time model rank plans as they run? Plans of a training step on
2 MPI ranks of this machine, modeled (cpu-mpi) and measured.

    python bench/auto_parallel_measured.py [--repeats 3] [--iterations 20]

An MLP training step (two bias-free linear layers with a ReLU between;
SGD; the loss the mean square of the output) in two shapes, a large batch
with small weights and a small batch with large weights, each placed four
ways on a mesh of 2 by `flow.compile_train(..., mesh=2)`: replicated
(every rank computes the whole step), data parallel (the batch split,
weights replicated: compile_train's default), tensor parallel (the first
layer's output features and the second's input features split, Megatron
style) and the auto plan (`auto_parallel=True`). The weights and optimizer
state stay on the ranks between steps, as in training.

For each, the report's modeled step time on `cpu-mpi` (the same program
compiled by flow-compile with --report) and the measured median step time
under `mpirun -np 2` (one thread per rank; the slowest rank; median over
`repeats` runs), OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset. The table
gives both orders and, for every pair of plans the model tells apart (their
modeled times more than `--margin`, 10%, apart), whether the measurement
orders the pair the same way; plans the model times within the margin of
each other are a tie it does not claim to order.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SHAPES = {"large batch, small weights": dict(B=4096, D=256, H=256),
          "small batch, large weights": dict(B=16, D=1024, H=4096)}
PLANS = ("replicated", "data parallel", "tensor parallel", "auto")


def step_arguments(shape, plan):
    """The model, loss, batch and compile_train keywords of a plan."""
    import torch
    import flow
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(shape["D"], shape["H"], bias=False), torch.nn.ReLU(),
        torch.nn.Linear(shape["H"], shape["D"], bias=False))
    batch = (torch.randn(shape["B"], shape["D"]),)
    S = flow.sbp
    kwargs = dict(optimizer=flow.optim.SGD(lr=0.01), mesh=2,
                  mesh_spec="cpu-mpi", threads=1)
    if plan == "replicated":
        kwargs["sbp"] = {0: S.broadcast}
    elif plan == "tensor parallel":
        # torch keeps a linear layer's weight as [out, in].
        kwargs["sbp"] = {0: S.broadcast, "0.weight": S.split(0),
                         "2.weight": S.split(1)}
    elif plan == "auto":
        kwargs["auto_parallel"] = True
    return model, (lambda m, x: (m(x) ** 2).mean()), batch, kwargs


def worker(shape_name, plan, iterations, warmup):
    """Under mpirun: one rank's median step time."""
    import flow
    model, loss_fn, batch, kwargs = step_arguments(SHAPES[shape_name], plan)
    step = flow.compile_train(model, loss_fn, batch, **kwargs)
    for _ in range(warmup):
        step(*batch)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        step(*batch)
        times.append(time.perf_counter() - start)
    print(f"rank {step.rank} median {statistics.median(times) * 1e3:.4f} ms",
          flush=True)


def modeled(shape_name, plan, bin_dir, directory, env):
    """The report's modeled step time (ms) and the collectives' kinds."""
    sys.path.insert(0, HERE)
    from common import training_program
    model, loss_fn, batch, kwargs = step_arguments(SHAPES[shape_name], plan)
    kwargs.pop("threads")
    auto = kwargs.pop("auto_parallel", False)
    spec = kwargs.pop("mesh_spec")
    text = training_program(model, loss_fn, batch, auto_parallel=auto,
                            **kwargs)
    source = os.path.join(directory, "step.mlir")
    with open(source, "w") as f:
        f.write(text)
    report = os.path.join(directory, "report.json")
    subprocess.run([os.path.join(bin_dir, "flow-compile"), source,
                    "-o", os.path.join(directory, "step.fbin"),
                    f"--report={report}", f"--mesh-spec={spec}",
                    *(["--auto-parallel"] if auto else [])],
                   check=True, env=env)
    with open(report) as f:
        r = json.load(f)
    kinds = sorted({c["op"] for c in r["collective_ops"]})
    return r["modeled_plans"][0]["total_seconds"] * 1e3, kinds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--margin", type=float, default=0.10)
    parser.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(ROOT, "build")))
    parser.add_argument("--worker", nargs=2, metavar=("SHAPE", "PLAN"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    if args.worker:
        worker(*args.worker, args.iterations, args.warmup)
        return
    bin_dir = os.path.join(args.build, "bin")
    env = dict(os.environ)
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               FLOW_BUILD_DIR=args.build)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(args.build, "python"), env.get("PYTHONPATH", "")])
    print("| step | plan | modeled ms (cpu-mpi) | measured ms (2 ranks) "
          "| collectives |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for shape_name in SHAPES:
            model_ms, measured_ms = {}, {}
            for plan in PLANS:
                model_ms[plan], kinds = modeled(shape_name, plan, bin_dir, d,
                                                env)
                runs = []
                for _ in range(args.repeats):
                    out = subprocess.run(
                        ["mpirun", "-np", "2", sys.executable,
                         os.path.abspath(__file__), "--build", args.build,
                         "--iterations", str(args.iterations),
                         "--warmup", str(args.warmup),
                         "--worker", shape_name, plan],
                        check=True, capture_output=True, text=True, env=env)
                    ranks = [float(line.split()[3]) for line in
                             out.stdout.splitlines()
                             if line.startswith("rank ")]
                    assert len(ranks) == 2, out.stdout + out.stderr
                    runs.append(max(ranks))
                measured_ms[plan] = statistics.median(runs)
                print(f"| {shape_name} | {plan} | {model_ms[plan]:.2f} | "
                      f"{measured_ms[plan]:.2f} | {', '.join(kinds) or '-'} |",
                      flush=True)
            by_model = sorted(model_ms, key=model_ms.get)
            by_measure = sorted(measured_ms, key=measured_ms.get)
            apart = [(a, b) for i, a in enumerate(by_model)
                     for b in by_model[i + 1:]
                     if model_ms[b] > model_ms[a] * (1 + args.margin)]
            agree = [(a, b) for a, b in apart
                     if measured_ms[a] < measured_ms[b]]
            print(f"| {shape_name} | order | {' < '.join(by_model)} | "
                  f"{' < '.join(by_measure)} | measured agrees on "
                  f"{len(agree)} of the {len(apart)} pairs modeled more "
                  f"than {args.margin:.0%} apart |", flush=True)


if __name__ == "__main__":
    main()
