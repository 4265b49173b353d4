"""Data-parallel training on 2 CPU ranks: flow.compile_train(mesh=2) under
mpirun against Flow in one process, and PyTorch DDP (gloo) against PyTorch
eager in one process, on the same 2 cores.

    python bench/data_parallel_training.py [--models bert-small,gpt2-small]
        [--batch 8] [--seq 128] [--steps 3] [--repeats 2]

A step is forward + backward + AdamW on the global batch (`--batch`), the
models of bench/training.py with random weights. One process runs with 2
threads; 2 ranks (`mpirun -np 2`) run with 1 thread each and split the
batch in two (Flow: the batch `S(0)`, the weights `B`, so each gradient is
all-reduced; PyTorch: DistributedDataParallel over gloo). Each
configuration runs in processes of its own; its time is the median over
`repeats` x `steps` steps after one warm-up step, on rank 0's clock (the
loss of every step is all-reduced, so the ranks finish a step together).

Overlap: Flow's gradient all-reduces start as soon as each gradient is
computed and run on a communication thread while the rest of the backward
pass runs (flow-overlap-collectives); "Flow 2x1 in place" runs the same
executable with FLOW_ASYNC_COLLECTIVES=0, each collective where it starts,
and "overlap" is its time over the overlapped one.

Collective bytes per step: "modeled" is what the compile plans for rank
0's program (each collective of the partitioned IR, counted as the compile
report counts it: the tensor it gathers, exchanges or reduces, per
device); "measured" is the runtime's count for the last step.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def build(name, batch, seq):
    import torch
    sys.path.insert(0, HERE)
    from training import bert_small, gpt2_small
    torch.manual_seed(0)
    make = {"bert-small": bert_small, "gpt2-small": gpt2_small}[name]
    return make(batch, seq)


def modeled_bytes(ir, function):
    """Bytes of each collective of rank 0's program of `function` in
    partitioned flow IR (`function` itself when every device runs one
    program, `function`_r0 when their programs differ)."""
    start = ir.find(f"func.func @{function}(")
    if start < 0:
        start = ir.index(f"func.func @{function}_r0(")
    body = ir[start:]
    body = body[:body.index("\n  }\n")]
    total = 0
    for line in body.splitlines():
        m = re.search(r"flow\.(all_reduce|all_gather|reduce_scatter|"
                      r"all_to_all)\b.*: (.*)$", line)
        if not m:
            continue
        types = re.findall(r"tensor<([^>]*)>", m[2])
        pick = types[0] if m[1] in ("all_reduce", "reduce_scatter") \
            else types[-1]
        *dims, element = pick.split("x")
        n = 1
        for d in dims:
            n *= int(d)
        total += n * {"f32": 4, "i64": 8, "i32": 4, "f16": 2, "bf16": 2,
                      "i1": 1}[element]
    return total


def child(args):
    import torch
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    ranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    threads = 2 // ranks
    torch.set_num_threads(threads)
    model, loss_fn, batch = build(args.model, args.batch, args.seq)
    result = {}
    if args.child == "flow":
        sys.path.insert(0, os.path.join(args.build, "python"))
        import flow
        step = flow.compile_train(model, loss_fn, batch,
                                  optimizer=flow.optim.AdamW(lr=1e-4),
                                  mesh=ranks if ranks > 1 else None,
                                  threads=threads)

        def run():
            step(*batch)
    else:
        if ranks > 1:
            import torch.distributed as dist
            dist.init_process_group(
                "gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                rank=rank, world_size=ranks)
            model = torch.nn.parallel.DistributedDataParallel(model)
            half = args.batch // ranks
            batch = tuple(x[rank * half:(rank + 1) * half] for x in batch)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def run():
            # Through the DDP wrapper on 2 ranks: its hooks all-reduce the
            # gradients during backward.
            optimizer.zero_grad()
            loss_fn(model, *batch).backward()
            optimizer.step()
    run()  # warm-up
    times = []
    for _ in range(args.repeats * args.steps):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    result["ms"] = statistics.median(times)
    if args.child == "flow" and ranks > 1:
        result["measured"] = sum(step.collective_bytes)
        if rank == 0:
            import flow
            ir = flow.compile_ir(step.program.text, "flow")
            result["modeled"] = modeled_bytes(ir, "train_step")
            result["parameter_bytes"] = 4 * sum(
                p.numel() for p in model.parameters() if p.requires_grad)
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)


def launch(args, engine, ranks, model, port, extra_env=None):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine,
           "--model", model, "--batch", str(args.batch), "--seq",
           str(args.seq), "--steps", str(args.steps), "--repeats",
           str(args.repeats), "--build", args.build, "--port", str(port)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    env.update(extra_env or {})
    if ranks > 1:
        env.update(MPI_ENV)
        cmd = ["mpirun", "-np", str(ranks), "--bind-to", "core"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{engine} x{ranks} failed:\n{out.stdout}\n"
                         f"{out.stderr}")
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT"))
    return json.loads(line[len("RESULT "):])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="bert-small,gpt2-small")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--child", choices=["flow", "torch"])
    p.add_argument("--model")
    p.add_argument("--port", type=int, default=29511)
    p.add_argument("--build", default=os.environ.get(
        "FLOW_BUILD_DIR", os.path.join(HERE, "..", "build")))
    args = p.parse_args()
    if args.child:
        return child(args)
    print(f"batch {args.batch} x seq {args.seq}, AdamW; 1 process x 2 "
          "threads vs 2 ranks x 1 thread (ms per step, median)")
    print("| model | Flow 1x2 | Flow 2x1 | speed-up | Flow 2x1 in place | "
          "overlap | eager 1x2 | DDP 2x1 | speed-up | DDP / Flow 2x1 | "
          "collective MiB/step measured / modeled / gradients |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, model in enumerate(args.models.split(",")):
        one = launch(args, "flow", 1, model, 0)
        two = launch(args, "flow", 2, model, 0)
        inline = launch(args, "flow", 2, model, 0,
                        {"FLOW_ASYNC_COLLECTIVES": "0"})
        eager = launch(args, "torch", 1, model, 0)
        ddp = launch(args, "torch", 2, model, args.port + i)
        mib = 1 << 20
        print(f"| {model} | {one['ms']:.0f} | {two['ms']:.0f} | "
              f"{one['ms'] / two['ms']:.2f} | {inline['ms']:.0f} | "
              f"{inline['ms'] / two['ms']:.2f} | {eager['ms']:.0f} | "
              f"{ddp['ms']:.0f} | {eager['ms'] / ddp['ms']:.2f} | "
              f"{ddp['ms'] / two['ms']:.2f} | "
              f"{two['measured'] / mib:.1f} / {two['modeled'] / mib:.1f} / "
              f"{two['parameter_bytes'] / mib:.1f} |", flush=True)


if __name__ == "__main__":
    main()
