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


def tmpdir():
    return tempfile.TemporaryDirectory(prefix="flow-bench-")
