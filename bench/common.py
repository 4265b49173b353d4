"""Shared helpers for Flow's benchmarks: compile and time with the tools."""

import os
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("FLOW_BUILD_DIR", ROOT / "build"))
BIN = BUILD / "bin"


def compile_mlir(text, workdir):
    src = pathlib.Path(workdir) / "model.mlir"
    out = pathlib.Path(workdir) / "model.fbin"
    src.write_text(text)
    start = time.perf_counter()
    subprocess.run([BIN / "flow-compile", src, "-o", out], check=True)
    return out, time.perf_counter() - start


def flow_median_ms(fbin, inputs, workdir, threads, iterations, warmup):
    """Median milliseconds per call reported by flow-run --iterations."""
    args = []
    for i, x in enumerate(inputs):
        path = pathlib.Path(workdir) / f"in{i}.npy"
        np.save(path, x)
        args.append(f"--input={path}")
    proc = subprocess.run(
        [BIN / "flow-run", fbin, *args, f"--threads={threads}",
         f"--iterations={iterations}", f"--warmup={warmup}"],
        check=True, capture_output=True, text=True)
    return float(re.search(r"median ([0-9.]+) ms", proc.stdout).group(1))


def median_ms(fn, iterations, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def interleaved_medians(runners, repeats, iterations, warmup=2):
    """{name: median over `repeats` rounds of each round's median ms per
    call}, every runner once per round. The order turns from round to
    round: whichever runs right after PyTorch eager shares the cores with
    its OpenMP threads winding down."""
    names = list(runners)
    samples = {name: [] for name in names}
    for round_ in range(repeats):
        turn = round_ % len(names)
        for name in names[turn:] + names[:turn]:
            samples[name].append(median_ms(runners[name], iterations, warmup))
    return {name: statistics.median(v) for name, v in samples.items()}


def tmpdir():
    return tempfile.TemporaryDirectory(prefix="flow-bench-")


def eager_peak_bytes(model, inputs):
    """The most bytes of tensors PyTorch eager holds at once during one
    forward pass of `model` (no grad): every op's output storage counts from
    the op until the last tensor using it is freed (views share their base's
    storage; inputs and parameters are not counted). This is what eager must
    allocate for activations, the figure Flow's arena compares with."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Live(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live = self.peak = 0
            self.refs = {}

        def release(self, key, nbytes):
            self.refs[key] -= 1
            if self.refs[key] == 0:
                del self.refs[key]
                self.live -= nbytes

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            given = {t.untyped_storage().data_ptr()
                     for t in tree_flatten((args, kwargs))[0]
                     if isinstance(t, torch.Tensor)}
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
                    continue
                storage = t.untyped_storage()
                key, nbytes = storage.data_ptr(), storage.nbytes()
                if key in self.refs:
                    self.refs[key] += 1
                elif key in given:
                    continue  # a view of an input or a parameter
                else:
                    self.refs[key] = 1
                    self.live += nbytes
                    self.peak = max(self.peak, self.live)
                weakref.finalize(t, self.release, key, nbytes)
            return out

    tracker = Live()
    with torch.no_grad(), tracker:
        model(*inputs)
    return tracker.peak


class _Captured(Exception):
    def __init__(self, text):
        super().__init__("captured")
        self.text = text


def training_program(model, loss_fn, batch, **kwargs):
    """The flow IR text `flow.compile_train(model, loss_fn, batch,
    **kwargs)` writes, captured before it is compiled and loaded (which on
    a mesh would need MPI)."""
    import flow
    import flow.training

    def capture(text, **_):
        raise _Captured(text)

    compile_mlir = flow.compile_mlir
    flow.compile_mlir = capture
    try:
        flow.compile_train(model, loss_fn, batch, **kwargs)
        raise RuntimeError("compile_train did not compile its program")
    except _Captured as captured:
        return captured.text
    finally:
        flow.compile_mlir = compile_mlir
