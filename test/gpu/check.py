"""Runs a kit made by prepare.py against PyTorch: numerics, then timings.

    python test/gpu/check.py KIT --flow-run PATH --results FILE
                             [--device cuda|cpu] [--bench] [--budget S]

Needs PyTorch (and transformers/torchvision for BERT and ResNet), not Flow's
compiler. Every case's outcome goes to FILE (a table, then the JSON): pass,
FAIL (with the largest error), or why it did not run. The exit status is 1
when any case that ran failed its tolerance.
"""

import argparse
import json
import lzma
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cases  # noqa: E402


class Clock:
    def __init__(self, budget):
        self.deadline = time.time() + budget

    def left(self):
        return self.deadline - time.time()


def flow_run(args, fbin, inputs, archive, extra, timeout):
    command = [args.flow_run, str(fbin), f"--device={args.device_name}"] + (
        [f"--parameters={archive}"] if archive else []) + [
                   f"--input={p}" for p in inputs] + extra
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=max(timeout, 1))


def torch_ms(fn, device, repeats=20, warmup=3):
    """Median ms per call of fn() on `device` (CUDA events on a GPU)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def parse_flow_times(text):
    """(median wall ms per call, device ms per call in commands, gemm ms)."""
    wall = re.search(r"median ([0-9.e+-]+) ms", text)
    device = re.search(r"profile: ([0-9.e+-]+) ms per call in commands", text)
    gemm = re.search(r"^\s+gemm\s+\d+ commands\s+([0-9.e+-]+) ms", text, re.M)
    value = lambda m: float(m.group(1)) if m else None  # noqa: E731
    return value(wall), value(device), value(gemm)


def reference(case, module, inputs, device):
    module = module.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    if case.precision == "bf16":
        def run():
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                return module(*inputs)
    else:
        def run():
            return module(*inputs)
    return module, inputs, run


def check_case(args, name, entry, kit, work, clock, results):
    case = cases.by_name()[name]
    row = {"case": name, "precision": entry["precision"]}
    results.append(row)
    if "error" in entry:
        row["status"] = "not compiled"
        row["why"] = entry["error"]
        return
    module, inputs = case.build()
    if cases.digest(module.state_dict().values()) != entry["weights_digest"]:
        row["status"] = "ERROR"
        row["why"] = "weights differ from the kit's (deterministic_init)"
        return
    module, inputs = cases.half(module, inputs, case.precision)
    if cases.digest(inputs) != entry["inputs_digest"]:
        row["status"] = "ERROR"
        row["why"] = "inputs differ from the kit's"
        return
    archive = work / entry["archive"][:-3]
    if not archive.exists():
        with lzma.open(kit / entry["archive"]) as f, open(archive, "wb") as o:
            shutil.copyfileobj(f, o, 1 << 24)
    paths = []
    for i, t in enumerate(inputs):
        path = work / f"{name}.in{i}.npy"
        np.save(path, t.numpy())
        paths.append(path)
    out = work / name
    done = flow_run(args, kit / f"{name}.fbin", paths, archive,
                    [f"--output-dir={out}"], clock.left())
    if done.returncode != 0:
        row["status"] = "FAIL"
        row["why"] = done.stderr.strip()[-400:]
        return
    got = torch.from_numpy(np.load(out / "result_0.npy")).float()
    module, dev_inputs, run = reference(case, module, inputs, args.device)
    with torch.no_grad():
        want = run().float().cpu()
    if got.shape != want.shape:
        row["status"] = "FAIL"
        row["why"] = f"shape {tuple(got.shape)}, PyTorch {tuple(want.shape)}"
        return
    error = (got - want).abs()
    # The kit's tolerances (as prepare.py recorded them from cases.py).
    atol, rtol = entry["atol"], entry["rtol"]
    bound = atol + rtol * want.abs()
    row["max_abs_error"] = float(error.max())
    row["max_ref"] = float(want.abs().max())
    row["status"] = "pass" if bool((error <= bound).all()) else "FAIL"
    if row["status"] == "FAIL":
        row["why"] = (f"{int((error > bound).sum())} of {error.numel()} "
                      f"elements outside atol {atol} + rtol {rtol}")
    if not (args.bench and entry["bench"]):
        return
    if clock.left() < 60:
        row["bench"] = "skipped: out of time"
        return
    done = flow_run(args, kit / f"{name}.fbin", paths, archive,
                    ["--iterations=20", "--warmup=3", "--profile"],
                    clock.left())
    wall, device_ms, _ = parse_flow_times(done.stdout)
    row["flow_wall_ms"] = wall
    row["flow_device_ms"] = device_ms
    with torch.no_grad():
        row["eager_ms"] = torch_ms(run, args.device)
        if clock.left() > 120:
            compiled = torch.compile(module)
            if case.precision == "bf16":
                def crun():
                    with torch.autocast(device_type=args.device,
                                        dtype=torch.bfloat16):
                        return compiled(*dev_inputs)
            else:
                def crun():
                    return compiled(*dev_inputs)
            row["compile_ms"] = torch_ms(crun, args.device)
        else:
            row["compile_ms"] = None
    if device_ms:
        row["eager_over_flow"] = row["eager_ms"] / device_ms
        if row["compile_ms"]:
            row["compile_over_flow"] = row["compile_ms"] / device_ms


def save_npy(path, t):
    """`t` (on the CPU) as an .npy flow-run reads; bf16 as 2-byte void."""
    if t.dtype == torch.bfloat16:
        np.save(path, t.view(torch.int16).numpy().view("V2"))
    else:
        np.save(path, t.numpy())


def check_gemm(args, name, entry, kit, work, clock, results):
    tf32 = entry.get("tf32", False)
    row = {"case": name, "precision": "tf32" if tf32 else entry["dtype"]}
    results.append(row)
    if "error" in entry:
        row["status"] = "not compiled"
        row["why"] = entry["error"]
        return
    if clock.left() < 30:
        row["status"] = "skipped: out of time"
        return
    n = entry["n"]
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16,
                   "f32": torch.float32}[entry["dtype"]]
    a = torch.from_numpy(cases.uniform(f"{name}.a", (n, n))).to(torch_dtype)
    b = torch.from_numpy(cases.uniform(f"{name}.b", (n, n))).to(torch_dtype)
    paths = []
    for label, t in (("a", a), ("b", b)):
        path = work / f"{name}.{label}.npy"
        save_npy(path, t)
        paths.append(path)
    done = flow_run(args, kit / f"{name}.fbin", paths, "",
                    ["--iterations=10", "--warmup=2", "--profile"],
                    clock.left())
    if done.returncode != 0:
        row["status"] = "FAIL"
        row["why"] = done.stderr.strip()[-400:]
        return
    _, _, gemm_ms = parse_flow_times(done.stdout)
    flops = 2.0 * n ** 3
    row["status"] = "ran"
    row["flow_tflops"] = flops / (gemm_ms * 1e-3) / 1e12 if gemm_ms else None
    da, db = a.to(args.device), b.to(args.device)
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        ms = torch_ms(lambda: torch.matmul(da, db), args.device)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed
    row["torch_tflops"] = flops / (ms * 1e-3) / 1e12
    if row["flow_tflops"]:
        row["flow_over_torch"] = row["flow_tflops"] / row["torch_tflops"]


MPI_ENV = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")


def check_collectives(args, name, entry, kit, work, clock, results):
    """Every collective kind under `mpirun -np n flow-run` (one GPU per
    process, NCCL), against numpy: f32 without TF32, so only the order of
    the sums differs."""
    n = entry["n"]
    row = {"case": name, "precision": "f32"}
    results.append(row)
    gpus = torch.cuda.device_count() if args.device == "cuda" else n
    mpirun = shutil.which("mpirun")
    if "error" in entry:
        row["status"] = "not compiled"
        row["why"] = entry["error"]
        return
    if gpus < n or not mpirun:
        row["status"] = "skipped"
        row["why"] = (f"needs {n} GPUs, the machine has {gpus}" if gpus < n
                      else "no mpirun on this machine")
        return
    if clock.left() < 30:
        row["status"] = "skipped: out of time"
        return
    inputs = [cases.uniform(f"{name}.{k}", shape).astype(np.float32)
              for k, shape in (("x", (10, 24)), ("w1", (24, 37)),
                               ("w2", (37, 24)))]
    paths = []
    for k, value in zip(("x", "w1", "w2"), inputs):
        paths.append(work / f"{name}.{k}.npy")
        np.save(paths[-1], value)
    out = work / f"{name}-out"
    command = [mpirun, "-np", str(n), args.flow_run, str(kit / f"{name}.fbin"),
               f"--device={args.device_name}", f"--output-dir={out}"] + [
                   f"--input={p}" for p in paths]
    # mpirun's environment without an MPI job's own variables (a process
    # that started MPI, even alone, leaves them to its children, and mpirun
    # then takes itself for a part of that job).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=max(clock.left(), 1),
                          env=dict(env, **MPI_ENV))
    if done.returncode != 0:
        # The ranks' own error lines, not mpirun's notes about aborting.
        lines = [line for line in done.stderr.splitlines()
                 if line.startswith("flow-run")]
        row["status"] = "FAIL"
        row["why"] = (lines[0][:400] if lines else
                      (done.stderr + done.stdout).strip()[-400:] or
                      f"mpirun exited with status {done.returncode}")
        return
    want = cases.collectives_reference(*[v.astype(np.float64)
                                         for v in inputs])
    worst = 0.0
    for i, expected in enumerate(want):
        got = np.load(out / f"result_{i}.npy").astype(np.float64)
        worst = max(worst, float(np.max(np.abs(got - expected) /
                                        (1e-4 + 1e-4 * np.abs(expected)))))
    row["worst_over_tolerance"] = worst
    row["status"] = "ok" if worst <= 1 else "FAIL"


def table(results):
    lines = []
    for r in results:
        figures = " ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in r.items()
            if k not in ("case", "precision", "status", "why"))
        lines.append(f"{r['case']:<22} {r['precision']:<5} "
                     f"{r.get('status', ''):<13} {figures}"
                     + (f"\n    {r['why']}" if "why" in r else ""))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kit", type=Path)
    parser.add_argument("--flow-run", required=True)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--budget", type=float, default=420,
                        help="seconds for the whole check (default 420)")
    args = parser.parse_args()
    # The kit's executables run where flow-run puts them: CUDA executables
    # on the GPU, an emulated kit (the dry run) on the CPU.
    manifest = json.loads((args.kit / "manifest.json").read_text())
    args.device_name = "cpu" if manifest["target"] == "cuda-emulated" else \
        "cuda"
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    clock = Clock(args.budget)
    results = []
    header = {"target": manifest["target"], "gpu_arch": manifest["gpu_arch"],
              "torch": torch.__version__,
              "device": (torch.cuda.get_device_name() if args.device == "cuda"
                         else "cpu")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, entry in manifest["cases"].items():
            try:
                check_case(args, name, entry, args.kit, work, clock, results)
            except subprocess.TimeoutExpired:
                results[-1]["status"] = "FAIL"
                results[-1]["why"] = "flow-run ran out of the time budget"
            print(table(results[-1:]), flush=True)
        for name, entry in manifest["gemm"].items():
            check_gemm(args, name, entry, args.kit, work, clock, results)
            print(table(results[-1:]), flush=True)
        for name, entry in manifest.get("collectives", {}).items():
            try:
                check_collectives(args, name, entry, args.kit, work, clock,
                                  results)
            except subprocess.TimeoutExpired:
                results[-1]["status"] = "FAIL"
                results[-1]["why"] = "mpirun ran out of the time budget"
            print(table(results[-1:]), flush=True)
    args.results.write_text(
        "\n".join(f"{k}: {v}" for k, v in header.items()) + "\n\n" +
        table(results) + "\n\n" +
        json.dumps({"header": header, "results": results}, indent=1) + "\n")
    failed = [r for r in results if r.get("status") in ("FAIL", "ERROR")]
    print(f"{len(results)} results, {len(failed)} failed: {args.results}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
