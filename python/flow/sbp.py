"""SBP placements for flow.compile(..., mesh=, sbp=).

    flow.compile(model, (x, w), mesh=2, sbp={"x": flow.sbp.split(0)})
    flow.compile(model, (x,), mesh=(2, 2),
                 sbp={"x": (flow.sbp.split(0), flow.sbp.broadcast)})

An SBP says how a global tensor lies on one mesh axis: `split(d)` cuts
dimension d (the first N mod p devices get one more element), `broadcast`
gives every device the whole tensor, `partial_sum`/`partial_max` give
every device a full-shape tensor whose sum (max) is the value. On an nd
mesh, give a tuple with one entry per axis.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Union

__all__ = ["split", "broadcast", "partial_sum", "partial_max",
           "argument_sbps"]


def split(dim: int) -> str:
    """S(dim): the tensor is cut along dimension `dim`."""
    if int(dim) < 0:
        raise ValueError(f"split dimension must be >= 0, got {dim}")
    return f"S({int(dim)})"


broadcast = "B"
partial_sum = "P"
partial_max = "P(max)"


def _attr(value: Union[str, Sequence[str]], rank: int) -> str:
    entries = [value] if isinstance(value, str) else list(value)
    if len(entries) != rank:
        raise ValueError(f"an SBP on a mesh of rank {rank} needs {rank} "
                         f"entries, got {entries}")
    for e in entries:
        if not re.fullmatch(r"S\(\d+\)|B|P|P\(sum\)|P\(max\)", e):
            raise ValueError(f"'{e}' is not an SBP (use flow.sbp.split(d), "
                             "broadcast, partial_sum or partial_max)")
    return "#flow.sbp<[" + ", ".join(entries) + "]>"


def argument_sbps(names: List[Optional[str]],
                  placements: Dict[Union[str, int], object],
                  mesh_rank: int,
                  positions: Optional[List[int]] = None,
                  weights: Sequence[str] = ()) -> Dict[int, str]:
    """The `flow.sbp` attribute (MLIR text) of each placed argument, by
    argument index. `names` names each argument (None: no name);
    `placements` names arguments by name or by input position, position i
    being argument `positions[i]` (default: argument i). `weights` (the
    weights the program reads) only name what else could be placed in the
    error for an unknown name."""
    if positions is None:
        positions = list(range(len(names)))
    out = {}
    for key, value in placements.items():
        if isinstance(key, int):
            index = positions[key] if 0 <= key < len(positions) else None
        else:
            index = names.index(key) if key in names else None
        if index is None:
            known = [n for n in names if n is not None]
            also = (f" and the weights {list(weights)}" if weights and
                    isinstance(key, str) else "")
            raise ValueError(f"sbp names input {key!r}; the inputs are "
                             f"{known}{also}")
        out[index] = _attr(value, mesh_rank)
    return out
