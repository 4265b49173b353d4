"""The three hand-written models in test/models, compiled for the CPU and run
by flow-run, against numpy references computed in float64. f32 results are
checked to rtol 1e-4 / atol 1e-5: whole networks accumulate a few ulp per
layer (different summation orders in GEMMs and reductions)."""

import math

import numpy as np
import pytest

from conftest import ROOT
from flowtest import compile_mlir, run_fbin
from test_e2e_ops import conv_ref, erf, pool_ref

RNG = np.random.default_rng(7)


def param(*shape, scale=None):
    scale = scale if scale is not None else 1 / math.sqrt(shape[0])
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def compile_model(name, tmp_path):
    return compile_mlir((ROOT / "test/models" / f"{name}.mlir").read_text(),
                        tmp_path)


def layer_norm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def test_mlp(tmp_path):
    x = RNG.standard_normal((16, 784)).astype(np.float32)
    ws = [param(784, 256), param(256, scale=0.1), param(256, 128),
          param(128, scale=0.1), param(128, 10), param(10, scale=0.1)]
    h = x.astype(np.float64)
    for i in range(3):
        h = h @ ws[2 * i] + ws[2 * i + 1]
        if i < 2:
            h = np.maximum(h, 0)
    want = h - h.max(1, keepdims=True)
    want = want - np.log(np.exp(want).sum(1, keepdims=True))
    got = run_fbin(compile_model("mlp", tmp_path), [x, *ws], tmp_path)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cnn(tmp_path):
    x = RNG.standard_normal((2, 3, 16, 16)).astype(np.float32)
    k1, c1 = param(8, 3, 3, 3, scale=0.3), param(8, scale=0.1)
    bn1 = [param(8, scale=1), param(8, scale=0.1), param(8, scale=0.1),
           RNG.uniform(0.5, 2, 8).astype(np.float32)]
    k2 = param(16, 8, 3, 3, scale=0.15)
    bn2 = [param(16, scale=1), param(16, scale=0.1), param(16, scale=0.1),
           RNG.uniform(0.5, 2, 16).astype(np.float32)]
    w, b = param(256, 10), param(10, scale=0.1)

    def bn(h, s, t, m, v):
        c = lambda a: a.reshape(1, -1, 1, 1).astype(np.float64)
        return (h - c(m)) / np.sqrt(c(v) + 1e-5) * c(s) + c(t)

    h = conv_ref(x, k1, c1, (1, 1), (1, 1, 1, 1), (1, 1), 1).astype(np.float64)
    h = np.maximum(bn(h, *bn1), 0)
    h = pool_ref(h, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, "max")
    h = conv_ref(h, k2, None, (1, 1), (1, 1, 1, 1), (1, 1), 1).astype(np.float64)
    h = np.maximum(bn(h, *bn2), 0)
    h = pool_ref(h, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, "max")
    want = h.reshape(2, 256).astype(np.float64) @ w + b
    inputs = [x, k1, c1, *bn1, k2, *bn2, w, b]
    got = run_fbin(compile_model("cnn", tmp_path), inputs, tmp_path)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_transformer_encoder_layer(tmp_path):
    x = RNG.standard_normal((2, 16, 64)).astype(np.float32)
    names = ["wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "g1", "n1",
             "w1", "c1", "w2", "c2", "g2", "n2"]
    shapes = {"wq": (64, 64), "wk": (64, 64), "wv": (64, 64), "wo": (64, 64),
              "w1": (64, 256), "w2": (256, 64), "c1": (256,)}
    p = {}
    for n in names:
        shape = shapes.get(n, (64,))
        if n.startswith("g"):
            p[n] = (1 + 0.1 * RNG.standard_normal(shape)).astype(np.float32)
        elif len(shape) == 1:
            p[n] = param(*shape, scale=0.1)
        else:
            p[n] = param(*shape)
    f = {k: v.astype(np.float64) for k, v in p.items()}
    xf = x.astype(np.float64)

    def heads(t):
        return t.reshape(2, 16, 4, 16).transpose(0, 2, 1, 3)

    q = heads(xf @ f["wq"] + f["bq"])
    k = heads(xf @ f["wk"] + f["bk"])
    v = heads(xf @ f["wv"] + f["bv"])
    s = q @ k.transpose(0, 1, 3, 2) * 0.25
    s = np.exp(s - s.max(-1, keepdims=True))
    s = s / s.sum(-1, keepdims=True)
    o = (s @ v).transpose(0, 2, 1, 3).reshape(2, 16, 64)
    h = layer_norm(xf + o @ f["wo"] + f["bo"], f["g1"], f["n1"])
    u = h @ f["w1"] + f["c1"]
    u = 0.5 * u * (1 + erf(u / math.sqrt(2)))
    want = layer_norm(h + u @ f["w2"] + f["c2"], f["g2"], f["n2"])
    got = run_fbin(compile_model("transformer", tmp_path),
                   [x, *[p[n] for n in names]], tmp_path)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_thread_counts_agree(tmp_path, threads):
    """Workgroups split the same way whatever the thread count: results are
    identical bit for bit."""
    x = RNG.standard_normal((2, 16, 64)).astype(np.float32)
    fbin = compile_model("transformer", tmp_path)
    params = [param(64, 64), param(64), param(64, 64), param(64),
              param(64, 64), param(64), param(64, 64), param(64),
              param(64), param(64), param(64, 256), param(256),
              param(256, 64), param(64), param(64), param(64)]
    one = run_fbin(fbin, [x, *params], tmp_path, "--threads=1")[0]
    many = run_fbin(fbin, [x, *params], tmp_path, f"--threads={threads}")[0]
    np.testing.assert_array_equal(one, many)
