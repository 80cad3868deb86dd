r"""``PPGAuxPhaseLoss``: the loss of Phasic Policy Gradient's auxiliary phase (Cobbe et al.
2021, "Phasic Policy Gradient", section 3).

The auxiliary phase trains on the states :math:`s_t` of the last :math:`N_\pi` policy-phase
iterations, with their value targets :math:`\hat V^{targ}_t` (the λ-returns computed once,
from the values :math:`V^{old}` the rollout predicted) and the policy
:math:`\pi_{\theta_{old}}` as it was when the phase began. Per step:

.. math::

    L^{aux}_t = \ell(\hat V^{targ}_t, V^{aux}_\theta(s_t))
        + \beta_{clone}\,\mathrm{KL}(\pi_{\theta_{old}}(\cdot|s_t)\,\|\,\pi_\theta(\cdot|s_t))
    \qquad L^{value}_t = \ell(\hat V^{targ}_t, V_\phi(s_t))

    L_t = L^{value}_t + L^{aux}_t

The paper's joint loss :math:`L^{joint} = L^{aux} + \beta_{clone} KL` trains the policy
network (its auxiliary value head distils the value into the policy's features while the
KL term holds the policy where it was) and :math:`L^{value}` trains the value network
again; the two networks share no gradient (a shared encoder reaches the value head only
through a stop-gradient), so one sum trains both. :math:`\ell` is ``td_error_loss_fn``
(squared by default), :math:`\beta_{clone}` ``policy_kl_loss_weight``. The targets
(``value_targets``) are GAE(λ) advantages plus the rollout values, with this loss's own
``gamma`` and ``td_lambda`` (ALF's arguments; the paper uses the policy phase's).

The KL is in closed form where torch has one for the pair of distributions; otherwise it
is estimated from one sample :math:`a \sim \pi_{\theta_{old}}`:
:math:`\log\pi_{\theta_{old}}(a|s) - \log\pi_\theta(a|s)`. A nest of action
distributions sums its KLs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.distributions as td

import alf
import alf.nest as nest
from alf.configuration.argtypes import Discount, Probability
from alf.data_structures import LossInfo
from alf.utils import value_ops
from alf.utils.losses import element_wise_squared_loss


class PPGAuxInfo(NamedTuple):
    """What the loss reads, each ``[L, B]`` (distributions with batch shape ``[L, B]``)."""

    value: object = ()
    aux: object = ()
    returns: object = ()
    action_distribution: object = ()
    old_action_distribution: object = ()


class PPGAuxPhaseLossInfo(NamedTuple):
    """The three terms, each ``[L, B]``: ALF's names."""

    td_loss_actual: object = ()
    td_loss_aux: object = ()
    policy_kl_loss: object = ()


@alf.configurable
class PPGAuxPhaseLoss:
    """PPG's auxiliary-phase loss (module doc).

    Args:
        td_error_loss_fn: ``(target, prediction) -> loss`` elementwise, :math:`\\ell`.
        policy_kl_loss_weight: :math:`\\beta_{clone}`, the weight of the KL to the policy
            before the phase.
        gamma: discount of the value targets.
        td_lambda: λ of the value targets' GAE.
        name: name in summaries.
    """

    def __init__(
        self,
        td_error_loss_fn: Callable = element_wise_squared_loss,
        policy_kl_loss_weight: float = 1.0,
        gamma: Discount = 0.999,
        td_lambda: Probability = 0.95,
        name: str = "PPGAuxPhaseLoss",
    ):
        if policy_kl_loss_weight < 0:
            raise ValueError(
                f"PPGAuxPhaseLoss.policy_kl_loss_weight must be >= 0, got {policy_kl_loss_weight}"
            )
        self._td_error_loss_fn = td_error_loss_fn
        self._policy_kl_loss_weight = float(policy_kl_loss_weight)
        self._gamma = gamma
        self._td_lambda = td_lambda
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @torch.no_grad()
    def value_targets(self, reward, value, step_type, discount) -> torch.Tensor:
        """:math:`\\hat V^{targ}` ``[T-1, B]`` of ``[T, B]`` rows whose last is the bootstrap
        row: GAE(λ) advantages with discounts ``gamma * discount``, plus ``value``."""
        advantages = value_ops.generalized_advantage_estimation(
            reward, value, step_type, discount * self._gamma, td_lambda=self._td_lambda
        )
        return advantages + value[:-1]

    def __call__(self, info: PPGAuxInfo) -> LossInfo:
        """``LossInfo`` with ``loss`` ``[L, B]`` and the three terms in ``extra``."""
        returns = info.returns.detach()
        td_loss_actual = self._td_error_loss_fn(returns, info.value)
        td_loss_aux = self._td_error_loss_fn(returns, info.aux)
        kl = sum(
            _kl(old, new)
            for old, new in zip(
                nest.flatten(info.old_action_distribution), nest.flatten(info.action_distribution)
            )
        )
        loss = td_loss_actual + td_loss_aux + self._policy_kl_loss_weight * kl
        return LossInfo(
            loss=loss,
            extra=PPGAuxPhaseLossInfo(
                td_loss_actual=td_loss_actual, td_loss_aux=td_loss_aux, policy_kl_loss=kl
            ),
        )


def _kl(old: td.Distribution, new: td.Distribution) -> torch.Tensor:
    """``KL(old || new)`` per batch element: closed form, else a one-sample estimate."""
    try:
        return td.kl_divergence(old, new)
    except NotImplementedError:
        with torch.no_grad():
            action = old.sample()
            old_log_prob = old.log_prob(action)
        return old_log_prob - new.log_prob(action)
