r"""``PPOLoss``: the clipped surrogate objective of PPO (Schulman et al. 2017).

On a minibatch ``[L, B]`` of preprocessed experience (advantages :math:`A` and
returns :math:`G` computed once per iteration from the rollout values):

.. math::

    \rho_t = \exp(\log\pi_\theta(a_t|s_t) - \log\pi_{old}(a_t|s_t))

    L^{\pi}_t = \max(-\hat A_t \rho_t,\; -\hat A_t\,\mathrm{clip}(\rho_t, 1-\epsilon, 1+\epsilon))

    L^{V}_t = \ell(G_t, V_t) \;\text{or, with value clipping } c,\;
    \max\big(\ell(G_t, V_t),\; \ell(G_t, V^{old}_t + \mathrm{clip}(V_t - V^{old}_t, -c, c))\big)

    L_t = L^{\pi}_t + c_V L^V_t - c_H H[\pi_\theta(\cdot|s_t)]

:math:`\hat A` is normalized over the minibatch's valid steps when
``normalize_advantages`` (as in Stable-Baselines3 and OpenAI baselines).
Summaries: ``approx_kl`` :math:`=\mathbb{E}[(\rho-1) - \log\rho]` (Schulman's
low-variance estimator), ``clip_fraction``, ``explained_variance``, ``entropy``.

With ``mirror_loss_coeff`` :math:`c_M > 0` and an env ``mirror``,
:math:`L_t` gains :math:`c_M L^{mirror}_t` (Abdolhosseini et al. 2019; see
``alf/algorithms/mirror_loss.py``), summarized as ``mirror_loss``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.summary
from alf.algorithms.actor_critic_loss import ActorCriticLoss, element_wise_squared_loss
from alf.algorithms.mirror_loss import mirror_loss
from alf.configuration.argtypes import Discount, Probability, ScheduledFloat
from alf.data_structures import LossInfo, StepType
from alf.utils.math_ops import explained_variance, masked_mean
from alf.utils.mirror import Mirror
from alf.utils.schedulers import as_scheduler


class PPOLossInfo(NamedTuple):
    """Loss terms and diagnostics (scalars or ``[L, B]``)."""

    pg_loss: object = ()
    td_loss: object = ()
    neg_entropy: object = ()
    approx_kl: object = ()
    clip_fraction: object = ()
    explained_variance: object = ()
    mirror_loss: object = ()


@alf.configurable
class PPOLoss(ActorCriticLoss):
    """PPO's loss. Advantages/returns come from ``PPOAlgorithm.preprocess_experience``.

    Args:
        gamma: discount factor.
        td_error_loss_fn: ``(target, prediction) -> loss`` for the value.
        td_lambda: GAE λ.
        normalize_advantages: normalize advantages per minibatch.
        advantage_clip: clip (normalized) advantages to ``[-c, c]``.
        entropy_regularization: entropy bonus coefficient.
        td_loss_weight: value loss coefficient (SB3's ``vf_coef``).
        importance_ratio_clipping: ε of the clipped ratio (SB3's ``clip_range``);
            a float, a scheduler, or ``[(progress, value), ...]`` (linear).
        value_clipping: clip the value change to ``[-c, c]`` around the rollout
            value (SB3's ``clip_range_vf``); None: no clipping.
        mirror_loss_coeff: weight of the mirror (symmetry) loss; 0: off, and nothing
            extra is computed.
        mirror: the env's ``Mirror`` (the one given to its ``MirrorWrapper``); needed
            when ``mirror_loss_coeff > 0``.
        compute_advantages_internally: ALF's: compute the advantages per minibatch in
            the loss, to save memory. alf always computes them once per unroll before the
            minibatches, with the bootstrap row (ALF's values when each minibatch holds
            whole unrolls, as in ALF's PPG confs); True is accepted with a warning.
        debug_summaries: extra summaries.
        name: name in summaries.
    """

    def __init__(
        self,
        gamma: Discount = 0.99,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        td_lambda: Probability = 0.95,
        normalize_advantages: bool = True,
        advantage_clip: float | None = None,
        entropy_regularization: float | None = None,
        td_loss_weight: float = 1.0,
        importance_ratio_clipping: ScheduledFloat = 0.2,
        value_clipping: float | None = None,
        mirror_loss_coeff: float = 0.0,
        mirror: Mirror | None = None,
        compute_advantages_internally: bool = False,
        debug_summaries: bool = False,
        name: str = "PPOLoss",
    ):
        if compute_advantages_internally:
            logging.warning(
                "%s.compute_advantages_internally=True has no effect in alf: the advantages "
                "are computed once per unroll, before the minibatches",
                name,
            )
        super().__init__(
            gamma=gamma,
            td_error_loss_fn=td_error_loss_fn,
            use_gae=True,
            td_lambda=td_lambda,
            use_td_lambda_return=True,
            normalize_advantages=normalize_advantages,
            advantage_clip=advantage_clip,
            entropy_regularization=entropy_regularization,
            td_loss_weight=td_loss_weight,
            debug_summaries=debug_summaries,
            name=name,
        )
        self._ratio_clip = as_scheduler(importance_ratio_clipping)
        self._value_clipping = value_clipping
        if mirror_loss_coeff < 0 or (mirror_loss_coeff > 0 and not isinstance(mirror, Mirror)):
            raise ValueError(
                f"{name}: mirror_loss_coeff must be >= 0 and, when > 0, needs mirror=Mirror(...);"
                f" got mirror_loss_coeff={mirror_loss_coeff}, mirror={mirror!r}"
            )
        self._mirror_loss_coeff = float(mirror_loss_coeff)
        self._mirror = mirror if self._mirror_loss_coeff > 0 else None

    @property
    def mirror(self) -> Mirror | None:
        """The ``Mirror`` when the mirror loss is on (``train_step`` then fills
        ``info.mirror``), else None."""
        return self._mirror

    def _clip_range(self) -> float:
        return float(self._ratio_clip())

    def _value_loss(self, info) -> torch.Tensor:
        loss = self._td_error_loss_fn(info.returns, info.value)
        if self._value_clipping is None:
            return loss
        c = self._value_clipping
        clipped = info.rollout_value + (info.value - info.rollout_value).clamp(-c, c)
        return torch.maximum(loss, self._td_error_loss_fn(info.returns, clipped))

    def __call__(self, info, with_approx_kl: bool = True) -> LossInfo:
        """The loss ``[L, B]`` of ``info``, an ``ActorCriticInfo`` ``[L, B]`` with advantages
        and returns.

        Args:
            info: the ``train_step`` infos; ``info.entropy`` may be ``()`` when
                ``uses_entropy()`` is False.
            with_approx_kl: compute ``extra.approx_kl`` even without summaries
                (``PPOAlgorithm`` needs it only for its ``target_kl`` early stop).
        """
        valid = info.step_type != StepType.LAST
        neg_advantages = -self.shape_advantages(info.advantages, valid).detach()
        log_ratio = info.log_prob - info.rollout_log_prob
        ratio = torch.exp(log_ratio)
        eps = self._clip_range()
        pg_loss = torch.maximum(
            neg_advantages * ratio, neg_advantages * ratio.clamp(1.0 - eps, 1.0 + eps)
        )
        td_loss = self._value_loss(info)
        loss = pg_loss + self._td_loss_weight * td_loss
        if self._entropy_regularization:
            loss = loss + self._entropy_regularization * -info.entropy
        if self._mirror is not None:
            mirror_term = mirror_loss(info.mirror)
            loss = loss + self._mirror_loss_coeff * mirror_term
        if alf.summary.should_record_summaries():
            extra = self._diagnostics(info, valid, ratio, log_ratio, eps, pg_loss, td_loss)
            if self._mirror is not None:
                extra = extra._replace(mirror_loss=masked_mean(mirror_term.detach(), valid))
        elif with_approx_kl:  # the diagnostics cost time on every minibatch
            extra = PPOLossInfo(approx_kl=_approx_kl(ratio, log_ratio, valid))
        else:
            extra = PPOLossInfo()
        return LossInfo(loss=loss, extra=extra)

    @torch.no_grad()
    def _diagnostics(self, info, valid, ratio, log_ratio, eps, pg_loss, td_loss) -> PPOLossInfo:
        """All loss terms and diagnostics, as masked means over the valid steps."""
        neg_entropy = masked_mean(-info.entropy, valid) if torch.is_tensor(info.entropy) else ()
        return PPOLossInfo(
            pg_loss=masked_mean(pg_loss, valid),
            td_loss=masked_mean(td_loss, valid),
            neg_entropy=neg_entropy,
            approx_kl=_approx_kl(ratio, log_ratio, valid),
            clip_fraction=masked_mean(((ratio - 1.0).abs() > eps).float(), valid),
            explained_variance=explained_variance(info.value, info.returns, valid),
        )


@torch.no_grad()
def _approx_kl(ratio, log_ratio, valid) -> torch.Tensor:
    """Schulman's low-variance estimator ``E[(ρ - 1) - log ρ]`` of ``KL(π_old || π)``."""
    return masked_mean((ratio - 1.0) - log_ratio, valid)
