r"""``TDLoss`` / ``OneStepTDLoss``: temporal-difference losses for critics.

On time-major ``[T, B]`` sequences (``T >= 2``) the target of row ``t`` is the
TD(λ) return built from rows ``t+1..T-1`` with the *target* values (no gradient):

.. math::

    y_t = r_{t+1} + \gamma\, d_{t+1} \big((1-\lambda) Q'_{t+1} + \lambda\, y_{t+1}\big),
    \qquad y_{T-1} = Q'_{T-1}

(``OneStepTDLoss``: λ = 0, :math:`y_t = r_{t+1} + \gamma d_{t+1} Q'_{t+1}`.)
``TimeStep.discount`` :math:`d` carries the episode ending: 0 after a real
termination, so the target does not bootstrap; 1 at a time limit, so it does.
At a LAST row there is no transition to the next row (auto reset), so the loss
there is 0; the last row of a sequence has no successor and its loss is 0 too.
The loss is ``td_error_loss_fn(y, Q)`` ``[T, B]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
from alf.algorithms.actor_critic_loss import element_wise_squared_loss
from alf.configuration.argtypes import Discount, Probability
from alf.data_structures import LossInfo, StepType
from alf.utils import value_ops


class TDLossInfo(NamedTuple):
    """Diagnostics: the TD target ``[T, B]`` and the TD error ``[T, B]``."""

    target: object = ()
    td_error: object = ()


@alf.configurable
class TDLoss:
    """TD(λ) critic loss.

    Args:
        gamma: discount factor (multiplies ``TimeStep.discount``).
        td_error_loss_fn: ``(target, prediction) -> loss`` elementwise.
        td_lambda: λ; 0 gives the one-step target.
        name: name in summaries.
    """

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        td_lambda: Probability = 0.95,
        name: str = "TDLoss",
    ):
        self._gamma = gamma
        self._td_error_loss_fn = td_error_loss_fn
        self._lambda = td_lambda
        self._name = name

    @property
    def gamma(self) -> float:
        return self._gamma

    def compute_targets(self, reward, step_type, discount, target_value) -> torch.Tensor:
        """TD(λ) targets ``[T-1, B, ...]`` from ``[T, B]`` rows (no gradient)."""
        with torch.no_grad():
            discounts = discount * self._gamma
            if self._lambda == 0:
                return value_ops.one_step_discounted_return(
                    reward, target_value, step_type, discounts
                )
            return value_ops.td_lambda(
                reward, target_value, step_type, discounts, td_lambda=self._lambda
            )

    def __call__(self, reward, step_type, discount, value, target_value) -> LossInfo:
        """Loss ``[T, B]`` of ``value`` ``[T, B, ...]`` against targets from ``target_value``.

        Args:
            reward, step_type, discount: ``[T, B]`` from the experience's time steps.
            value: the critic's prediction ``[T, B]`` (or ``[T, B, k]`` for several
                critics, all regressed to the same target).
            target_value: the target network's value ``[T, B]`` (or broadcastable).
        """
        targets = self.compute_targets(reward, step_type, discount, target_value)
        if value.ndim > targets.ndim:
            targets = targets.unsqueeze(-1).expand(*targets.shape, value.shape[-1])
        loss = self._td_error_loss_fn(targets, value[:-1])
        not_last = (step_type[:-1] != StepType.LAST).to(loss.dtype)
        if loss.ndim > not_last.ndim:
            not_last = not_last.unsqueeze(-1)
            loss = (loss * not_last).sum(-1)
        else:
            loss = loss * not_last
        loss = value_ops.pad_last(loss)
        td_error = value_ops.pad_last((targets - value[:-1]).detach())
        return LossInfo(
            loss=loss, extra=TDLossInfo(target=value_ops.pad_last(targets), td_error=td_error)
        )


@alf.configurable
class OneStepTDLoss(TDLoss):
    """One-step TD loss: ``y_t = r_{t+1} + γ d_{t+1} Q'_{t+1}``."""

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        name: str = "OneStepTDLoss",
    ):
        super().__init__(gamma=gamma, td_error_loss_fn=td_error_loss_fn, td_lambda=0.0, name=name)


def __getattr__(name):
    """ALF's import path of the quantile losses: ``from alf.algorithms.td_loss import
    TDQRLoss`` (they live in ``quantile_td_loss``, which imports this module)."""
    if name in ("TDQRLoss", "OneStepTDQRLoss", "quantile_huber_loss"):
        from alf.algorithms import quantile_td_loss

        return getattr(quantile_td_loss, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
