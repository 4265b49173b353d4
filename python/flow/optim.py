"""Optimizers for flow.compile_train, with torch.optim's settings and
defaults. Each is compiled into the training step (flow-apply-optimizer):
the update runs in the executable, next to the gradients."""

from dataclasses import dataclass
from typing import Tuple


@dataclass
class SGD:
    """torch.optim.SGD: `weight_decay` is added to the gradient; with
    `momentum`, a momentum buffer per parameter (dampening 0, no
    Nesterov)."""
    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0

    def _settings(self):
        return {"kind": "sgd", "momentum": self.momentum,
                "weight_decay": self.weight_decay}


@dataclass
class AdamW:
    """torch.optim.AdamW: decoupled weight decay, bias-corrected moments
    (no amsgrad)."""
    lr: float = 1e-3
    betas: Tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 1e-2

    def _settings(self):
        return {"kind": "adamw", "beta1": self.betas[0],
                "beta2": self.betas[1], "eps": self.eps,
                "weight_decay": self.weight_decay}


def _dictionary(optimizer, max_grad_norm, skip_nonfinite=False,
                shard_state=False) -> str:
    """The `flow.optimizer` attribute text of `optimizer`."""
    settings = optimizer._settings()
    if max_grad_norm:
        settings["max_grad_norm"] = float(max_grad_norm)
    if skip_nonfinite:
        settings["skip_nonfinite"] = True
    if shard_state:
        settings["shard_state"] = True
    entries = []
    for key, value in settings.items():
        if isinstance(value, bool):
            entries.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, str):
            entries.append(f'{key} = "{value}"')
        else:
            entries.append(f"{key} = {float(value):.17e} : f64")
    return "{" + ", ".join(entries) + "}"
