"""Compares DIR/out/result_i.npy with DIR/expected_i.npy: same shape and
dtype, and every element within atol + rtol * |expected|; prints the worst
element either way and exits 1 on a mismatch.

    compare.py DIR RTOL ATOL
"""

import pathlib
import sys

import numpy as np

directory = pathlib.Path(sys.argv[1])
rtol, atol = float(sys.argv[2]), float(sys.argv[3])
failed = False
expected_files = sorted(directory.glob("expected_*.npy"))
if not expected_files:
    sys.exit(f"no expected outputs in {directory}")
for expected_file in expected_files:
    i = expected_file.stem.split("_")[1]
    expected = np.load(expected_file)
    got = np.load(directory / "out" / f"result_{i}.npy")
    if got.shape != expected.shape or got.dtype != expected.dtype:
        print(f"result {i}: {got.dtype}{list(got.shape)}, expected "
              f"{expected.dtype}{list(expected.shape)}")
        failed = True
        continue
    error = np.abs(got.astype(np.float64) - expected)
    bound = atol + rtol * np.abs(expected)
    worst = int(np.argmax(error - bound))
    print(f"result {i}: max error {error.max():.3g}, worst element {worst}: "
          f"{got.flat[worst]!r} against {expected.flat[worst]!r}")
    if not np.all(error <= bound):
        failed = True
print("MISMATCH" if failed else "MATCH")
sys.exit(1 if failed else 0)
