r"""The three losses of soft actor-critic, in the symbols of Haarnoja et al. (2018).

Haarnoja et al. 2018b, "Soft Actor-Critic Algorithms and Applications"
(arXiv:1812.05905), eqs. (5), (7) and (18), with twin critics (Fujimoto et al.
2018) and, for discrete actions, the expectations over actions of Christodoulou
2019, "Soft Actor-Critic for Discrete Action Settings" (arXiv:1910.07207),
eqs. (10)–(12). On time-major ``[T, B]`` minibatches (usually ``T = 2``), for
every row ``t < T-1`` that is not LAST:

.. math::

    J_Q &= \sum_i \big(Q_i(s_t, a_t) - y_t\big)^2, \qquad
        y_t = r_{t+1} + \gamma\, d_{t+1}\, V'(s_{t+1}) \\
    V'(s) &= \min_i \bar Q_i(s, a') - \alpha \log\pi(a'|s), \quad a' \sim \pi(\cdot|s) \\
    J_\pi &= \alpha \log\pi(\tilde a_t|s_t) - \min_i Q_i(s_t, \tilde a_t),
        \quad \tilde a_t = f_\phi(\epsilon; s_t) \text{ (reparameterized)} \\
    J_\alpha &= -\log\alpha\,\big(\log\pi(\tilde a_t|s_t) + \bar{\mathcal H}\big)

:math:`\bar Q_i` are the target critics, :math:`d` is ``TimeStep.discount`` (0
after a real termination, 1 at a time limit, so only terminations stop the
bootstrap), :math:`\bar{\mathcal H}` the target entropy. Gradients: ``J_Q``
trains only the critics (``y`` has none), ``J_π`` only the actor (the critics'
parameters are held fixed and α is a constant), ``J_α`` only :math:`\log\alpha`.
Optimizing :math:`\log\alpha` instead of α keeps α positive (as in the
authors' implementation).

The discrete variant replaces the sampled terms by exact expectations over the
``|A|`` actions: :math:`\log\pi(\tilde a|s) \to \sum_a \pi(a|s)\log\pi(a|s)`
(the negative entropy) and :math:`\min_i Q_i(s, \tilde a) \to \sum_a \pi(a|s)
\min_i Q_i(s, a)`; the algorithm hands both in as ``neg_entropy`` and
``actor_q``, so the formulas above serve both cases.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

import alf.summary
from alf.algorithms.td_loss import TDLoss
from alf.data_structures import LossInfo, StepType
from alf.utils.value_ops import pad_last


class SacLossInfo(NamedTuple):
    """Scalar diagnostics (only filled when summaries are recorded)."""

    critic_loss: object = ()
    actor_loss: object = ()
    alpha_loss: object = ()
    alpha: object = ()
    entropy: object = ()
    q: object = ()


def sac_loss(
    info,
    log_alpha: torch.Tensor,
    critic_loss: TDLoss,
    target_entropy: float,
    compute_priority: bool = False,
) -> LossInfo:
    r"""``J_Q + J_π + J_α`` per row, ``[T, B]`` (the last row is 0: it has no successor).

    Args:
        info: a ``SacInfo`` (``sac_algorithm.py``) with, time-major:
            ``reward``, ``step_type``, ``discount`` ``[T, B]``;
            ``critic_q`` :math:`Q_i(s_t, a_t)` ``[T, B, R]`` (last row unused);
            ``target_v`` :math:`V'(s_t)` ``[T, B]`` (row 0 unused);
            ``neg_entropy`` :math:`\log\pi(\tilde a_t|s_t)` ``[T-1, B]``;
            ``actor_q`` :math:`\min_i Q_i(s_t, \tilde a_t)` ``[T-1, B]`` (``()``: no
            actor, no actor loss); optionally ``discounted_return`` ``[T, B]`` for
            the critic loss.
        log_alpha: the scalar parameter :math:`\log\alpha`.
        critic_loss: the TD loss giving ``J_Q`` (e.g. ``OneStepTDLoss``).
        target_entropy: :math:`\bar{\mathcal H}`.
        compute_priority: also return ``priority`` ``[B]``, the mean absolute TD
            error of each sequence (for prioritized replay).

    Returns:
        ``LossInfo(loss [T, B], extra=SacLossInfo, priority)``.
    """
    td = critic_loss(
        info.reward,
        info.step_type,
        info.discount,
        info.critic_q,
        info.target_v,
        discounted_return=getattr(info, "discounted_return", ()),
    )
    alpha = log_alpha.detach().exp()
    if torch.is_tensor(info.actor_q):
        actor_loss = alpha * info.neg_entropy - info.actor_q
    else:  # no actor (the policy of the critics): nothing to train
        actor_loss = torch.zeros_like(info.neg_entropy)
    alpha_loss = -log_alpha * (info.neg_entropy.detach() + target_entropy)
    loss = td.loss + pad_last(actor_loss + alpha_loss)
    priority = ()
    if compute_priority:
        priority = td.extra.td_error[:-1].abs().mean(-1).mean(0)
    extra = ()
    if alf.summary.should_record_summaries():
        valid = info.step_type[:-1] != StepType.LAST
        extra = SacLossInfo(
            critic_loss=td.loss[:-1][valid].mean(),
            actor_loss=actor_loss[valid].mean(),
            alpha_loss=alpha_loss[valid].mean(),
            alpha=alpha,
            entropy=-info.neg_entropy[valid].mean(),
            q=info.critic_q[:-1][valid].mean(),
        )
    return LossInfo(loss=loss, extra=extra, priority=priority)
