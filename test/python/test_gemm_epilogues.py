"""Element-wise kernels run as GEMM epilogues (--gemm-epilogues): tile by
tile after the GEMM's pieces on the same rows. The results must match the
unfused executable's (bit for bit where the same library kernels run: a
fused GEMM is cut by rows, so a 2-row GEMM runs as two 1-row products on
the GEMV kernel instead of one GEMM, which rounds differently in the last
bit), with and without in-place reuse, on GEMMs
large enough to be cut into pieces (at least 2^18 multiply-adds), including
a residual that reads the GEMM's own operand (which the epilogue must not
overwrite while other pieces still read it)."""

import json

import numpy as np
import pytest

from flowtest import compile_mlir, run_fbin

LINEAR = """
func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{k}x{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = flow.matmul %x, %w : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %1 = flow.add %0, %b : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  %2 = flow.gelu %1 : tensor<{m}x{n}xf32>
  return %2 : tensor<{m}x{n}xf32>
}}
"""

# Two layers with residuals: the second GEMM reads %h, and its epilogue adds
# %h back; %h dies there, so without care in-place reuse would let the
# epilogue write over %h while the GEMM's other pieces still read it.
RESIDUAL = """
func.func @main(%x: tensor<96x96xf32>, %w1: tensor<96x96xf32>, %w2: tensor<96x96xf32>) -> tensor<96x96xf32> {
  %0 = flow.matmul %x, %w1 : (tensor<96x96xf32>, tensor<96x96xf32>) -> tensor<96x96xf32>
  %h = flow.relu %0 : tensor<96x96xf32>
  %1 = flow.matmul %h, %w2 : (tensor<96x96xf32>, tensor<96x96xf32>) -> tensor<96x96xf32>
  %2 = flow.add %1, %h : (tensor<96x96xf32>, tensor<96x96xf32>) -> tensor<96x96xf32>
  %3 = flow.relu %2 : tensor<96x96xf32>
  return %3 : tensor<96x96xf32>
}
"""


# %a dies at the first GEMM, whose every piece reads all of it (it is the
# right-hand operand; pieces are blocks of the left one's rows); the
# epilogue's result %o must not be placed over %a's bytes, as it would be
# if the epilogue ran after the GEMM instead of during it.
CHAIN = """
func.func @main(%x: tensor<128x128xf32>, %w1: tensor<128x128xf32>, %b: tensor<128xf32>, %w2: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %a = flow.tanh %x : tensor<128x128xf32>
  %0 = flow.matmul %w1, %a : (tensor<128x128xf32>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %o = flow.add %0, %b : (tensor<128x128xf32>, tensor<128xf32>) -> tensor<128x128xf32>
  %1 = flow.matmul %o, %w2 : (tensor<128x128xf32>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %1 : tensor<128x128xf32>
}
"""


def test_epilogue_never_overwrites_what_the_gemm_reads(tmp_path):
    rng = np.random.default_rng(3)
    x, w1, w2 = (rng.standard_normal((128, 128)).astype(np.float32)
                 for _ in range(3))
    b = rng.standard_normal(128).astype(np.float32)
    plain, _, work = compiled(tmp_path, CHAIN, "plain")
    want = run_fbin(plain, [x, w1, b, w2], work, "--threads=2")[0]
    fused, report, work = compiled(tmp_path, CHAIN, "fused",
                                   "--gemm-epilogues")
    got = run_fbin(fused, [x, w1, b, w2], work, "--threads=2")[0]
    assert report["gemm_epilogues"] == 1
    np.testing.assert_array_equal(got, want)


def gelu(x):
    from math import erf, sqrt
    return 0.5 * x * (1 + np.vectorize(erf)(x / sqrt(2)))


def compiled(tmp_path, text, name, *flags):
    work = tmp_path / name
    work.mkdir()
    fbin = compile_mlir(text, work, f"--report={work / 'r.json'}", *flags)
    return fbin, json.loads((work / "r.json").read_text()), work


@pytest.mark.parametrize("m,k,n", [(64, 256, 96), (130, 70, 40), (2, 512, 384)])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_linear_epilogue_matches(tmp_path, m, k, n, threads):
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    text = LINEAR.format(m=m, k=k, n=n)
    plain, _, work = compiled(tmp_path, text, "plain")
    want = run_fbin(plain, [x, w, b], work, f"--threads={threads}")[0]
    fused, report, work = compiled(tmp_path, text, "fused", "--gemm-epilogues")
    got = run_fbin(fused, [x, w, b], work, f"--threads={threads}")[0]
    assert report["gemm_epilogues"] == 1
    # The fused GEMM runs in tiles of the output; one thread takes it
    # whole, so it is the same GEMM call. With more, a library may sum K
    # in an order that depends on the tile's shape (oneDNN's AVX2 SGEMM
    # does; its AVX-512 one did not): a few f32 ulps apart.
    if threads == 1 and m > 2:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5,
                                   atol=1e-6 * np.abs(want).max())
    # And both against numpy (f32 accumulation in a different order).
    ref = gelu((x.astype(np.float64) @ w + b))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("in_place", [False, True])
def test_residual_epilogue_keeps_the_gemm_operand(tmp_path, in_place):
    rng = np.random.default_rng(7)
    x, w1, w2 = (rng.standard_normal((96, 96)).astype(np.float32)
                 for _ in range(3))
    flags = ["--in-place"] if in_place else []
    plain, _, work = compiled(tmp_path, RESIDUAL, "plain", *flags)
    want = run_fbin(plain, [x, w1, w2], work, "--threads=2")[0]
    fused, report, work = compiled(tmp_path, RESIDUAL, "fused",
                                   "--gemm-epilogues", *flags)
    got = run_fbin(fused, [x, w1, w2], work, "--threads=2")[0]
    assert report["gemm_epilogues"] >= 1
    np.testing.assert_array_equal(got, want)
    h = np.maximum(x.astype(np.float64) @ w1, 0)
    ref = np.maximum(h @ w2 + h, 0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_flow_run_profile_accounts_for_the_commands(tmp_path):
    import re
    import subprocess

    from flowtest import tool
    rng = np.random.default_rng(5)
    x, w1, w2 = (rng.standard_normal((128, 128)).astype(np.float32)
                 for _ in range(3))
    b = rng.standard_normal(128).astype(np.float32)
    fbin, _, work = compiled(tmp_path, CHAIN, "fused", "--gemm-epilogues")
    args = []
    for i, a in enumerate([x, w1, b, w2]):
        np.save(work / f"in{i}.npy", a)
        args.append(f"--input={work / f'in{i}.npy'}")
    proc = subprocess.run([str(tool("flow-run")), str(fbin), *args,
                           "--iterations=3", "--profile"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    total = float(re.search(r"profile: ([0-9.e+-]+) ms per call", out).group(1))
    kinds = {k: (int(n), float(ms)) for k, n, ms in
             re.findall(r"^  (\w+) +(\d+) commands +([0-9.]+) ms", out, re.M)}
    # One kernel (tanh) runs on its own, the epilogue with the first GEMM.
    assert kinds["gemm"][0] == 2 and kinds["dispatch"][0] == 2, out
    assert abs(sum(ms for _, ms in kinds.values()) - total) < 0.01 + 0.01 * total
    # Without --iterations there is nothing to profile.
    proc = subprocess.run([str(tool("flow-run")), str(fbin), *args,
                           "--profile"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "--profile needs --iterations" in proc.stderr
