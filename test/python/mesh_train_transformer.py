"""A 2-layer transformer LM with dropout 0.1 trained with
compile_train(mesh=2) against one process (run under
`mpirun -np 2 python mesh_train_transformer.py rep|zero|tp` by
test_distributed.py).

Dropout's masks come from Flow's counter-based generator, which draws the
same numbers on any layout, so the mesh step drops what one process drops:
losses agree to 1e-5 relative over 4 AdamW steps with clipping and label
smoothing, and the whole state to rtol 1e-4, atol 1e-6, except attention's
key bias, whose true gradient is zero (softmax ignores a constant added to
a row): both sides compute rounding noise there, which Adam turns into
steps of up to the learning rate (test_training.py compares it the same
way). Elsewhere Adam amplifies rounding the same way, less: where an
element's gradient nearly cancels at some step, its relative rounding
(up to about 1e-3 there) becomes that share of the step, lr. So every
element is within 1e-3 x lr per step (4e-6 after 4 steps) and all but
0.1% of them within the tight tolerance (seed 7 on an AVX-512 machine: one query
bias element is 1.8e-6 off; the rest within 5e-7).
"""

import sys

import numpy as np
import torch

import flow

S = flow.sbp
VOCAB, WIDTH, SEQ = 50, 32, 16


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Parameter(torch.randn(SEQ, WIDTH) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(WIDTH, 4, 64, dropout=0.1,
                                                 batch_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, 2)
        self.head = torch.nn.Linear(WIDTH, VOCAB)

    def forward(self, ids):
        return self.head(self.layers(self.emb(ids) + self.pos))


def make():
    torch.manual_seed(0)
    return LM().train()


def loss(m, ids, t):
    return torch.nn.functional.cross_entropy(
        m(ids).reshape(-1, VOCAB), t.reshape(-1), label_smoothing=0.1)


g = torch.Generator().manual_seed(3)
data = [(torch.randint(0, VOCAB, (8, SEQ), generator=g),
         torch.randint(0, VOCAB, (8, SEQ), generator=g)) for _ in range(4)]
kw = dict(optimizer=flow.optim.AdamW(lr=1e-3), max_grad_norm=1.0, seed=7)
extra = {"rep": {}, "zero": dict(shard_state=True),
         "tp": dict(sbp={0: S.broadcast, 1: S.broadcast,
                         "head.weight": S.split(0),
                         "head.bias": S.split(0)})}[sys.argv[1]]
one = flow.compile_train(make(), loss, data[0], **kw)
many = flow.compile_train(make(), loss, data[0], mesh=2, **kw, **extra)
for ids, t in data:
    a, b = float(one(ids, t)), float(many(ids, t))
    assert abs(a - b) <= 1e-5 * abs(a), (a, b)
want, got = one.state_dict(), many.state_dict()
assert sorted(want) == sorted(got)
loose = size = 0
for name in want:
    w, v = want[name].numpy(), got[name].numpy()
    if name.endswith("self_attn.in_proj_bias"):
        w, v = np.delete(w, np.s_[WIDTH:2 * WIDTH]), \
            np.delete(v, np.s_[WIDTH:2 * WIDTH])
    np.testing.assert_allclose(v, w, rtol=1e-4, atol=1e-3 * 1e-3 * len(data),
                               err_msg=name)
    loose += int((np.abs(v - w) > 1e-4 * np.abs(w) + 1e-6).sum())
    size += v.size
assert loose <= 1e-3 * size, (loose, size)
print(f"rank {many.rank} trained: loss {a:.6f}, state bytes "
      f"{many.state_bytes} of {one.state_bytes}", flush=True)
