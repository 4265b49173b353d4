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


def can_run(row, entry, clock, results):
    """Records `row`; False (with the reason in it) when the kit could not
    compile the case or the time is nearly up."""
    results.append(row)
    if "error" in entry:
        row["status"] = "not compiled"
        row["why"] = entry["error"]
        return False
    if clock.left() < 30:
        row["status"] = "skipped: out of time"
        return False
    return True


def check_gemm(args, name, entry, kit, work, clock, results):
    tf32 = entry.get("tf32", False)
    row = {"case": name, "precision": "tf32" if tf32 else entry["dtype"]}
    if not can_run(row, entry, clock, results):
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


def read_safetensors(path):
    """{name: array} of a safetensors file (the formats Flow writes)."""
    data = Path(path).read_bytes()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    types = {"F32": np.float32, "I64": np.int64, "F16": np.float16,
             "I32": np.int32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(
            data[8 + size + begin:8 + size + end],
            dtype=types[info["dtype"]]).reshape(info["shape"])
    return out


def check_training(args, name, entry, kit, work, clock, results):
    """`flow-run --steps` of a training step (AdamW, clipping, a learning
    rate per step), the state resident on the device between steps: the
    losses and final parameters against torch.optim.AdamW on the device
    (f32, no TF32: only the order of sums differs; losses within 1e-4
    relative, weights rtol 1e-4 + atol 1e-5: on the CPU Flow is within
    4e-7 of a float64 run, weights ~0.06), and 4 + 6 steps through a saved
    and reloaded state equal 10 steps bit for bit."""
    row = {"case": name, "precision": "f32"}
    if not can_run(row, entry, clock, results):
        return
    params, batches, lrs = cases.training_problem()
    for k, ((x, t), lr) in enumerate(zip(batches, lrs)):
        # Steps 4.. again from 0, for the resumed run.
        for folder, index in (("all", k), ("late", k - 4)):
            if index < 0:
                continue
            (work / folder).mkdir(exist_ok=True)
            np.save(work / folder / f"x{index}.npy", x)
            np.save(work / folder / f"t{index}.npy", t)
            np.save(work / folder / f"lr{index}.npy", np.float32(lr))

    def steps(folder, count, state, save):
        done = subprocess.run(
            [args.flow_run, str(kit / f"{name}.fbin"),
             f"--device={args.device_name}", f"--steps={count}",
             f"--state={state}", f"--save-state={save}",
             f"--input={work / folder}/x{{step}}.npy",
             f"--input={work / folder}/t{{step}}.npy",
             f"--input={work / folder}/lr{{step}}.npy"],
            capture_output=True, text=True, timeout=max(clock.left(), 1))
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip()[-400:])
        return [float(v) for v in re.findall(
            r"^step \d+: .* result 0 = (\S+)$", done.stdout, re.M)]

    init = kit / f"{name}.init.safetensors"
    try:
        losses = steps("all", len(batches), init, work / "ten.st")
        steps("all", 4, init, work / "four.st")
        steps("late", len(batches) - 4, work / "four.st", work / "resumed.st")
    except RuntimeError as e:
        row["status"] = "FAIL"
        row["why"] = str(e)
        return
    want_losses, want = cases.training_reference(params, batches, lrs,
                                                 args.device)
    got, resumed = (read_safetensors(work / "ten.st"),
                    read_safetensors(work / "resumed.st"))
    problems = []
    if len(losses) != len(want_losses):
        problems.append(f"{len(losses)} losses printed, "
                        f"{len(want_losses)} steps run")
    else:
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, want_losses))
        row["loss_rel_error"] = worst
        if worst > 1e-4:
            problems.append(f"losses differ by {worst:.2e} relative")
    for k in cases.TRAIN_NAMES:
        error = np.abs(got[k] - want[k])
        if (error > 1e-5 + 1e-4 * np.abs(want[k])).any():
            problems.append(f"{k} off by up to {error.max():.2e}")
    row["max_weight_error"] = max(float(np.abs(got[k] - want[k]).max())
                                  for k in cases.TRAIN_NAMES)
    if int(got["optimizer.step"]) != len(batches):
        problems.append(f"optimizer.step is {int(got['optimizer.step'])}")
    differ = [k for k in got if not np.array_equal(got[k], resumed[k])]
    if differ:
        problems.append("resumed from step 4, " + ", ".join(differ) +
                        " differ from 10 uninterrupted steps")
    row["status"] = "FAIL" if problems else "pass"
    if problems:
        row["why"] = "; ".join(problems)


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
        # Each section's checker, and what ran out of time when one did.
        sections = [("cases", check_case, "flow-run"),
                    ("gemm", check_gemm, "flow-run"),
                    ("training", check_training, "flow-run"),
                    ("collectives", check_collectives, "mpirun")]
        for section, check, runner in sections:
            for name, entry in manifest.get(section, {}).items():
                try:
                    check(args, name, entry, args.kit, work, clock, results)
                except subprocess.TimeoutExpired:
                    results[-1]["status"] = "FAIL"
                    results[-1]["why"] = f"{runner} ran out of the time budget"
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
