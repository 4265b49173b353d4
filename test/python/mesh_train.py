"""compile_train on a mesh against compile_train in one process (run under
`mpirun -np N python mesh_train.py MESH SBP rep|zero|auto CHECKPOINT [SPEC]`
by test_distributed.py; `auto` is auto_parallel=True on mesh description
SPEC).

Both train the same MLP from the same weights on the same 6 batches with
AdamW and clipping. Losses agree to 1e-5 relative and the whole state to
rtol 1e-4, atol 1e-6 (only the order of the sums differs between layouts);
a checkpoint saved at step 3 on the mesh and resumed by a fresh compile
repeats steps 4-6 bit for bit. Each rank prints the bytes of state it keeps.
"""

import sys
import numpy as np
import torch
import flow

S = flow.sbp
mesh, sbp, shard = eval(sys.argv[1]), eval(sys.argv[2]), sys.argv[3] == "zero"
auto = sys.argv[3] == "auto"
checkpoint = sys.argv[4]


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(),
                               torch.nn.Linear(24, 5))


def loss_fn(m, x, y):
    return torch.nn.functional.cross_entropy(m(x), y)


g = torch.Generator().manual_seed(1)
batches = [(torch.randn(16, 12, generator=g),
            torch.randint(0, 5, (16,), generator=g)) for _ in range(6)]
optimizer = flow.optim.AdamW(lr=0.05, weight_decay=0.1)
kw = dict(optimizer=optimizer, max_grad_norm=0.5)
one = flow.compile_train(model(), loss_fn, batches[0], **kw)
kw.update(mesh=mesh, sbp=sbp, shard_state=shard)
if auto:
    kw.update(auto_parallel=True, mesh_spec=sys.argv[5])
many = flow.compile_train(model(), loss_fn, batches[0], **kw)
worst = 0.0
for i, (x, y) in enumerate(batches):
    a, b = float(one(x, y)), float(many(x, y))
    worst = max(worst, abs(a - b) / abs(a))
    if i == 2:
        many.save(checkpoint)
assert worst < 1e-5, worst
want, got = one.state_dict(), many.state_dict()
assert sorted(want) == sorted(got)
for name in want:
    np.testing.assert_allclose(got[name].numpy(), want[name].numpy(),
                               rtol=1e-4, atol=1e-6, err_msg=name)
# Resuming from the step-3 checkpoint on the mesh repeats steps 4-6 bit
# for bit.
again = flow.compile_train(model(), loss_fn, batches[0], **kw)
again.load(checkpoint)
assert again.steps == 3
for x, y in batches[3:]:
    again(x, y)
for name, value in again.state_dict().items():
    assert torch.equal(value, got[name]), name
print(f"rank {many.rank} trained: loss rel err {worst:.2g}, state bytes "
      f"{many.state_bytes} of {one.state_bytes}", flush=True)
