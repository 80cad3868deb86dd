"""ALF's ``capacity_ratio`` of an optimizer: only a fixed random part of each parameter is
trained (``CapacityMasks``); the optimizer specs (``optimizers.py``) take it as an argument.
"""

from __future__ import annotations

from typing import Annotated

import torch

import alf.summary
from alf.configuration.argtypes import Range, Schedule

#: ``capacity_ratio``: the share of each parameter trained, in [0, 1], or a schedule of it
CapacityRatio = Annotated[float | Schedule, Range(0, 1)]

CAPACITY_DEFAULTS = dict(capacity_ratio=1.0, min_capacity=8192, masked_out_value=None)


def capacity_args(capacity_ratio, min_capacity, masked_out_value) -> dict:
    """The capacity arguments of a factory call that differ from their defaults (only
    those are in the call the operative config renders)."""
    given = dict(
        capacity_ratio=capacity_ratio, min_capacity=min_capacity, masked_out_value=masked_out_value
    )
    return {
        k: v
        for k, v in given.items()
        if not (v is CAPACITY_DEFAULTS[k] or (_is_plain_number(v) and v == CAPACITY_DEFAULTS[k]))
    }


def _is_plain_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_capacity_args(capacity_ratio, min_capacity, name: str) -> None:
    """A one-line ``ValueError`` naming the argument for a bad ``capacity_ratio`` (a number
    outside [0, 1]; a schedule is checked at every step) or ``min_capacity`` (< 0)."""
    scheduled = callable(capacity_ratio) or isinstance(capacity_ratio, (list, tuple))
    if not scheduled and not 0.0 <= float(capacity_ratio) <= 1.0:
        raise ValueError(f"{name}: capacity_ratio must be in [0, 1], got {capacity_ratio}")
    if int(min_capacity) != min_capacity or min_capacity < 0:
        raise ValueError(f"{name}: min_capacity must be an integer >= 0, got {min_capacity}")


class CapacityMasks:
    """ALF's ``capacity_ratio``: each step of an optimizer trains a fixed random part of
    each parameter and leaves the rest frozen.

    As ALF's optimizers (``alf.optimizers.optimizers.wrap_optimizer``): element ``j`` of a
    parameter with ``n`` elements is trained when ``u_j < max(min_capacity / n, ratio)``,
    ``ratio`` the current ``capacity_ratio`` and ``u`` uniform numbers in [0, 1) drawn for
    that parameter once and for all (ALF keeps the generator state and draws them again
    at every step). So a parameter of at most ``min_capacity`` elements is trained whole,
    the masks of a growing ratio are nested (an element once trained stays trained), and
    nothing is frozen while the ratio is 1. After every step of the optimizer the frozen
    elements get back the values they had before it (``masked_out_value`` None: they keep
    their initial values, whatever the update, weight decay or momentum would have done)
    or are set to ``masked_out_value`` (then also when the optimizer is built). The
    optimizer's own state (Adam's moments) is not masked, as in ALF.

    The numbers ``u`` come, as in ALF, from one generator with torch's default seed per
    optimizer, drawn parameter after parameter in the optimizer's order; here on the CPU,
    so the masks depend neither on the device nor on the global seed (ALF draws on its
    default device, whose CUDA numbers differ from the CPU's). They are a function of the
    parameters' shapes alone: nothing needs checkpointing, and a resumed run has the same
    masks (a scheduled ratio follows the restored training progress). The masks of the
    current ratio are kept (a bool per element of each parameter that has frozen elements)
    and drawn again only when the ratio changes.

    It works through the optimizer's step hooks, so it applies to every step, through a
    grad scaler too; a skipped step (a non-finite update) changes nothing. The optimizer
    holds it as ``optimizer.capacity_masks``.

    Args:
        optimizer: the torch optimizer, with all its parameters.
        capacity_ratio: a scheduler (callable) giving the ratio, in [0, 1].
        min_capacity: the least number of elements of a parameter that is trained.
        masked_out_value: None, or the value of the frozen elements.
        name: the optimizer's name, for errors.
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        capacity_ratio,
        min_capacity: int = 8192,
        masked_out_value: float | None = None,
        name: str = "optimizer",
    ):
        self._ratio = capacity_ratio
        self._min_capacity = min_capacity
        self._masked_out_value = masked_out_value
        self._name = name
        generator = torch.Generator()  # torch's default seed, as ALF's unseeded generator
        self._draws = []  # (parameter, generator state before its numbers), n > min_capacity
        for group in optimizer.param_groups:
            for param in group["params"]:
                state = generator.get_state()
                torch.rand(param.shape, generator=generator, dtype=torch.float32)
                if param.numel() > min_capacity:
                    self._draws.append((param, state))
        self._masks_ratio = None
        self._masks = []
        self._saved = []
        self._step_ratio = 1.0
        optimizer.register_step_pre_hook(self._before_step)
        optimizer.register_step_post_hook(self._after_step)
        optimizer.capacity_masks = self
        if masked_out_value is not None:
            self._mask_out(self.masks(self.ratio()))

    def ratio(self) -> float:
        """The current ``capacity_ratio`` (a ``ValueError`` outside [0, 1])."""
        ratio = float(self._ratio())
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"{self._name}: capacity_ratio must be in [0, 1], got {ratio}")
        return ratio

    def masks(self, ratio: float) -> list:
        """``[(parameter, frozen)]`` at ``ratio``: ``frozen`` a bool tensor of the
        parameter's shape, True where the element is not trained; parameters with no
        frozen element are left out."""
        if ratio >= 1.0:
            return []
        if ratio != self._masks_ratio:
            generator = torch.Generator()
            masks = []
            for param, state in self._draws:
                trained = max(self._min_capacity / param.numel(), ratio)
                if trained >= 1.0:
                    continue
                generator.set_state(state)
                u = torch.rand(param.shape, generator=generator, dtype=torch.float32)
                masks.append((param, (u >= trained).to(param.device)))
            self._masks, self._masks_ratio = masks, ratio
        return self._masks

    def _before_step(self, optimizer, args, kwargs) -> None:
        self._step_ratio = self.ratio()
        masks = self.masks(self._step_ratio)
        if self._masked_out_value is None:
            self._saved = [param.detach().clone() for param, _ in masks]

    def _after_step(self, optimizer, args, kwargs) -> None:
        ratio = self._step_ratio
        masks = self.masks(ratio)
        if self._masked_out_value is None:
            with torch.no_grad():
                for (param, frozen), old in zip(masks, self._saved):
                    param.copy_(torch.where(frozen, old, param))
            self._saved = []
        else:
            self._mask_out(masks)
        if ratio < 1.0 and alf.summary.should_record_summaries():
            alf.summary.scalar("capacity_ratio", ratio)

    @torch.no_grad()
    def _mask_out(self, masks) -> None:
        for param, frozen in masks:
            param.masked_fill_(frozen, self._masked_out_value)
