r"""``QrdqnAlgorithm``: distributional DQN by quantile regression (QR-DQN).

Dabney et al. 2018, "Distributional Reinforcement Learning with Quantile Regression".
The Q network gives ``N`` quantiles :math:`\theta_1(s, a) .. \theta_N(s, a)` of the return
of each action, ``[B, |A|, N]`` (``QNetwork(num_quantiles=N)``), at the midpoints
:math:`\hat\tau_i = \frac{2i - 1}{2N}`, :math:`i = 1..N`, of ``N`` equal probability bins;
:math:`Q(s, a) = \frac1N \sum_i \theta_i(s, a)`.

Everything but the loss is ``DqnAlgorithm``'s (module doc there): epsilon-greedy (or noisy)
acting, greedy in :math:`Q`; ``n + 1``-step sequences, row 0 trained; the bootstrap action
:math:`a^*_m` greedy in :math:`Q_\theta` (double, default) or :math:`Q_{\theta'}` (as
the paper and sb3-contrib's ``QRDQN``); the same ``TimeStep.discount`` rules. The target
is the n-step target applied to each target quantile,

.. math::

    \mathcal T\theta_j = \sum_{k=1}^{m} \gamma^{k-1} r_k
        + \gamma^{m} d_m\, \theta'_j(s_m, a^*_m), \qquad j = 1..N

(``m``, ``d_m`` as in ``DqnAlgorithm``: a terminal LAST gives the reward sum for every
:math:`j`, a time-limit LAST bootstraps from the quantiles of its final observation), and
the loss of a sampled transition is the quantile Huber loss (paper, eq. 10, κ = 1)

.. math::

    L = \sum_{i=1}^{N} \frac1N \sum_{j=1}^{N} \rho^\kappa_{\hat\tau_i}(\mathcal T\theta_j
        - \theta_i(s_0, a_0)), \quad
    \rho^\kappa_\tau(u) = |\tau - \mathbb 1\{u < 0\}|\, \mathcal L_\kappa(u), \quad
    \mathcal L_\kappa(u) = \begin{cases} u^2/2 & |u| \le \kappa \\
        \kappa(|u| - \kappa/2) & \text{otherwise,} \end{cases}

averaged over the batch (sb3-contrib's ``quantile_huber_loss(sum_over_quantiles=True)``).
``LossInfo.priority`` is the per-transition :math:`L` (Rainbow prioritizes by the
distributional loss). A ``critic_loss_ctor`` sets ``gamma``; with ``n_step > 1`` its
``td_lambda`` must be 1 (a λ-mixture of quantile vectors is not the quantiles of the
mixture). ``td_error_loss_fn`` does not apply. A ``LowerBoundedTDLoss`` that bounds its
targets is refused: the bound :math:`\max(y, G)` is on a scalar value, and an observed
return :math:`G` bounds the mean of the return distribution, not each of its quantiles
(raising every quantile below :math:`G` to it would erase the distribution's lower tail).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

import alf
import alf.summary
from alf.algorithms.dqn_algorithm import DqnAlgorithm, DqnInfo
from alf.algorithms.td_loss import quantile_huber_loss as shared_quantile_huber_loss
from alf.algorithms.td_loss import quantile_midpoints
from alf.data_structures import LossInfo, StepType
from alf.networks.q_networks import QNetwork
from alf.utils.defaults import with_defaults


def quantile_huber_loss(
    quantiles: torch.Tensor, target: torch.Tensor, kappa: float = 1.0
) -> torch.Tensor:
    r"""The quantile Huber loss :math:`L` of the module doc, per sample ``[B]``: the
    shared ``td_loss.quantile_huber_loss`` of ``quantiles`` :math:`\theta_i` ``[B, N]`` at
    the midpoints :math:`\hat\tau_i` against ``target`` :math:`\mathcal T\theta_j`
    ``[B, N']`` (no gradient flows into it), summed over the ``N`` predicted quantiles and
    averaged over the targets (at κ = 1, QR-DQN's; other κ divide the Huber loss by κ, IQN's)."""
    tau = quantile_midpoints(quantiles.shape[-1], quantiles.device, quantiles.dtype)
    return shared_quantile_huber_loss(quantiles, target, tau, kappa=kappa, sum_over_quantiles=True)


class QrdqnLossInfo(NamedTuple):
    """Scalar diagnostics of row 0 (filled only when summaries are recorded): means over
    quantiles of the prediction and of the target, and their absolute difference."""

    q_value: object = ()
    target: object = ()
    abs_td_error: object = ()


@alf.configurable
class QrdqnAlgorithm(DqnAlgorithm):
    """QR-DQN (module doc). Arguments as ``DqnAlgorithm``; only these defaults differ:
    ``q_network_ctor=functools.partial(QNetwork, num_quantiles=200)`` (the paper's ``N``
    for Atari), ``name="QrdqnAlgorithm"``."""

    __init__ = with_defaults(
        DqnAlgorithm.__init__,
        q_network_ctor=functools.partial(QNetwork, num_quantiles=200),
        name="QrdqnAlgorithm",
    )

    _quantiles = True

    def _make_td_loss(self, gamma, td_error_loss_fn, critic_loss_ctor, n_step: int):
        """``DqnAlgorithm``'s, used for its targets only (module doc)."""
        if td_error_loss_fn is not None:
            raise ValueError(
                f"{self._name} trains with the quantile Huber loss: td_error_loss_fn does not apply"
            )
        loss = super()._make_td_loss(gamma, None, critic_loss_ctor, n_step)
        if getattr(loss, "bounds_targets", False):
            raise ValueError(
                f"{self._name}: critic_loss_ctor's LowerBoundedTDLoss bounds a scalar target, "
                "not quantiles; use lb_target_q=0 and improve_w_nstep_bootstrap=False"
            )
        if n_step > 1 and getattr(loss, "td_lambda", 1.0) != 1:
            raise ValueError(
                f"{self._name}: with n_step={n_step} the critic loss needs td_lambda=1 (a "
                "λ-mixture of quantile vectors is not the quantiles of the mixture)"
            )
        return loss

    def calc_loss(self, info: DqnInfo) -> LossInfo:
        """Loss ``[T, B]`` (the quantile Huber loss on row 0, zeros below), priority ``[B]``."""
        targets = self._td_loss.compute_targets(
            info.reward.unsqueeze(-1), info.step_type, info.discount, info.target_q_value
        )  # [T - 1, B, N]: row t's n-step target; row 0's is trained
        loss = quantile_huber_loss(info.q_value[0], targets[0])
        extra = ()
        if alf.summary.should_record_summaries():
            valid = info.step_type[0] != StepType.LAST
            q, target = info.q_value[0].detach().mean(-1), targets[0].mean(-1)
            extra = QrdqnLossInfo(
                q_value=q[valid].mean(),
                target=target[valid].mean(),
                abs_td_error=(target - q)[valid].abs().mean(),
            )
        rows = torch.cat(
            [loss.unsqueeze(0), loss.new_zeros(info.step_type.shape[0] - 1, *loss.shape)]
        )
        # a LAST row 0 is not trained (its action did nothing): no priority either
        priority = loss.detach() * (info.step_type[0] != StepType.LAST).to(loss.dtype)
        return LossInfo(loss=rows, extra=extra, priority=priority)
