"""Inputs and a numpy check for examples/mlp.mlir (used by scripts/demo.sh).

    python examples/mlp_data.py make DIR    # writes DIR/input_*.npy
    python examples/mlp_data.py check DIR   # compares DIR/result_0.npy
"""

import pathlib
import sys

import numpy as np

SHAPES = [(8, 784), (784, 256), (256,), (256, 128), (128,), (128, 10), (10,)]


def make(out: pathlib.Path):
    rng = np.random.default_rng(0)
    for i, shape in enumerate(SHAPES):
        scale = 1.0 if i == 0 else 1 / np.sqrt(shape[0])
        np.save(out / f"input_{i}.npy",
                (rng.standard_normal(shape) * scale).astype(np.float32))
    print(" ".join(f"--input={out}/input_{i}.npy" for i in range(len(SHAPES))))


def check(out: pathlib.Path):
    x = [np.load(out / f"input_{i}.npy").astype(np.float64)
         for i in range(len(SHAPES))]
    h = np.maximum(x[0] @ x[1] + x[2], 0)
    h = np.maximum(h @ x[3] + x[4], 0)
    logits = h @ x[5] + x[6]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    got = np.load(out / "result_0.npy")
    err = np.abs(got - want).max()
    print(f"max |flow - numpy| = {err:.2e}; predicted classes: "
          f"{got.argmax(axis=1).tolist()}")
    sys.exit(0 if err < 1e-5 else 1)


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](pathlib.Path(sys.argv[2]))
