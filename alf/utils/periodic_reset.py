"""``PeriodicReset``: re-initialize models every so many calls (ALF's
``alf.utils.common.PeriodicReset``).

Nikishin et al. 2022, "The Primacy Bias in Deep Reinforcement Learning"
(arXiv:2205.07802): an agent that keeps its replay buffer but periodically starts its
networks afresh unlearns what it overfitted to early data. ALF's ``SacAlgorithm``
does so with ``parameter_reset_period``; this is the piece that does the resetting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn as nn

from alf.utils.schedulers import as_scheduler


class PeriodicReset(nn.Module):
    """Every ``period`` calls, re-initializes ``models``, then runs ``post_processings``.

    As ALF's: a network (anything with ``copy()``, as ``alf.networks.Network``; a module
    without one must have ``reset_parameters()``) gets the parameters, and with
    ``reset_buffers`` the buffers, of a freshly built copy of itself (``copy()``: the
    same constructor arguments, new random weights from the global RNG), copied in place
    (the parameters stay the same tensors, so optimizers keep them and their state); an
    ``nn.ModuleList`` has each of its modules reset; a bare ``nn.Parameter`` gets back
    the value it had when this object was built. The call counter counts every call and
    restarts at 0 after a reset; ``period`` is read at every call (a schedule may change
    it) and a negative period never resets.

    Unlike ALF's, whose counter is a Python int that a resumed run restarts at 0, the
    counter is checkpointed (a buffer), so a resumed run resets at the same calls as an
    uninterrupted one. It is kept as a Python int between checkpoints and written to the
    buffer when the state is saved. The models are not sub-modules of this one.

    Args:
        models: networks, module lists of networks and parameters (None entries are
            skipped).
        period: a number (of calls) or a schedule of it; negative: no reset.
        reset_buffers: also reset the networks' buffers.
        post_processings: callables run, in order, after each reset (e.g. copying the
            reset critics to their targets).
    """

    def __init__(
        self,
        models: Sequence,
        period=1,
        reset_buffers: bool = True,
        post_processings: Sequence[Callable[[], None]] = (),
    ):
        super().__init__()
        models = [m for m in models if m is not None]
        for model in models:
            _check_resettable(model)
        object.__setattr__(self, "_models", models)
        self._period = as_scheduler(period)
        self._reset_buffers = reset_buffers
        self._post_processings = list(post_processings)
        self._init_values = {
            id(p): p.detach().clone() for p in models if isinstance(p, nn.Parameter)
        }
        self._num_calls = 0
        self.register_buffer("_count", torch.zeros((), dtype=torch.int64))

    @property
    def num_calls(self) -> int:
        """Calls since the last reset (or the start)."""
        return self._num_calls

    def forward(self) -> bool:
        """Count a call; reset when ``period`` calls have been counted. Returns whether
        this call reset the models."""
        self._num_calls += 1
        period = self._period()
        if period < 0 or self._num_calls < period:
            return False
        self.reset()
        self._num_calls = 0
        return True

    @torch.no_grad()
    def reset(self) -> None:
        """Re-initialize the models now (the counter is left alone), then run the
        post-processings."""
        for model in self._models:
            if isinstance(model, nn.Parameter):
                model.copy_(self._init_values[id(model)])
            else:
                self._reset_module(model)
        for post_processing in self._post_processings:
            post_processing()

    def _reset_module(self, module: nn.Module) -> None:
        if isinstance(module, nn.ModuleList):
            for m in module:
                self._reset_module(m)
        elif callable(getattr(module, "reset_parameters", None)):
            module.reset_parameters()
        else:
            fresh = module.copy()
            for target, source in zip(module.parameters(), fresh.parameters()):
                target.copy_(source)
            if self._reset_buffers:
                for target, source in zip(module.buffers(), fresh.buffers()):
                    target.copy_(source)
                for sub in module.modules():  # e.g. BatchRenorm1d's host-side call count
                    if callable(getattr(sub, "reset_running_stats", None)):
                        sub.reset_running_stats()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        self._count.fill_(self._num_calls)
        super()._save_to_state_dict(destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._num_calls = int(self._count)


def _check_resettable(model) -> None:
    if isinstance(model, nn.Parameter):
        return
    if isinstance(model, nn.ModuleList):
        for m in model:
            _check_resettable(m)
        return
    if not isinstance(model, nn.Module) or not (
        callable(getattr(model, "copy", None)) or callable(getattr(model, "reset_parameters", None))
    ):
        raise TypeError(
            f"PeriodicReset: {type(model).__name__} is neither a parameter nor a module with "
            "copy() (a Network) or reset_parameters()"
        )


def make_periodic_reset(
    period, models: Sequence, post_processings=(), name: str = "", arg="parameter_reset_period"
) -> PeriodicReset | None:
    """The ``PeriodicReset`` of an algorithm's ``parameter_reset_period`` (None when it is a
    negative number: no reset, and nothing added to the algorithm's state).

    Raises:
        ValueError: a number in [0, 1) (ALF would reset at every call), naming ``arg``.
    """
    if not callable(period) and not isinstance(period, (list, tuple)):  # else a schedule
        if period < 0:
            return None
        if period < 1:
            raise ValueError(
                f"{name}.{arg} must be >= 1 (iterations), or negative for no reset, got {period}"
            )
    return PeriodicReset(models, period, post_processings=post_processings)
