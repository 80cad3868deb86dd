r"""The policy of ``SacAlgorithm`` without an actor: the critics' Boltzmann policy.

For discrete actions ALF's SAC can do without an actor network
(``actor_network_cls=None``): the policy is

.. math::

    \pi(a|s) = \frac{\exp(\min_i Q_i(s, a) / \alpha)}{\sum_b \exp(\min_i Q_i(s, b) / \alpha)},

the policy SAC's actor loss would converge to for these critics. Rollout samples it;
evaluation takes its mode (the greedy action), or a sample with probability
``TrainerConfig.epsilon_greedy``. With an action mask (``alf/utils/action_mask.py``) the
softmax is over the legal actions: :math:`\pi(a|s) = 0` for an illegal :math:`a`.
"""

from __future__ import annotations

import torch

from alf.utils.action_mask import mask_logits


def q_log_probs(q_values: torch.Tensor, alpha: torch.Tensor, mask=None) -> torch.Tensor:
    """``log π(·|s)`` ``[N, |A|]`` from the critics' Q values ``[N, R, |A|]`` and α, over
    the legal actions of the bool ``mask`` ``[N, |A|]`` (None: all)."""
    return torch.log_softmax(mask_logits(q_values.amin(1) / alpha, mask), dim=-1)


def expectation(log_probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_a \pi(a) v(a)` ``[N]`` over the actions of nonzero probability only
    (an illegal action's huge negative ``log π`` or value never meets its zero
    probability: no NaN, no infinity)."""
    probs = log_probs.exp()
    return torch.where(probs > 0, probs * values, 0.0).sum(-1)


def epsilon_greedy_action(log_probs: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Action indices ``[N]``: the mode of ``log_probs`` ``[N, |A|]``, or with probability
    ``epsilon`` a sample of it (1: always a sample)."""
    sample = torch.multinomial(log_probs.exp(), 1).squeeze(-1) if epsilon > 0 else None
    if epsilon >= 1.0:
        return sample
    mode = log_probs.argmax(-1)
    if sample is None:
        return mode
    explore = torch.rand(mode.shape, device=mode.device) < epsilon
    return torch.where(explore, sample, mode)
