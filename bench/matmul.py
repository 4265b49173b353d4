"""GEMM throughput: Flow's matmul (a library GEMM command) against
cblas_sgemm called directly from C++ on the same OpenBLAS, same threads.

    python bench/matmul.py [--threads 2] [--sizes 256 512 1024 2048]
"""

import argparse
import subprocess

import numpy as np

from common import BUILD, ROOT, compile_mlir, flow_median_ms, tmpdir


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    p.add_argument("--repeats", type=int, default=5,
                   help="runs of each side; the median of their medians is kept")
    args = p.parse_args()

    direct = BUILD / "bench" / "gemm_direct"
    direct.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["g++", "-O2", "-I/usr/include/x86_64-linux-gnu",
                    ROOT / "bench" / "gemm_direct.cpp", "-o", direct,
                    "-lopenblas"], check=True)

    print(f"| n | Flow GFLOP/s | cblas_sgemm GFLOP/s | Flow / direct |")
    print(f"|---|---|---|---|")
    for n in args.sizes:
        iters = max(5, int(2e10 / (2 * n ** 3)))
        with tmpdir() as work:
            t = f"tensor<{n}x{n}xf32>"
            fbin, _ = compile_mlir(
                f"func.func @mm(%a: {t}, %b: {t}) -> {t} {{\n"
                f"  %c = flow.matmul %a, %b : ({t}, {t}) -> {t}\n"
                f"  return %c : {t}\n}}\n", work)
            a = np.full((n, n), 0.5, np.float32)
            b = np.full((n, n), 0.25, np.float32)
            flow_runs, direct_runs = [], []
            for _ in range(args.repeats):
                flow_runs.append(flow_median_ms(fbin, [a, b], work,
                                                args.threads, iters, 3))
                out = subprocess.run([direct, str(n), str(args.threads),
                                      str(iters), "3"], check=True,
                                     capture_output=True, text=True)
                direct_runs.append(float(out.stdout))
        flops = 2 * n ** 3
        f_ms, d_ms = np.median(flow_runs), np.median(direct_runs)
        print(f"| {n} | {flops / f_ms / 1e6:.1f} | {flops / d_ms / 1e6:.1f} | "
              f"{d_ms / f_ms:.3f} |")


if __name__ == "__main__":
    main()
