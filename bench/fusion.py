"""What fusion changes: kernels, bytes the kernels move, arena, latency.

    python bench/fusion.py [--models transformer,bert,resnet50] [--batch 1]
        [--threads 2] [--repeats 3] [--iterations 10] [--no-latency]

Each model is compiled twice by flow-compile, with --fusion=on and
--fusion=off, and the compile reports are compared: distinct generated
kernels (`kernels`: identical ones are compiled once), commands in the
schedule (`dispatches`: kernel calls, `gemms`), bytes the
generated kernels read and write per call (`kernel_bytes`: the sum over
kernels of the buffers each binds), the arena and the compile time. For the
models imported from PyTorch, the arena is set against the most bytes of
tensors PyTorch eager holds at once in the same forward pass
(common.eager_peak_bytes). With
latency on, both executables run side by side (flow-run --iterations,
medians of `repeats` runs).

Models: the transformer layer of test/models (batch 2, sequence 16, model
64), and, imported from PyTorch with random weights, Hugging Face BERT-base
(sequence 128) and torchvision ResNet-50 (224x224).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from common import BIN, BUILD, ROOT, eager_peak_bytes, flow_median_ms

sys.path.insert(0, str(BUILD / "python"))


def transformer(batch):
    text = (ROOT / "test/models/transformer.mlir").read_text()
    rng = np.random.default_rng(0)
    shapes = [(2, 16, 64)] + [(64, 64), (64,)] * 4 + [(64,), (64,)] + \
        [(64, 256), (256,), (256, 64), (64,), (64,), (64,)]
    return text, [rng.standard_normal(s).astype(np.float32) for s in shapes], None


def _torch_program(model, inputs, workdir):
    from flow.torch_import import import_program
    program = import_program(model, inputs, None,
                             parameters=os.path.join(workdir, "w.safetensors"))
    return (program.text, [x.numpy() for x in inputs],
            eager_peak_bytes(model, inputs))


def bert(batch, workdir):
    import torch
    import transformers
    config = transformers.BertConfig(attn_implementation="sdpa")
    model = transformers.BertModel(config, add_pooling_layer=False).eval()
    ids = torch.randint(0, config.vocab_size, (batch, 128))
    return _torch_program(model, (ids,), workdir)


def resnet50(batch, workdir):
    import torch
    import torchvision
    model = torchvision.models.resnet50().eval()
    return _torch_program(model, (torch.randn(batch, 3, 224, 224),), workdir)


MODELS = {
    "transformer": ("transformer layer (test/models)",
                    lambda batch, workdir: transformer(batch)),
    "bert": ("BERT-base s128", bert),
    "resnet50": ("ResNet-50 224", resnet50),
}


def compile_with(text, workdir, fusion):
    src = pathlib.Path(workdir) / "model.mlir"
    src.write_text(text)
    out = pathlib.Path(workdir) / f"model-{fusion}.fbin"
    report = pathlib.Path(workdir) / f"report-{fusion}.json"
    start = time.perf_counter()
    subprocess.run([BIN / "flow-compile", src, "-o", out,
                    f"--report={report}", f"--fusion={fusion}"], check=True)
    seconds = time.perf_counter() - start
    return out, json.loads(report.read_text()), seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="transformer,bert,resnet50")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--no-latency", action="store_true")
    args = parser.parse_args()

    rows = []
    for key in args.models.split(","):
        label, make = MODELS[key]
        with tempfile.TemporaryDirectory() as tmp:
            text, inputs, eager_peak = make(args.batch, tmp)
            row = {"model": label, "eager_peak_bytes": eager_peak}
            fbins = {}
            for fusion in ("off", "on"):
                fbin, report, seconds = compile_with(text, tmp, fusion)
                fbins[fusion] = fbin
                row[fusion] = {
                    "kernels": report["kernels"],
                    "dispatches": report["dispatches"],
                    "gemms": report["gemms"],
                    "kernel_bytes": report["kernel_bytes"],
                    "arena_bytes": report["arena_bytes"],
                    "arena_lower_bound": report["arena_lower_bound"],
                    "in_place": report["in_place_buffers"],
                    "refusals": len(report["fusion_refusals"]),
                    "compile_s": round(seconds, 2),
                }
            if not args.no_latency:
                for fusion in ("off", "on"):
                    row[fusion]["ms"] = statistics.median(
                        flow_median_ms(fbins[fusion], inputs, tmp,
                                       args.threads, args.iterations, 2)
                        for _ in range(args.repeats))
            rows.append(row)
            print(json.dumps(row), flush=True)

    print()
    print("| model | kernel calls off -> on | distinct kernels off -> on | "
          "kernel MB moved off -> on | arena MB off -> on (lower bound) | "
          "eager peak MB | compile s off -> on | latency ms off -> on |")
    print("|---|---|---|---|---|---|---|---|")
    mb = 1 / (1 << 20)
    for r in rows:
        off, on = r["off"], r["on"]
        ms = (f"{off['ms']:.2f} -> {on['ms']:.2f}" if "ms" in on else "-")
        peak = r["eager_peak_bytes"]
        eager = "-" if peak is None else f"{peak * mb:.2f}"
        calls_off = off["dispatches"]
        calls_on = on["dispatches"]
        print(f"| {r['model']} | {calls_off} -> {calls_on} | "
              f"{off['kernels']} -> {on['kernels']} | "
              f"{off['kernel_bytes'] * mb:.1f} -> {on['kernel_bytes'] * mb:.1f}"
              f" | {off['arena_bytes'] * mb:.2f} ({off['arena_lower_bound'] * mb:.2f})"
              f" -> {on['arena_bytes'] * mb:.2f} ({on['arena_lower_bound'] * mb:.2f})"
              f" | {eager} | {off['compile_s']} -> {on['compile_s']} | {ms} |")


if __name__ == "__main__":
    main()
