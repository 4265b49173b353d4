"""ONNX's recurrent layers (RNN, GRU, LSTM), unrolled over the sequence."""

from __future__ import annotations

import numpy as np

from .. import _composites as composites
from .._emitter import Unsupported, Value
from ._core import _float_input, _handles, _rounds_once


# Recurrent layers -----------------------------------------------------------

def _rnn_activation(self, name, alpha, beta):
    """One of ONNX's recurrent activations as a function of a Value (the
    composite ones as the ops of the same name build them)."""
    e = self.e

    def scal(v, x):
        return e.scalar(v, x.dtype)
    table = {
        "Sigmoid": lambda x: e.unary("sigmoid", x),
        "Tanh": lambda x: e.unary("tanh", x),
        "Relu": lambda x: e.unary("relu", x),
        "Affine": lambda x: e.binary("add", e.binary(
            "mul", x, scal(alpha, x)), scal(beta, x)),
        "LeakyRelu": lambda x: composites.leaky_relu(e, x, alpha),
        "ThresholdedRelu": lambda x: composites.thresholded_relu(e, x, alpha),
        "ScaledTanh": lambda x: e.binary("mul", scal(alpha, x), e.unary(
            "tanh", e.binary("mul", x, scal(beta, x)))),
        "HardSigmoid": lambda x: composites.hard_sigmoid(e, x, alpha, beta),
        "Elu": lambda x: composites.elu(e, x, alpha),
        "Softsign": lambda x: composites.softsign(e, x),
        "Softplus": lambda x: composites.softplus(e, x),
    }
    if name not in table:
        raise Unsupported(f"activation {name}")
    return table[name]


# Activations that read activation_alpha (and _beta), and their defaults.
_RNN_ALPHA = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, None),
              "ThresholdedRelu": (1.0, None), "ScaledTanh": (1.0, 1.0),
              "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}


def _recurrent(kind):
    """ONNX RNN, GRU and LSTM, unrolled over the (static) sequence: the
    input projection of every step is one matmul; each step adds the
    recurrent projection and applies the gates. sequence_lens masks the
    steps past each batch element's length (state kept, output 0), which
    also runs a reverse direction from each element's own last step."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    default_acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                    "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]

    def handler(self, ins, attrs):
        e = self.e

        def opt(i):
            return ins[i] if len(ins) > i and ins[i] is not None and \
                (not isinstance(ins[i], np.ndarray) or ins[i].size) else None
        x = _float_input(self, ins[0])
        dtype = x.dtype
        layout = int(attrs.get("layout", 0))
        if layout:
            x = e.transpose(x, (1, 0, 2))
        seq, batch, _ = x.shape
        w, r = self.value(ins[1], dtype), self.value(ins[2], dtype)
        hidden = int(attrs.get("hidden_size", r.shape[-1]))
        direction = attrs.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) \
            else direction
        if direction not in ("forward", "reverse", "bidirectional"):
            raise Unsupported(f"direction '{direction}'")
        dirs = 2 if direction == "bidirectional" else 1
        names = [a.decode() if isinstance(a, bytes) else a
                 for a in attrs.get("activations", [])] or \
            default_acts * dirs
        alphas = list(attrs.get("activation_alpha", []))
        betas = list(attrs.get("activation_beta", []))
        acts = []
        for name in names:
            alpha, beta = _RNN_ALPHA.get(name, (None, None))
            if alpha is not None and alphas:
                alpha = alphas.pop(0)
            if beta is not None and betas:
                beta = betas.pop(0)
            acts.append(_rnn_activation(self, name, alpha, beta))
        per_dir = len(default_acts)
        clip = attrs.get("clip")
        input_forget = bool(attrs.get("input_forget", 0))
        before_reset = bool(attrs.get("linear_before_reset", 0))

        def clipped(v):
            if clip is None:
                return v
            return e.binary("minimum", e.binary(
                "maximum", v, e.scalar(-clip, dtype)), e.scalar(clip, dtype))

        def state(i):
            v = opt(i)
            if v is None:
                return None
            v = self.value(v, dtype)
            return e.transpose(v, (1, 0, 2)) if layout else v

        bias = opt(3)
        bias = self.value(bias, dtype) if bias is not None else None
        init_h, init_c = state(5), state(6) if kind == "LSTM" else None
        peep = opt(7) if kind == "LSTM" else None
        peep = self.value(peep, dtype) if peep is not None else None
        lens = opt(4)
        masks = None
        if lens is not None:
            if not isinstance(lens, Value) and (np.asarray(lens) == seq).all():
                lens = None
            else:
                lens = e.reshape(self.value(lens, "i64"), (batch, 1))
                masks = [e.compare("lt", e.scalar(t, "i64"), lens)
                         for t in range(seq)]

        def row(v, d, lo, hi):
            """v[d, lo:hi] of a [dirs, n, ...] tensor as [hi - lo, ...]."""
            starts = [d, lo] + [0] * (len(v.shape) - 2)
            limits = [d + 1, hi] + list(v.shape[2:])
            part = e.slice(v, starts, limits, [1] * len(v.shape))
            return e.reshape(part, part.shape[1:])

        def cols(v, g):
            """Gate g's columns of a [batch, gates * hidden] value."""
            return e.slice(v, [0, g * hidden], [batch, (g + 1) * hidden],
                           [1, 1])

        flat = e.reshape(x, (seq * batch, x.shape[2]))
        ys, hs, cs = [], [], []
        zero = e.broadcast_to(e.scalar(0, dtype), (batch, hidden))
        for d in range(dirs):
            f, g, h_act = (acts[d * per_dir:(d + 1) * per_dir] +
                           [None] * 3)[:3]
            wd = row(w, d, 0, gates * hidden)
            rd = row(r, d, 0, gates * hidden)
            proj = e.matmul(flat, wd, transpose_rhs=True)
            if bias is not None:
                wb = row(bias, d, 0, gates * hidden)
                rb = row(bias, d, gates * hidden, 2 * gates * hidden)
                # GRU's candidate keeps its recurrent bias inside the reset
                # with linear_before_reset.
                if kind == "GRU":
                    proj = e.binary("add", proj, wb)
                else:
                    proj = e.binary("add", proj, e.binary("add", wb, rb))
            proj = e.reshape(proj, (seq, batch, gates * hidden))
            h = row(init_h, d, 0, batch) if init_h is not None else zero
            c = row(init_c, d, 0, batch) if init_c is not None else zero
            outs = [None] * seq
            steps = range(seq) if direction == "forward" or \
                (direction == "bidirectional" and d == 0) else \
                range(seq - 1, -1, -1)
            for t in steps:
                xt = e.reshape(e.slice(proj, [t, 0, 0],
                                       [t + 1, batch, gates * hidden],
                                       [1, 1, 1]), (batch, gates * hidden))
                if kind == "GRU":
                    hr = e.matmul(h, e.slice(rd, [0, 0], [2 * hidden, hidden],
                                             [1, 1]), transpose_rhs=True)
                    if bias is not None:
                        hr = e.binary("add", hr, e.slice(
                            rb, [0], [2 * hidden], [1]))
                    z = f(clipped(e.binary("add", cols(xt, 0), cols(hr, 0))))
                    rg = f(clipped(e.binary("add", cols(xt, 1), cols(hr, 1))))
                    rh = e.slice(rd, [2 * hidden, 0], [3 * hidden, hidden],
                                 [1, 1])
                    rbh = e.slice(rb, [2 * hidden], [3 * hidden], [1]) \
                        if bias is not None else None
                    if before_reset:
                        lin = e.matmul(h, rh, transpose_rhs=True)
                        if rbh is not None:
                            lin = e.binary("add", lin, rbh)
                        cand = e.binary("mul", rg, lin)
                    else:
                        cand = e.matmul(e.binary("mul", rg, h), rh,
                                        transpose_rhs=True)
                        if rbh is not None:
                            cand = e.binary("add", cand, rbh)
                    n = g(clipped(e.binary("add", cols(xt, 2), cand)))
                    one = e.scalar(1, dtype)
                    new_h = e.binary("add", e.binary("mul", e.binary(
                        "sub", one, z), n), e.binary("mul", z, h))
                    new_c = None
                else:
                    pre = e.binary("add", xt,
                                   e.matmul(h, rd, transpose_rhs=True))
                    if kind == "RNN":
                        new_h, new_c = f(clipped(pre)), None
                    else:
                        def peeped(gate, k, cell):
                            v = cols(pre, gate)
                            if peep is not None:
                                p = e.slice(peep, [d, k * hidden],
                                            [d + 1, (k + 1) * hidden], [1, 1])
                                v = e.binary("add", v, e.binary("mul", p,
                                                                cell))
                            return f(clipped(v))
                        i = peeped(0, 0, c)
                        forget = e.binary("sub", e.scalar(1, dtype), i) \
                            if input_forget else peeped(2, 2, c)
                        cand = g(clipped(cols(pre, 3)))
                        new_c = e.binary("add", e.binary("mul", forget, c),
                                         e.binary("mul", i, cand))
                        o = peeped(1, 1, new_c)
                        new_h = e.binary("mul", o, h_act(new_c))
                out = new_h
                if masks is not None:
                    new_h = e.select(masks[t], new_h, h)
                    if new_c is not None:
                        new_c = e.select(masks[t], new_c, c)
                    out = e.select(masks[t], out, zero)
                h = new_h
                c = new_c if new_c is not None else c
                outs[t] = e.reshape(out, (1, 1, batch, hidden))
            ys.append(e.concat(outs, 0))
            hs.append(e.reshape(h, (1, batch, hidden)))
            if kind == "LSTM":
                cs.append(e.reshape(c, (1, batch, hidden)))
        results = [e.concat(ys, 1), e.concat(hs, 0)]
        if kind == "LSTM":
            results.append(e.concat(cs, 0))
        if layout:  # batch first: Y [batch, seq, dirs, H], states [batch, ...]
            results = [e.transpose(r, (2, 0, 1, 3) if len(r.shape) == 4
                                   else (1, 0, 2)) for r in results]
        return tuple(results)
    return handler


for _kind in ("RNN", "GRU", "LSTM"):
    _handles(_kind)(_rounds_once(_recurrent(_kind)))
