"""ResNet-50's convolutions: Flow's path against oneDNN's primitives.

    python bench/conv.py [--threads 2] [--batch 1] [--repeats 3]

Prints, side by side in one run (medians of `repeats` interleaved runs),
the milliseconds Flow's compiled ResNet-50 spends in its convolutions
three ways: as library convolution commands (the default, `--conv=library`:
oneDNN primitives with the residual add and ReLU as post-ops, activations
blocked between convolutions, 3x3 stride-1 ones on oneDNN's Winograd
kernel where the CPU has one; the `conv` commands of `flow-run
--profile`), the same with `FLOW_CONV=direct` (no Winograd), and as
im2col and a library GEMM (`--conv=gemm`: its GEMM commands, the
classifier's included; the im2col and epilogue kernels not counted),
against every convolution of the same network on oneDNN alone
(bench/conv_onednn.cpp, no post-ops): on plain layouts (NCHW), on the
blocked layouts oneDNN's direct convolutions pick, and on nChw16c with
Winograd where oneDNN has it (weights reordered once, activations assumed
blocked already). Ratios are the row / Flow's library convolutions
(> 1: Flow's are faster).
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys

import numpy as np

from common import BIN, BUILD, ROOT, tmpdir


def flow_command_ms(fbin, x, work, threads, kind, conv=None):
    """Milliseconds per call in `kind` commands (flow-run --profile), with
    FLOW_CONV=`conv` when given."""
    path = pathlib.Path(work) / "x.npy"
    np.save(path, x)
    env = dict(os.environ)
    env.pop("FLOW_CONV", None)
    if conv:
        env["FLOW_CONV"] = conv
    out = subprocess.run(
        [BIN / "flow-run", fbin, f"--input={path}", f"--threads={threads}",
         "--iterations=20", "--warmup=3", "--profile"],
        check=True, capture_output=True, text=True, env=env).stdout
    return float(re.search(kind + r"\s+\d+ commands\s+([0-9.]+) ms",
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
    runs = {"flow": [], "direct": [], "gemm": [], "plain": [],
            "blocked": [], "winograd": []}
    with tmpdir() as work:
        fbins = {}
        for conv in ("library", "gemm"):
            compiled = flow.compile(
                model, (x,), conv=conv,
                parameters=pathlib.Path(work) / f"w_{conv}.safetensors")
            fbins[conv] = pathlib.Path(work) / f"r50_{conv}.fbin"
            fbins[conv].write_bytes(compiled.module.executable)
        for _ in range(args.repeats):
            runs["flow"].append(flow_command_ms(fbins["library"], x.numpy(),
                                                work, args.threads, "conv"))
            runs["direct"].append(flow_command_ms(
                fbins["library"], x.numpy(), work, args.threads, "conv",
                conv="direct"))
            runs["gemm"].append(flow_command_ms(fbins["gemm"], x.numpy(),
                                                work, args.threads, "gemm"))
            out = subprocess.run([tool, str(args.batch), str(args.threads),
                                  "10"], check=True, capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                layout, ms = line.split()
                runs[layout].append(float(ms))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"ResNet-50 b{args.batch}, {args.threads} threads, medians of "
          f"{args.repeats} runs")
    print("| path | ms | row / Flow library |")
    print("|---|---|---|")
    print(f"| Flow: library convolutions (its conv commands) | "
          f"{med['flow']:.1f} | - |")
    print(f"| Flow: library, FLOW_CONV=direct (no Winograd) | "
          f"{med['direct']:.1f} | {med['direct'] / med['flow']:.2f} |")
    print(f"| Flow: im2col + GEMM (its GEMM commands) | {med['gemm']:.1f} | "
          f"{med['gemm'] / med['flow']:.2f} |")
    for layout in ("plain", "blocked", "winograd"):
        print(f"| oneDNN convolutions alone, {layout} layouts | "
              f"{med[layout]:.1f} | {med[layout] / med['flow']:.2f} |")


if __name__ == "__main__":
    main()
