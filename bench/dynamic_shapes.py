"""Dynamic batch: one executable for every batch size against a static
executable compiled for each size, on the same CPU, same threads.

    python bench/dynamic_shapes.py [--threads 2] [--repeats 5]

Models have random weights (no downloads): an MLP (784-1024-1024-10),
torchvision's ResNet-18 (3x224x224) and a transformer block (BERT-base
sizes: 768 wide, 12 heads, 3072 FFN, sequence 128). The dynamic executable
is compiled once with `dynamic={"x": {0: ("batch", 1, MAX)}}`; the static
ones with `flow.compile` at each batch. Each figure is the median over
`repeats` interleaved rounds of each round's median milliseconds per call;
the ratio is dynamic / static (1.0: no cost; the issue's goal is within
10%). The dynamic compile's time is in the JSON output.
"""

import argparse
import json
import time

import torch

import flow
from common import interleaved_medians


class Block(torch.nn.Module):
    """A post-norm transformer encoder block on [batch, seq, d], its heads
    split as BERT's are (the batch stays the leading dimension)."""

    def __init__(self, d=768, heads=12, ff=3072):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.norm1 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, ff)
        self.fc2 = torch.nn.Linear(ff, d)
        self.norm2 = torch.nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)

        def split(t):
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

        a = torch.nn.functional.scaled_dot_product_attention(
            split(q), split(k), split(v))
        x = self.norm1(x + self.out(a.transpose(1, 2).reshape(b, s, d)))
        return self.norm2(
            x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


def models():
    import torchvision
    mlp = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    return [
        ("MLP 784-1024-1024-10", mlp, "input", (784,), 64, (1, 8, 64)),
        ("ResNet-18 224x224", torchvision.models.resnet18(), "x",
         (3, 224, 224), 8, (1, 8)),
        ("Transformer block s128", Block(), "x", (128, 768), 8, (1, 8)),
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    for name, model, input_name, shape, bound, batches in models():
        model = model.eval()
        start = time.perf_counter()
        dynamic = flow.compile(model, (torch.randn(2, *shape),),
                               dynamic={input_name: {0: ("batch", 1, bound)}},
                               threads=args.threads, cache=False)
        seconds = time.perf_counter() - start
        for batch in batches:
            x = torch.randn(batch, *shape)
            static = flow.compile(model, (x,), threads=args.threads,
                                  cache=False)
            with torch.no_grad():
                want = model(x)
            torch.testing.assert_close(dynamic(x), want, rtol=1e-3,
                                       atol=1e-3)
            medians = interleaved_medians(
                {"dynamic": lambda: dynamic(x), "static": lambda: static(x)},
                args.repeats, args.iterations)
            row = {"model": name, "batch": batch, "bound": bound,
                   "dynamic_ms": medians["dynamic"],
                   "static_ms": medians["static"],
                   "ratio": medians["dynamic"] / medians["static"],
                   "dynamic_compile_s": seconds}
            rows.append(row)
            print(f"{name:24s} b{batch:<3d} (bound {bound:3d}): dynamic "
                  f"{row['dynamic_ms']:8.2f} ms, static "
                  f"{row['static_ms']:8.2f} ms, ratio {row['ratio']:.3f}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
