"""Target networks: Polyak averaging ``θ' ← (1-τ) θ' + τ θ`` every ``period`` updates."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn


@torch.no_grad()
def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target ← (1-tau) target + tau source`` for parameters; buffers are copied."""
    _soft_update(_tensor_lists(target, source), tau)


def _tensor_lists(target: nn.Module, source: nn.Module):
    """``(target params, source params, [(target buffer, source buffer)])``."""
    target_params = list(target.parameters())
    source_params = list(source.parameters())
    if len(target_params) != len(source_params):
        raise ValueError("soft_update: target and source have different parameter counts")
    return target_params, source_params, list(zip(target.buffers(), source.buffers()))


@torch.no_grad()
def _soft_update(lists, tau: float) -> None:
    target_params, source_params, buffers = lists
    if tau == 1.0:
        torch._foreach_copy_(target_params, source_params)
    else:
        torch._foreach_lerp_(target_params, source_params, tau)
    for t, s in buffers:
        t.copy_(s)


class TargetUpdater(nn.Module):
    """Updates target models from models: every ``period`` calls, a soft update with ``tau``.

    It is a module only to checkpoint its call counter (a buffer), so a resumed
    run keeps the phase of periodic updates; the models are not sub-modules of it.
    The counter is kept as a Python int between checkpoints (a tensor increment
    and its read-back would cost two kernels and a sync on every update) and
    written to the buffer when the state is saved.

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
        object.__setattr__(self, "_models", list(models))
        object.__setattr__(self, "_targets", list(target_models))
        self._tau = tau
        self._period = period
        self._num_calls = 0
        self.register_buffer("_count", torch.zeros((), dtype=torch.int64))
        # The parameter lists are fixed once the models are built: gather them once.
        self._lists = [_tensor_lists(t, m) for t, m in zip(self._targets, self._models)]
        for lists, target in zip(self._lists, self._targets):
            _soft_update(lists, 1.0)
            target.requires_grad_(False)

    def forward(self) -> None:
        self._num_calls += 1
        if self._num_calls % self._period == 0:
            for lists in self._lists:
                _soft_update(lists, self._tau)

    def reset(self) -> None:
        """Copy the models to the targets (a hard update) and restart the call counter,
        as a new ``TargetUpdater`` would (ALF builds a new one after a parameter reset)."""
        for lists in self._lists:
            _soft_update(lists, 1.0)
        self._num_calls = 0

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        self._count.fill_(self._num_calls)
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._num_calls = int(self._count)
