"""Target networks: Polyak averaging ``θ' ← (1-τ) θ' + τ θ`` every ``period`` updates."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target ← (1-tau) target + tau source`` for parameters; buffers are copied."""
    target_params = list(target.parameters())
    source_params = list(source.parameters())
    if len(target_params) != len(source_params):
        raise ValueError("soft_update: target and source have different parameter counts")
    if tau == 1.0:
        torch._foreach_copy_(target_params, source_params)
    else:
        torch._foreach_lerp_(target_params, source_params, tau)
    for t, s in zip(target.buffers(), source.buffers()):
        t.copy_(s)


class TargetUpdater(nn.Module):
    """Updates target models from models: every ``period`` calls, a soft update with ``tau``.

    It is a module only to checkpoint its call counter (a buffer), so a resumed
    run keeps the phase of periodic updates; the models are not sub-modules of it.

    Args:
        models: the trained models.
        target_models: their targets (same architectures); initialized as copies.
        tau: interpolation factor (1 = hard copy).
        period: update every so many calls.
    """

    def __init__(
        self,
        models: Sequence[nn.Module],
        target_models: Sequence[nn.Module],
        tau: float = 0.005,
        period: int = 1,
    ):
        super().__init__()
        if not 0.0 < tau <= 1.0:
            raise ValueError(f"target_update_tau must be in (0, 1], got {tau}")
        if period < 1:
            raise ValueError(f"target_update_period must be >= 1, got {period}")
        # Plain lists (not ModuleLists): the owner registers the models itself.
        object.__setattr__(self, "_models", list(models))
        object.__setattr__(self, "_targets", list(target_models))
        self._tau = tau
        self._period = period
        self.register_buffer("_count", torch.zeros((), dtype=torch.int64))
        for target, model in zip(self._targets, self._models):
            soft_update(target, model, 1.0)
            target.requires_grad_(False)

    def forward(self) -> None:
        self._count += 1
        if int(self._count) % self._period == 0:
            for target, model in zip(self._targets, self._models):
                soft_update(target, model, self._tau)
