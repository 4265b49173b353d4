"""Runs a kit made by prepare.py against PyTorch: numerics, then timings.

    python test/gpu/check.py KIT --flow-run PATH --results RESULTS
                             [--device cuda|cpu] [--bench] [--quick]
                             [--budget S] [--check-budget S]
                             [--bench-budget S] [--compile-budget S]
                             [--unavailable LIB=WHY] [--note KEY=VALUE]

Needs PyTorch (and transformers/torchvision for BERT and ResNet), not Flow's
compiler. Three sections run one after the other, each within its own time
budget: every correctness check (each case's output against PyTorch, the
GEMMs, the training step, the collectives), then the benchmarks (Flow
against eager PyTorch, GEMM TFLOP/s against torch.matmul), then
torch.compile (last: its compile time can take no time from the others).

Every case is isolated: a case that raises is recorded as FAIL with its
error and the last lines of its traceback, and the next case runs. Each
outcome is appended to RESULTS as one JSON line as soon as it is known, so a
run that is killed keeps what finished: pass, FAIL (with why), ERROR (the
kit and this machine built different weights or inputs), skipped (with why:
a package such as transformers is not importable, a library the runtime
needs is missing, too few GPUs), not compiled (the kit's error), or
"not run (time)" (its section's budget ran out before or while it ran). At
the end a summary table (Markdown) is printed and written next to
RESULTS (with the suffix .md). The exit status is 1 when any case failed
(or when PyTorch does not import: then every case is skipped).
"""

import argparse
import json
import lzma
import os
import re
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: numpy, torch and cases.py, imported by main() so that a machine without
#: them still gets a results file saying so.
np = torch = cases = None

#: Budgets in seconds (section: full run, --quick). The full run, the
#: runtime build included, fits in 7 minutes on one H100 and --quick in 3
#: (test/gpu/run.sh passes --budget for what is left after the build).
BUDGETS = {"check": (180, 75), "bench": (90, 35), "compile": (90, 50)}
#: Timed calls per measurement (full run, --quick) and warm-up calls.
REPEATS = (20, 10)
WARMUP = (3, 2)
#: A case starts only with this many seconds of its section left.
MIN_START = 2.0
#: Statuses that count as failures.
FAILED = ("FAIL", "ERROR")
NOT_RUN = "not run (time)"
#: Marks the torch.compile child's result lines on its standard output.
CHILD_MARK = "@flow-check "


class OutOfTime(Exception):
    """A section's budget ran out while a case ran."""


class Stopped(Exception):
    """The check was told to stop (SIGTERM from run.sh's time limit)."""


def on_sigterm(signum, frame):
    raise Stopped("check.py was stopped (SIGTERM)")


class Section:
    """A section's deadline: its own budget, within the whole check's."""

    def __init__(self, name, budget, overall):
        self.name = name
        self.budget = budget
        self.start = time.time()
        self.deadline = min(self.start + budget, overall)

    def left(self):
        return self.deadline - time.time()


def run_process(command, timeout, env=None):
    """subprocess.run(command) in a process group of its own, killed whole
    (mpirun's ranks, a script's children) when `timeout` passes or the
    check is stopped; raises OutOfTime on the timeout."""
    if timeout <= 0:
        raise OutOfTime("no time was left to start it")
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        raise OutOfTime(f"{Path(command[0]).name} was stopped after "
                        f"{timeout:.0f} s") from None
    except BaseException:
        kill_group(process)
        raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def last_frames(error, count=5):
    """The last `count` frames of `error`'s traceback, one line each
    (file:line in function: source), then the error itself."""
    frames = traceback.extract_tb(error.__traceback__)[-count:]
    lines = [f"{Path(f.filename).name}:{f.lineno} in {f.name}: "
             f"{(f.line or '').strip()}" for f in frames]
    return "\n".join(lines + [f"{type(error).__name__}: {error}"])[-1500:]


def tail(text, lines=6, chars=600):
    """The last lines of `text` (an error's most telling part)."""
    kept = "\n".join(text.strip().splitlines()[-lines:])
    return kept[-chars:]


class Results:
    """The results file: a header line, then one JSON line per outcome
    (flushed as it comes), then a summary line; and the Markdown table."""

    def __init__(self, path):
        self.path = path
        self.table_path = (path.with_suffix(".md") if path.suffix != ".md"
                           else path.with_name(path.name + ".table.md"))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "w")
        self.rows = []
        self.header = {}
        self.start = time.time()

    def write(self, record):
        self.file.write(json.dumps(record, default=str) + "\n")
        self.file.flush()

    def set_header(self, header):
        self.header = header
        self.write({"record": "header", **header})

    def add(self, row):
        self.rows.append(row)
        self.write(row)
        print(text_line(row), flush=True)

    def finish(self, sections):
        counts = {}
        for row in self.rows:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        summary = {"record": "summary", "counts": counts,
                   "failed": sum(counts.get(s, 0) for s in FAILED),
                   "seconds": round(time.time() - self.start, 1),
                   "section_seconds": sections}
        self.write(summary)
        self.file.close()
        table = markdown(self.header, self.rows, summary)
        self.table_path.write_text(table)
        print("\n" + table, flush=True)
        return summary


SECTION_TITLES = {"check": "Correctness", "bench": "Benchmarks",
                  "compile": "torch.compile"}
#: Row keys that are not figures.
ROW_KEYS = ("record", "section", "case", "precision", "status", "why",
            "traceback")


def figures(row):
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in row.items()
                    if k not in ROW_KEYS and v is not None)


def text_line(row):
    return (f"{row['section']:<8} {row['case']:<22} {row['precision']:<5} "
            f"{row['status']:<14} {figures(row)}"
            + (f"\n    {row['why']}" if row.get("why") else ""))


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", "<br>")


def markdown(header, rows, summary):
    lines = ["# Flow GPU check", ""]
    lines += [f"- {k}: {cell(v)}" for k, v in header.items()]
    for section, title in SECTION_TITLES.items():
        chosen = [r for r in rows if r["section"] == section]
        if not chosen:
            continue
        lines += ["", f"## {title}", "",
                  "| case | precision | status | figures | why |",
                  "|---|---|---|---|---|"]
        # A failure's traceback (its last frames) goes with its reason.
        lines += [f"| {r['case']} | {r['precision']} | {r['status']} | "
                  f"{cell(figures(r))} | "
                  f"{cell(r.get('traceback') or r.get('why', ''))} |"
                  for r in chosen]
    counts = ", ".join(f"{n} {s}" for s, n in sorted(summary["counts"].items()))
    lines += ["", f"{len(rows)} results ({counts or 'none'}), "
                  f"{summary['failed']} failed, {summary['seconds']} s", ""]
    return "\n".join(lines)


def flow_command(args, fbin, inputs, archive, extra):
    return [args.flow_run, str(fbin), f"--device={args.device_name}"] + (
        [f"--parameters={archive}"] if archive else []) + [
                   f"--input={p}" for p in inputs] + extra


def torch_ms(fn, device, repeats, warmup):
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


def load_npy(path):
    """An output of flow-run as a float32 tensor (bf16 comes as 2-byte
    void)."""
    array = np.load(path)
    if array.dtype.kind == "V" and array.dtype.itemsize == 2:
        return torch.from_numpy(array.view(np.int16).copy()).view(
            torch.bfloat16).float()
    return torch.from_numpy(array).float()


def save_npy(path, t):
    """`t` (on the CPU) as an .npy flow-run reads; bf16 as 2-byte void."""
    if t.dtype == torch.bfloat16:
        np.save(path, t.view(torch.int16).numpy().view("V2"))
    else:
        np.save(path, t.numpy())


def reference(case, module, inputs, device):
    """The module on `device` and a function running it as the case's
    precision runs it in PyTorch (bf16: autocast)."""
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


def flow_failed(args, row, done, libraries=()):
    """Records flow-run's failure in `row`: skipped when it names a library
    run.sh found missing, else FAIL with its last lines."""
    message = tail(done.stderr or done.stdout) or (
        f"flow-run exited with status {done.returncode}")
    for library in libraries or args.unavailable:
        words = LIBRARY_WORDS.get(library, (library,))
        if library in args.unavailable and any(w in message for w in words):
            row["status"] = "skipped"
            row["why"] = f"needs {library}: {args.unavailable[library]}"
            return
    row["status"] = "FAIL"
    row["why"] = message


#: What flow-run's error says when it cannot open a library.
LIBRARY_WORDS = {"cublaslt": ("cuBLASLt", "cublasLt", "FLOW_CUBLASLT"),
                 "cudnn": ("cuDNN", "cudnn", "FLOW_CUDNN"),
                 "nccl": ("NCCL", "nccl", "FLOW_NCCL")}


def not_runnable(args, entry, case=None):
    """(status, why) when a case cannot run here, else None."""
    if "skipped" in entry:
        return "skipped", "not in the kit: " + entry["skipped"]
    if "error" in entry:
        return "not compiled", entry["error"]
    if case is not None:
        missing = cases.unavailable(case.needs)
        if missing:
            return "skipped", missing
    for library in entry.get("libraries", []):
        if library in args.unavailable:
            return "skipped", f"needs {library}: {args.unavailable[library]}"
    return None


# ---------------------------------------------------------------------------
# Correctness
# ---------------------------------------------------------------------------


def check_case(args, name, entry, work, section, row, contexts):
    """One model's output from flow-run against PyTorch's; keeps what the
    benchmarks need in contexts[name]."""
    case = cases.by_name()[name]
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
        partial = archive.with_suffix(".partial")
        with lzma.open(args.kit / entry["archive"]) as f, \
                open(partial, "wb") as o:
            shutil.copyfileobj(f, o, 1 << 24)
        partial.rename(archive)
    paths = []
    for i, t in enumerate(inputs):
        path = work / f"{name}.in{i}.npy"
        save_npy(path, t)
        paths.append(path)
    out = work / name
    fbin = args.kit / f"{name}.fbin"
    done = run_process(flow_command(args, fbin, paths, archive,
                                    [f"--output-dir={out}"]), section.left())
    if done.returncode != 0:
        flow_failed(args, row, done, entry.get("libraries", ()))
        return
    got = load_npy(out / "result_0.npy")
    module, dev_inputs, run = reference(case, module, inputs, args.device)
    with torch.no_grad():
        want = run().float().cpu()
    if entry.get("bench"):
        contexts[name] = dict(case=case, fbin=fbin, paths=paths,
                              archive=archive, run=run)
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


def gemm_operands(name, entry):
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16,
                   "f32": torch.float32}[entry["dtype"]]
    n = entry["n"]
    return [torch.from_numpy(cases.uniform(f"{name}.{k}", (n, n))).to(
        torch_dtype) for k in ("a", "b")]


def torch_gemm(entry, fn):
    """fn() with TF32 products allowed as the GEMM allows them."""
    allowed = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = entry.get("tf32", False)
    try:
        return fn()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allowed


def check_gemm(args, name, entry, work, section, row, contexts):
    """An n x n x n GEMM's result against torch.matmul's on the device."""
    a, b = gemm_operands(name, entry)
    paths = []
    for label, t in (("a", a), ("b", b)):
        path = work / f"{name}.{label}.npy"
        save_npy(path, t)
        paths.append(path)
    out = work / name
    done = run_process(flow_command(args, args.kit / f"{name}.fbin", paths,
                                    "", [f"--output-dir={out}"]),
                       section.left())
    if done.returncode != 0:
        flow_failed(args, row, done, entry.get("libraries", ("cublaslt",)))
        return
    contexts[name] = dict(paths=paths)
    got = load_npy(out / "result_0.npy")
    da, db = a.to(args.device), b.to(args.device)
    want = torch_gemm(entry, lambda: torch.matmul(da, db)).float().cpu()
    error = (got - want).abs()
    atol, rtol = cases.gemm_tolerance(entry["dtype"], entry.get("tf32"))
    bound = atol + rtol * want.abs()
    row["max_abs_error"] = float(error.max())
    row["max_ref"] = float(want.abs().max())
    row["status"] = "pass" if bool((error <= bound).all()) else "FAIL"
    if row["status"] == "FAIL":
        row["why"] = (f"{int((error > bound).sum())} of {error.numel()} "
                      f"elements outside atol {atol} + rtol {rtol}")


MPI_ENV = dict(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")


def check_collectives(args, name, entry, work, section, row, contexts):
    """Every collective kind under `mpirun -np n flow-run` (one GPU per
    process, NCCL), against numpy: f32 without TF32, so only the order of
    the sums differs."""
    n = entry["n"]
    gpus = torch.cuda.device_count() if args.device == "cuda" else n
    mpirun = shutil.which("mpirun")
    if gpus < n or not mpirun:
        row["status"] = "skipped"
        row["why"] = (f"needs {n} GPUs, the machine has {gpus}" if gpus < n
                      else "no mpirun on this machine")
        return
    inputs = [cases.uniform(f"{name}.{k}", shape).astype(np.float32)
              for k, shape in (("x", (10, 24)), ("w1", (24, 37)),
                               ("w2", (37, 24)))]
    paths = []
    for k, value in zip(("x", "w1", "w2"), inputs):
        paths.append(work / f"{name}.{k}.npy")
        np.save(paths[-1], value)
    out = work / f"{name}-out"
    command = [mpirun, "-np", str(n), args.flow_run,
               str(args.kit / f"{name}.fbin"), f"--device={args.device_name}",
               f"--output-dir={out}"] + [f"--input={p}" for p in paths]
    # mpirun's environment without an MPI job's own variables (a process
    # that started MPI, even alone, leaves them to its children, and mpirun
    # then takes itself for a part of that job).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    done = run_process(command, section.left(), env=dict(env, **MPI_ENV))
    if done.returncode != 0:
        # The ranks' own error lines, not mpirun's notes about aborting.
        lines = [line for line in done.stderr.splitlines()
                 if line.startswith("flow-run")]
        if lines:
            done.stderr = lines[0]
        flow_failed(args, row, done, entry.get("libraries", ("nccl",)))
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


def check_training(args, name, entry, work, section, row, contexts):
    """`flow-run --steps` of a training step (AdamW, clipping, a learning
    rate per step), the state resident on the device between steps: the
    losses and final parameters against torch.optim.AdamW on the device
    (f32, no TF32: only the order of sums differs; losses within 1e-4
    relative, weights rtol 1e-4 + atol 1e-5: on the CPU Flow is within
    4e-7 of a float64 run, weights ~0.06), and 4 + 6 steps through a saved
    and reloaded state equal 10 steps bit for bit."""
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
        done = run_process(
            [args.flow_run, str(args.kit / f"{name}.fbin"),
             f"--device={args.device_name}", f"--steps={count}",
             f"--state={state}", f"--save-state={save}",
             f"--input={work / folder}/x{{step}}.npy",
             f"--input={work / folder}/t{{step}}.npy",
             f"--input={work / folder}/lr{{step}}.npy"], section.left())
        if done.returncode != 0:
            raise RuntimeError(tail(done.stderr))
        return [float(v) for v in re.findall(
            r"^step \d+: .* result 0 = (\S+)$", done.stdout, re.M)]

    init = args.kit / f"{name}.init.safetensors"
    try:
        losses = steps("all", len(batches), init, work / "ten.st")
        steps("all", 4, init, work / "four.st")
        steps("late", len(batches) - 4, work / "four.st", work / "resumed.st")
    except RuntimeError as e:
        done = subprocess.CompletedProcess([], 1, "", str(e))
        flow_failed(args, row, done, entry.get("libraries", ()))
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


# ---------------------------------------------------------------------------
# Benchmarks
# ---------------------------------------------------------------------------


def bench_case(args, name, entry, work, section, row, contexts):
    """Flow's time per call (device time in commands, and wall time with
    the copies) against eager PyTorch's."""
    c = contexts[name]
    repeats, warmup = args.repeats, args.warmup
    done = run_process(flow_command(
        args, c["fbin"], c["paths"], c["archive"],
        [f"--iterations={repeats}", f"--warmup={warmup}", "--profile"]),
        section.left())
    if done.returncode != 0:
        flow_failed(args, row, done, entry.get("libraries", ()))
        return
    wall, device_ms, _ = parse_flow_times(done.stdout)
    row["flow_wall_ms"] = wall
    row["flow_device_ms"] = device_ms
    with torch.no_grad():
        row["eager_ms"] = torch_ms(c["run"], args.device, repeats, warmup)
    if device_ms:
        row["eager_over_flow"] = row["eager_ms"] / device_ms
    row["status"] = "ran"
    contexts[name]["flow_device_ms"] = device_ms


def bench_gemm(args, name, entry, work, section, row, contexts):
    """Flow's GEMM TFLOP/s (its time in cuBLASLt) against torch.matmul's."""
    n = entry["n"]
    repeats, warmup = args.repeats, args.warmup
    done = run_process(flow_command(
        args, args.kit / f"{name}.fbin", contexts[name]["paths"], "",
        [f"--iterations={repeats}", f"--warmup={warmup}", "--profile"]),
        section.left())
    if done.returncode != 0:
        flow_failed(args, row, done, entry.get("libraries", ("cublaslt",)))
        return
    _, _, gemm_ms = parse_flow_times(done.stdout)
    flops = 2.0 * n ** 3
    row["flow_tflops"] = flops / (gemm_ms * 1e-3) / 1e12 if gemm_ms else None
    da, db = (t.to(args.device) for t in gemm_operands(name, entry))
    ms = torch_gemm(entry, lambda: torch_ms(lambda: torch.matmul(da, db),
                                            args.device, repeats, warmup))
    row["torch_tflops"] = flops / (ms * 1e-3) / 1e12
    if row["flow_tflops"]:
        row["flow_over_torch"] = row["flow_tflops"] / row["torch_tflops"]
    row["status"] = "ran"


# ---------------------------------------------------------------------------
# torch.compile (in a child process, stopped when its budget runs out)
# ---------------------------------------------------------------------------


def compile_child(args):
    """The child's work: torch.compile each named case and time it, one
    marked JSON line per case on standard output."""
    manifest = json.loads((args.kit / "manifest.json").read_text())
    for name in args.compile_child.split(","):
        result = {"case": name}
        try:
            case = cases.by_name()[name]
            module, inputs = case.build()
            module, inputs = cases.half(module, inputs, case.precision)
            module, dev_inputs, _ = reference(case, module, inputs,
                                              args.device)
            compiled = torch.compile(module)

            def run():
                if case.precision == "bf16":
                    with torch.autocast(device_type=args.device,
                                        dtype=torch.bfloat16):
                        return compiled(*dev_inputs)
                return compiled(*dev_inputs)
            start = time.time()
            with torch.no_grad():
                run()
                if args.device == "cuda":
                    torch.cuda.synchronize()
                result["compile_seconds"] = time.time() - start
                result["compile_ms"] = torch_ms(run, args.device,
                                                args.repeats, args.warmup)
            assert manifest["cases"][name]["precision"] == case.precision
        except Exception as e:  # noqa: BLE001 (reported as the case's FAIL)
            result["error"] = f"{type(e).__name__}: {e}"
            result["traceback"] = last_frames(e)
        print(CHILD_MARK + json.dumps(result), flush=True)


def run_compile_section(args, section, results, names, contexts):
    """torch.compile of `names` in one child process (it imports torch and
    builds each module again), each result recorded as it arrives; what is
    left when the budget runs out is "not run (time)"."""
    pending = list(names)
    errors = []
    if pending and section.left() >= MIN_START:
        command = [sys.executable, str(Path(__file__).resolve()),
                   str(args.kit), "--flow-run", args.flow_run,
                   "--results", "-", "--device", args.device,
                   "--compile-child", ",".join(pending),
                   "--repeats", str(args.repeats),
                   "--warmup", str(args.warmup)]
        process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, bufsize=0,
                                   start_new_session=True)
        try:
            read_child(process, section, results, pending, errors, contexts)
        finally:
            kill_group(process)
    for name in pending:
        row = {"section": "compile", "case": name,
               "precision": cases.by_name()[name].precision}
        if section.left() <= 0 or not errors:
            row["status"] = NOT_RUN
            row["why"] = (f"torch.compile's budget ({section.budget:g} s) "
                          f"ran out")
        else:
            row["status"] = "FAIL"
            row["why"] = ("the torch.compile process ended before it: " +
                          tail("".join(errors)))
        results.add(row)


def read_child(process, section, results, pending, errors, contexts):
    """Records the torch.compile child's results as they come, until it
    ends or the section's time is up; its last lines of standard error go
    to `errors` (and its exit status, when it ended early)."""
    selector = selectors.DefaultSelector()
    partial = {}
    for pipe in (process.stdout, process.stderr):
        selector.register(pipe.fileno(), selectors.EVENT_READ)
        partial[pipe.fileno()] = b""
    start = time.time()
    try:
        while partial and pending and section.left() > 0:
            for key, _ in selector.select(timeout=min(section.left(), 1.0)):
                fd = key.fd
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    selector.unregister(fd)
                    lines = [partial.pop(fd)]
                else:
                    *lines, partial[fd] = (partial[fd] + chunk).split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace")
                    if fd == process.stderr.fileno():
                        if line.strip():
                            errors.append(line + "\n")
                            del errors[:-20]
                    elif line.startswith(CHILD_MARK):
                        start = child_result(line, start, results, pending,
                                             contexts)
    finally:
        selector.close()
    if pending and section.left() > 0:
        try:
            errors.append(f"(exit status {process.wait(timeout=10)})\n")
        except subprocess.TimeoutExpired:
            errors.append("(it closed its output and did not end)\n")


def child_result(line, start, results, pending, contexts):
    """Records one result line of the torch.compile child; returns the
    time the next case started."""
    result = json.loads(line[len(CHILD_MARK):])
    name = result.pop("case")
    row = {"section": "compile", "case": name,
           "precision": cases.by_name()[name].precision, **result}
    if "error" in row:
        row["status"] = "FAIL"
        row["why"] = row.pop("error")
    else:
        row["status"] = "ran"
        flow = contexts.get(name, {}).get("flow_device_ms")
        if flow:
            row["compile_over_flow"] = row["compile_ms"] / flow
    row["seconds"] = round(time.time() - start, 1)
    results.add(row)
    pending.remove(name)
    return time.time()


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def run_case(args, results, section, kind, name, entry, precision, check,
             contexts, case=None, reason=None):
    """Runs one case in isolation and records its row, whatever happens
    (`reason`: (status, why) when it is not to run)."""
    row = {"section": kind, "case": name, "precision": precision}
    start = time.time()
    try:
        reason = reason or not_runnable(args, entry, case)
        if reason:
            row["status"], row["why"] = reason
        elif section.left() < MIN_START:
            row["status"] = NOT_RUN
            row["why"] = (f"the {kind} budget ({section.budget:g} s) was "
                          f"spent before it started")
        else:
            row["seconds"] = None  # the case ran (set below)
            check(args, name, entry, args.work, section, row, contexts)
    except OutOfTime as e:
        row["status"] = NOT_RUN
        row["why"] = f"{e}: the {kind} budget ({section.budget:g} s) ran out"
    except Stopped as e:
        row["status"] = NOT_RUN
        row["why"] = str(e)
        raise
    except Exception as e:  # noqa: BLE001 (one case never stops the check)
        row["status"] = "FAIL"
        row["why"] = f"{type(e).__name__}: {e}"
        row["traceback"] = last_frames(e)
    finally:
        row.setdefault("status", "FAIL")
        if row.pop("seconds", False) is None:
            row["seconds"] = round(time.time() - start, 1)
        results.add(row)
    return row


def selected(args, manifest, section):
    """The kit's entries of `section` that this run runs (--quick: those
    cases.py marks quick)."""
    entries = manifest.get(section, {}) or {}
    if not args.quick or section not in ("cases", "gemm"):
        return dict(entries)

    def quick(name, entry):
        if "quick" in entry:
            return entry["quick"]
        if section == "gemm":
            return name in cases.QUICK_GEMMS or name in cases.SMALL_GEMMS
        case = cases.by_name().get(name)
        return bool(case and case.quick)
    return {k: v for k, v in entries.items() if quick(k, v)}


def run_all(args, results, manifest):
    overall = args.started + args.budget
    seconds = {}
    contexts = {}
    model_cases = selected(args, manifest, "cases")
    gemms = selected(args, manifest, "gemm")
    case_of = cases.by_name()
    check_rows = {}

    section = Section("check", args.check_budget, overall)
    for name, entry in model_cases.items():
        check_rows[name] = run_case(args, results, section, "check", name,
                                    entry, entry["precision"], check_case,
                                    contexts, case_of.get(name))
    for name, entry in gemms.items():
        precision = "tf32" if entry.get("tf32") else entry["dtype"]
        check_rows[name] = run_case(args, results, section, "check", name,
                                    entry, precision, check_gemm, contexts)
    for name, entry in selected(args, manifest, "training").items():
        run_case(args, results, section, "check", name, entry, "f32",
                 check_training, contexts)
    for name, entry in selected(args, manifest, "collectives").items():
        run_case(args, results, section, "check", name, entry, "f32",
                 check_collectives, contexts)
    seconds["check"] = round(time.time() - section.start, 1)
    if not args.bench:
        return seconds

    # A benchmark runs where its check ran flow-run to the end.
    def unmeasured(name):
        if name in contexts:
            return None
        row = check_rows.get(name, {})
        status = row.get("status", NOT_RUN)
        if status == NOT_RUN:
            return NOT_RUN, "its check did not run (time)"
        if status in ("skipped", "not compiled"):
            return status, row.get("why", "")
        return "skipped", f"its check did not run flow-run to the end " \
                          f"({status})"

    section = Section("bench", args.bench_budget, overall)
    benched = [n for n, e in model_cases.items() if e.get("bench")]
    bench_rows = {}
    for name in benched:
        entry = model_cases[name]
        bench_rows[name] = run_case(
            args, results, section, "bench", name, entry, entry["precision"],
            bench_case, contexts, reason=unmeasured(name))
    for name, entry in gemms.items():
        precision = "tf32" if entry.get("tf32") else entry["dtype"]
        run_case(args, results, section, "bench", name, entry, precision,
                 bench_gemm, contexts, reason=unmeasured(name))
    seconds["bench"] = round(time.time() - section.start, 1)

    section = Section("compile", args.compile_budget, overall)
    # Batch 1 and 32 of BERT and ResNet-50 in f16 first, then the others.
    timed = [n for n in benched if bench_rows[n]["status"] == "ran"]
    order = {"f16": 0, "bf16": 1, "f32": 2}
    timed.sort(key=lambda n: order.get(model_cases[n]["precision"], 3))
    for name in benched:
        status = bench_rows[name]["status"]
        if name not in timed:
            results.add({"section": "compile", "case": name,
                         "precision": model_cases[name]["precision"],
                         "status": NOT_RUN if status == NOT_RUN
                         else "skipped",
                         "why": f"Flow's benchmark did not run ({status})"})
    run_compile_section(args, section, results, timed, contexts)
    seconds["compile"] = round(time.time() - section.start, 1)
    return seconds


def parse_pairs(values, what):
    pairs = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise SystemExit(f"check.py: {what} takes KEY=VALUE, not {value!r}")
        pairs[key] = rest
    return pairs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="\n\n".join(__doc__.split("\n\n")[:1] +
                                 __doc__.split("\n\n")[2:]),
        epilog="Budgets (seconds; full run / --quick): correctness "
               f"{BUDGETS['check'][0]}/{BUDGETS['check'][1]}, benchmarks "
               f"{BUDGETS['bench'][0]}/{BUDGETS['bench'][1]}, torch.compile "
               f"{BUDGETS['compile'][0]}/{BUDGETS['compile'][1]}. A case "
               "whose section's budget runs out is reported as "
               "'not run (time)', not as FAIL.")
    parser.add_argument("kit", type=Path, help="the kit prepare.py made")
    parser.add_argument("--flow-run", required=True,
                        help="the flow-run to run the kit's executables")
    parser.add_argument("--results", type=Path, required=True,
                        help="the results file (one JSON line per outcome); "
                             "the Markdown table goes next to it (.md)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="where PyTorch runs the references")
    parser.add_argument("--bench", action="store_true",
                        help="after the checks, time Flow against eager "
                             "PyTorch, torch.matmul and torch.compile")
    parser.add_argument("--quick", action="store_true",
                        help="fewer cases (batch 1, f32 and f16; two GEMMs) "
                             "and repetitions, smaller budgets: under 3 "
                             "minutes on one H100")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for the whole check; no section runs "
                             "past it (default: the sum of the sections')")
    for name, title in (("check", "the correctness checks"),
                        ("bench", "the benchmarks"),
                        ("compile", "the torch.compile comparisons")):
        parser.add_argument(f"--{name}-budget", type=float, default=None,
                            help=f"seconds for {title} (default "
                                 f"{BUDGETS[name][0]}, --quick "
                                 f"{BUDGETS[name][1]})")
    parser.add_argument("--unavailable", action="append", metavar="LIB=WHY",
                        help="a library the runtime cannot open here "
                             "(cublaslt, cudnn, nccl) and why: the cases "
                             "that call it are reported as skipped")
    parser.add_argument("--note", action="append", metavar="KEY=VALUE",
                        help="a line for the results' header (run.sh: the "
                             "runtime build, the libraries found)")
    parser.add_argument("--repeats", type=int, default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--compile-child", default="",
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    mode = 1 if args.quick else 0
    for name in BUDGETS:
        if getattr(args, f"{name}_budget") is None:
            setattr(args, f"{name}_budget", float(BUDGETS[name][mode]))
    if args.budget is None:
        args.budget = sum(getattr(args, f"{n}_budget") for n in BUDGETS)
    if args.repeats is None:
        args.repeats = REPEATS[mode]
    if args.warmup is None:
        args.warmup = WARMUP[mode]
    args.unavailable = parse_pairs(args.unavailable, "--unavailable")
    args.note = parse_pairs(args.note, "--note")
    return args


def import_modules():
    """Imports numpy, torch and cases.py; the error, or "" when they
    import."""
    global np, torch, cases
    try:
        import numpy
        import torch as torch_module
        import cases as cases_module
    except Exception as e:  # noqa: BLE001 (reported in the results file)
        return f"{type(e).__name__}: {e}"
    np, torch, cases = numpy, torch_module, cases_module
    return ""


def all_rows(manifest):
    """(section, name, precision) of every case of the kit."""
    for name, entry in manifest.get("cases", {}).items():
        yield "check", name, entry.get("precision", "")
    for name, entry in manifest.get("gemm", {}).items():
        yield "check", name, ("tf32" if entry.get("tf32")
                              else entry.get("dtype", ""))
    for section in ("training", "collectives"):
        for name in (manifest.get(section) or {}):
            yield "check", name, "f32"


def main(argv=None):
    started = time.time()
    args = parse_args(argv)
    args.started = started
    if args.compile_child:
        error = import_modules()
        if error:
            raise SystemExit(f"check.py: {error}")
        compile_child(args)
        return 0
    results = Results(args.results)
    signal.signal(signal.SIGTERM, on_sigterm)
    header = {"kit": str(args.kit), "quick": args.quick,
              "budgets": ", ".join(f"{n} {getattr(args, n + '_budget'):g} s"
                                   for n in BUDGETS) +
              f" (all within {args.budget:g} s)", **args.note}
    seconds = {}
    manifest = {}
    try:
        try:
            manifest = json.loads((args.kit / "manifest.json").read_text())
        except Exception as e:  # noqa: BLE001
            results.set_header(dict(header, error=f"no kit manifest: {e}"))
            finish(results, seconds)
            return 1
        header.update(target=manifest.get("target"),
                      gpu_arch=manifest.get("gpu_arch"))
        error = import_modules()
        if error:
            results.set_header(dict(header, error=error))
            for section, name, precision in all_rows(manifest):
                results.add({"section": section, "case": name,
                             "precision": precision, "status": "skipped",
                             "why": f"PyTorch or NumPy is not importable: "
                                    f"{error}"})
            finish(results, seconds)
            return 1
        # The kit's executables run where flow-run puts them: CUDA
        # executables on the GPU, an emulated kit (the dry run) on the CPU.
        args.device_name = ("cpu" if manifest.get("target") == "cuda-emulated"
                            else "cuda")
        if args.device == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        header["torch"] = torch.__version__
        try:
            header["device"] = (torch.cuda.get_device_name()
                                if args.device == "cuda" else "cpu")
        except Exception as e:  # noqa: BLE001
            header["device"] = f"none ({type(e).__name__}: {e})"
        for package in ("transformers", "torchvision"):
            missing = cases.unavailable([package])
            header[package] = "not importable" if missing else "importable"
        results.set_header(header)
        with tempfile.TemporaryDirectory() as tmp:
            args.work = Path(tmp)
            seconds = run_all(args, results, manifest)
    except Stopped as e:
        # The rows not yet written: not run.
        done = {(r["section"], r["case"]) for r in results.rows}
        for section, name, precision in all_rows(manifest):
            if (section, name) not in done:
                results.add({"section": section, "case": name,
                             "precision": precision, "status": NOT_RUN,
                             "why": str(e)})
    except Exception as e:  # noqa: BLE001 (the file is written regardless)
        results.add({"section": "check", "case": "(check.py)",
                     "precision": "", "status": "FAIL",
                     "why": f"{type(e).__name__}: {e}",
                     "traceback": last_frames(e)})
    return finish(results, seconds)


def finish(results, seconds):
    if not results.header:
        results.set_header({})
    summary = results.finish(seconds)
    print(f"{len(results.rows)} results, {summary['failed']} failed: "
          f"{results.path}")
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
