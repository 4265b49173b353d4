"""ResNet-50's convolutions: Flow's path against oneDNN's primitives.

    python bench/conv.py [--threads 2] [--batch 1] [--repeats 3]

Flow runs convolutions as im2col and a library GEMM; this prints, side by
side in one run (medians of `repeats` interleaved runs), the milliseconds
Flow's compiled ResNet-50 spends in its GEMM commands (`flow-run
--profile`: the convolutions' GEMMs plus the classifier's) against every
convolution of the same network on oneDNN (bench/conv_onednn.cpp), once on
plain layouts (NCHW, what Flow's buffers hold: a drop-in library call) and
once on the blocked layouts oneDNN picks (weights reordered once,
activations assumed blocked already: what a layout pass keeping activations
blocked across layers would reach). Ratios are oneDNN / Flow (> 1: Flow's
path is faster). Flow's im2col kernels are not counted (they are dispatch
commands), so its side is the GEMMs alone.
"""

import argparse
import pathlib
import re
import statistics
import subprocess
import sys

import numpy as np

from common import BIN, BUILD, ROOT, tmpdir


def flow_gemm_ms(fbin, x, work, threads):
    path = pathlib.Path(work) / "x.npy"
    np.save(path, x)
    out = subprocess.run(
        [BIN / "flow-run", fbin, f"--input={path}", f"--threads={threads}",
         "--iterations=20", "--warmup=3", "--profile"],
        check=True, capture_output=True, text=True).stdout
    return float(re.search(r"gemm\s+\d+ commands\s+([0-9.]+) ms",
                           out).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()

    tool = BUILD / "bench" / "conv_onednn"
    tool.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["g++", "-O2", "-std=c++17", "-fopenmp",
                    ROOT / "bench" / "conv_onednn.cpp", "-o", tool, "-ldnnl"],
                   check=True)

    import torch
    import torchvision
    sys.path.insert(0, str(BUILD / "python"))
    import flow
    model = torchvision.models.resnet50().eval()
    x = torch.randn(args.batch, 3, 224, 224)
    runs = {"flow": [], "plain": [], "blocked": []}
    with tmpdir() as work:
        compiled = flow.compile(model, (x,),
                                parameters=pathlib.Path(work) / "w.safetensors")
        fbin = pathlib.Path(work) / "r50.fbin"
        fbin.write_bytes(compiled.module.executable)
        for _ in range(args.repeats):
            runs["flow"].append(flow_gemm_ms(fbin, x.numpy(), work,
                                             args.threads))
            out = subprocess.run([tool, str(args.batch), str(args.threads),
                                  "10"], check=True, capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                layout, ms = line.split()
                runs[layout].append(float(ms))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"ResNet-50 b{args.batch}, {args.threads} threads, medians of "
          f"{args.repeats} runs")
    print("| path | ms | oneDNN / Flow |")
    print("|---|---|---|")
    print(f"| Flow: im2col + GEMM (its GEMM commands) | {med['flow']:.1f} | - |")
    for layout in ("plain", "blocked"):
        print(f"| oneDNN convolutions, {layout} layouts | {med[layout]:.1f} | "
              f"{med[layout] / med['flow']:.2f} |")


if __name__ == "__main__":
    main()
