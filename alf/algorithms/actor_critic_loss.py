r"""``ActorCriticLoss``: the advantage actor-critic (A2C) loss.

On time-major infos ``[T, B]`` whose last row is the bootstrap row:

.. math::

    A_t = \mathrm{GAE}_\lambda(r, V, \gamma\,d)_t \;\text{(or } G_t - V_t\text{)},\qquad
    L_t = -\hat A_t \log\pi(a_t|s_t) + c_V\,\ell(G_t, V_t) - c_H\,H[\pi(\cdot|s_t)]

with :math:`\hat A` the (optionally normalized, clipped) advantage, held constant,
:math:`G_t = A_t + V_t` the value target (λ-return), :math:`\ell` the TD error
loss (squared by default), :math:`c_V` ``td_loss_weight`` and :math:`c_H`
``entropy_regularization``. The last row has no successor and gets a zero
advantage; the algorithm masks it out together with LAST steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.summary
from alf.configuration.argtypes import Discount, Probability
from alf.data_structures import LossInfo, StepType
from alf.parallel import collectives
from alf.utils import value_ops
from alf.utils.losses import (  # noqa: F401 (re-exported: their former home)
    element_wise_huber_loss,
    element_wise_squared_loss,
)


class ActorCriticLossInfo(NamedTuple):
    """Loss terms for summaries (each ``[T, B]``)."""

    pg_loss: object = ()
    td_loss: object = ()
    neg_entropy: object = ()


def normalize_advantages(
    advantages: torch.Tensor, valid: torch.Tensor, eps: float = 1e-8
) -> torch.Tensor:
    """Zero mean, unit std over the ``valid`` entries (others are left at 0); with several
    learner ranks, over the valid entries of all ranks' minibatches (their pooled moments),
    as one process would normalize the whole minibatch."""
    mask = valid.to(advantages.dtype)
    if collectives.is_active():
        return _normalize_across_ranks(advantages, mask, eps)
    count = mask.sum().clamp(min=1.0)
    masked = (advantages - (advantages * mask).sum() / count) * mask
    var = (masked**2).sum() / (count - 1).clamp(min=1.0)
    return masked / (var.sqrt() + eps)


def _normalize_across_ranks(advantages, mask, eps: float) -> torch.Tensor:
    values = advantages.detach().to(torch.float64)
    weight = mask.to(torch.float64)
    count = int(weight.sum().item())
    mean = (values * weight).sum() / max(count, 1)
    var = (((values - mean) * weight) ** 2).sum() / max(count, 1)
    total, mean, var = collectives.pooled_moments(count, mean, var)
    unbiased = var * total / max(total - 1, 1)
    masked = (advantages - mean.to(advantages.dtype)) * mask
    return masked / (unbiased.sqrt().to(advantages.dtype) + eps)


@alf.configurable
class ActorCriticLoss:
    """The A2C loss (Mnih et al. 2016) with optional GAE (Schulman et al. 2016).

    Args:
        gamma: discount factor (multiplies ``TimeStep.discount``).
        td_error_loss_fn: ``(target, prediction) -> loss`` for the value.
        use_gae: advantages by GAE(λ) instead of ``G - V``.
        td_lambda: λ of GAE.
        use_td_lambda_return: value target ``A + V`` (λ-return) instead of the
            discounted return.
        normalize_advantages: normalize advantages over the valid steps.
        advantage_clip: clip advantages to ``[-c, c]`` (None: no clipping).
        entropy_regularization: coefficient of the entropy bonus (None: 0).
        td_loss_weight: coefficient of the value loss.
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        use_gae: bool = False,
        td_lambda: Probability = 0.95,
        use_td_lambda_return: bool = True,
        normalize_advantages: bool = False,
        advantage_clip: float | None = None,
        entropy_regularization: float | None = None,
        td_loss_weight: float = 1.0,
        debug_summaries: bool = False,
        name: str = "ActorCriticLoss",
    ):
        self._gamma = gamma
        self._td_error_loss_fn = td_error_loss_fn
        self._use_gae = use_gae
        self._lambda = td_lambda
        self._use_td_lambda_return = use_td_lambda_return
        self._normalize_advantages = normalize_advantages
        self._advantage_clip = advantage_clip
        self._entropy_regularization = entropy_regularization or 0.0
        self._td_loss_weight = td_loss_weight
        self._debug_summaries = debug_summaries
        self._name = name

    @property
    def gamma(self) -> float:
        return self._gamma

    @property
    def td_lambda(self) -> float:
        return self._lambda

    def uses_entropy(self) -> bool:
        """Whether ``__call__`` needs ``info.entropy`` now: for the entropy bonus or for
        summaries. ``train_step`` skips computing it otherwise (it costs a softmax and
        four more kernels, forward and backward, on every update)."""
        return bool(self._entropy_regularization) or alf.summary.should_record_summaries()

    def advantages_and_returns(self, reward, value, step_type, discount):
        """``(advantages, returns)`` ``[T, B]`` from ``[T, B]`` inputs; last row 0 / V."""
        value = value.detach()
        discounts = discount * self._gamma
        if self._use_gae:
            advantages = value_ops.generalized_advantage_estimation(
                reward, value, step_type, discounts, td_lambda=self._lambda
            )
            if self._use_td_lambda_return:
                returns = advantages + value[:-1]
            else:
                returns = value_ops.discounted_return(reward, value, step_type, discounts)
        else:
            returns = value_ops.discounted_return(reward, value, step_type, discounts)
            advantages = returns - value[:-1]
        return value_ops.pad_last(advantages), torch.cat([returns, value[-1:]], dim=0)

    def shape_advantages(self, advantages: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Normalize and clip as configured."""
        if self._normalize_advantages:
            advantages = normalize_advantages(advantages, valid)
        if self._advantage_clip:
            advantages = advantages.clamp(-self._advantage_clip, self._advantage_clip)
        return advantages

    def __call__(self, info) -> LossInfo:
        """``info``: ``ActorCriticInfo`` ``[T, B]`` from ``train_step`` (see the module doc)."""
        advantages, returns = self.advantages_and_returns(
            info.reward, info.value, info.step_type, info.discount
        )
        valid = info.step_type != StepType.LAST
        valid[-1] = False
        advantages = self.shape_advantages(advantages, valid)
        pg_loss = -advantages.detach() * info.log_prob
        td_loss = self._td_error_loss_fn(returns.detach(), info.value)
        loss = pg_loss + self._td_loss_weight * td_loss
        neg_entropy = ()  # not computed by train_step when unused (see uses_entropy)
        if torch.is_tensor(info.entropy):
            neg_entropy = -info.entropy
            if self._entropy_regularization:
                loss = loss + self._entropy_regularization * neg_entropy
            neg_entropy = neg_entropy.detach()
        return LossInfo(
            loss=loss,
            extra=ActorCriticLossInfo(
                pg_loss=pg_loss.detach(), td_loss=td_loss.detach(), neg_entropy=neg_entropy
            ),
        )
