"""Model latency: Flow against PyTorch eager on the same CPU, same threads.

    python bench/models.py [--threads 2] [--repeats 5]

Prints, per model, the median latency of each (the median over `repeats`
runs of the per-run median) and Flow's ratio (Flow / PyTorch; < 1 is faster),
plus Flow's compile time.
"""

import argparse
import statistics

import numpy as np
import torch

from common import compile_mlir, flow_median_ms, median_ms, tmpdir


def t(*shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def mlp_mlir(batch, sizes):
    args, lines, h = [f"%x: {t(batch, sizes[0])}"], [], "%x"
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        args += [f"%w{i}: {t(a, b)}", f"%b{i}: {t(b)}"]
        lines += [
            f"%m{i} = flow.matmul {h}, %w{i} : ({t(batch, a)}, {t(a, b)}) -> {t(batch, b)}",
            f"%a{i} = flow.add %m{i}, %b{i} : ({t(batch, b)}, {t(b)}) -> {t(batch, b)}"]
        h = f"%a{i}"
        if i < len(sizes) - 2:
            lines.append(f"%r{i} = flow.relu {h} : {t(batch, b)}")
            h = f"%r{i}"
    lines.append(f"return {h} : {t(batch, sizes[-1])}")
    return (f"func.func @mlp({', '.join(args)}) -> {t(batch, sizes[-1])} {{\n  "
            + "\n  ".join(lines) + "\n}\n")


def encoder_mlir(b, s, d, heads, ff):
    dh = d // heads
    x, xh = t(b, s, d), t(b, heads, s, dh)
    lines = []
    for n in "qkv":
        lines += [
            f"%{n}0 = flow.matmul %x, %w{n} : ({x}, {t(d, d)}) -> {x}",
            f"%{n}1 = flow.add %{n}0, %b{n} : ({x}, {t(d)}) -> {x}",
            f"%{n}2 = flow.reshape %{n}1 : {x} -> {t(b, s, heads, dh)}",
            f"%{n} = flow.transpose %{n}2 [0, 2, 1, 3] : {t(b, s, heads, dh)} -> {xh}"]
    sc = t(b, heads, s, s)
    lines += [
        f"%s0 = flow.matmul %q, %k {{transpose_rhs}} : ({xh}, {xh}) -> {sc}",
        f"%scale = flow.constant dense<{1 / np.sqrt(dh):.8f}> : tensor<f32>",
        f"%s1 = flow.mul %s0, %scale : ({sc}, tensor<f32>) -> {sc}",
        f"%p = flow.softmax %s1 axis = 3 : {sc}",
        f"%o0 = flow.matmul %p, %v : ({sc}, {xh}) -> {xh}",
        f"%o1 = flow.transpose %o0 [0, 2, 1, 3] : {xh} -> {t(b, s, heads, dh)}",
        f"%o2 = flow.reshape %o1 : {t(b, s, heads, dh)} -> {x}",
        f"%a0 = flow.matmul %o2, %wo : ({x}, {t(d, d)}) -> {x}",
        f"%a1 = flow.add %a0, %bo : ({x}, {t(d)}) -> {x}",
        f"%r1 = flow.add %x, %a1 : ({x}, {x}) -> {x}",
        f"%h = flow.layer_norm %r1 weight %g1 bias %n1 axis = 2 epsilon = 1.0e-05 : ({x}, {t(d)}, {t(d)}) -> {x}",
        f"%f0 = flow.matmul %h, %w1 : ({x}, {t(d, ff)}) -> {t(b, s, ff)}",
        f"%f1 = flow.add %f0, %c1 : ({t(b, s, ff)}, {t(ff)}) -> {t(b, s, ff)}",
        f"%f2 = flow.gelu %f1 : {t(b, s, ff)}",
        f"%f3 = flow.matmul %f2, %w2 : ({t(b, s, ff)}, {t(ff, d)}) -> {x}",
        f"%f4 = flow.add %f3, %c2 : ({x}, {t(d)}) -> {x}",
        f"%r2 = flow.add %h, %f4 : ({x}, {x}) -> {x}",
        f"%y = flow.layer_norm %r2 weight %g2 bias %n2 axis = 2 epsilon = 1.0e-05 : ({x}, {t(d)}, {t(d)}) -> {x}",
        f"return %y : {x}"]
    params = [("wq", (d, d)), ("bq", (d,)), ("wk", (d, d)), ("bk", (d,)),
              ("wv", (d, d)), ("bv", (d,)), ("wo", (d, d)), ("bo", (d,)),
              ("g1", (d,)), ("n1", (d,)), ("w1", (d, ff)), ("c1", (ff,)),
              ("w2", (ff, d)), ("c2", (d,)), ("g2", (d,)), ("n2", (d,))]
    args = [f"%x: {x}"] + [f"%{n}: {t(*s)}" for n, s in params]
    text = (f"func.func @encoder({', '.join(args)}) -> {x} {{\n  "
            + "\n  ".join(lines) + "\n}\n")
    return text, [(b, s, d)] + [s for _, s in params]


def bench(name, text, shapes, torch_fn, args):
    rng = np.random.default_rng(0)
    inputs = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in shapes]
    with tmpdir() as work:
        fbin, compile_s = compile_mlir(text, work)
        flow = [flow_median_ms(fbin, inputs, work, args.threads, args.iterations,
                               args.warmup) for _ in range(args.repeats)]
    torch.set_num_threads(args.threads)
    with torch.inference_mode():
        eager = [median_ms(torch_fn, args.iterations, args.warmup)
                 for _ in range(args.repeats)]
    f, e = statistics.median(flow), statistics.median(eager)
    print(f"| {name} | {f:.3f} | {e:.3f} | {f / e:.2f} | {compile_s:.2f} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    print(f"| model | Flow ms | PyTorch eager ms | Flow / eager | Flow compile s |")
    print(f"|---|---|---|---|---|")

    for batch in (1, 64):
        sizes = [784, 256, 128, 10]
        mlp = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
            torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
        x = torch.randn(batch, 784)
        shapes = [(batch, 784)] + [s for a, b in zip(sizes, sizes[1:])
                                   for s in ((a, b), (b,))]
        bench(f"MLP 784-256-128-10, batch {batch}", mlp_mlir(batch, sizes),
              shapes, lambda: mlp(x), args)

    for b, s, d, h, ff in ((1, 128, 256, 4, 1024), (8, 128, 256, 4, 1024)):
        text, shapes = encoder_mlir(b, s, d, h, ff)
        layer = torch.nn.TransformerEncoderLayer(
            d, h, ff, dropout=0.0, activation="gelu", batch_first=True).eval()
        x = torch.randn(b, s, d)
        bench(f"encoder layer b{b} s{s} d{d} h{h} ff{ff}", text, shapes,
              lambda: layer(x), args)


if __name__ == "__main__":
    main()
