r"""``QrsacAlgorithm``: soft actor-critic with quantile-regression critics (ALF's QRSAC).

SAC (``sac_algorithm.py``) whose critics predict ``N`` quantiles of the return at the
fixed fractions :math:`\hat\tau_i = (2i+1)/2N` instead of its mean, learned with the
quantile-regression loss of Dabney et al. 2018, "Distributional Reinforcement Learning
with Quantile Regression" (arXiv:1710.10044; ``TDQRLoss``, ``quantile_td_loss.py``).
Each critic is ``CriticNetwork(output_tensor_spec=TensorSpec((N,)))``, the ``R`` critics
one batched network, ``Q_i(s, a)`` ``[B, R, N]``.

- **Target**: the target critics' quantiles at :math:`(s', a' \sim \pi)` reduced over the
  replicas, quantile by quantile (:math:`\min_i \bar\theta_{i,k}`), or, with
  ``min_critic_by_critic_mean``, the quantiles of the replica with the lowest mean; the
  ``N`` values minus :math:`\alpha\log\pi(a'|s')` (with ``use_entropy_reward``) are the
  target samples each critic's quantiles regress to.
- **Actor**: :math:`J_\pi = \alpha\log\pi(\tilde a|s) - \frac1N\sum_k \theta_k(s, \tilde a)`
  with the same reduction over the replicas.

Continuous actions only (as ALF's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

import alf
from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork, sac_arguments
from alf.configuration.argtypes import Count, Probability
from alf.networks.critic_networks import CriticNetwork
from alf.tensor_specs import TensorSpec


def replica_min(q: torch.Tensor, by_mean: bool, weights: torch.Tensor | None = None):
    """The pessimistic distribution of ``R`` quantile critics: ``[N, R, M]`` → ``[N, M]``.

    Args:
        q: the quantiles of each replica.
        by_mean: the quantiles of the replica with the lowest mean (ALF's
            ``min_critic_by_critic_mean``), else the minimum of each quantile over the
            replicas.
        weights: ``[N, M]`` probabilities of the quantiles for their mean (None: 1/M).
    """
    if not by_mean:
        return q.amin(1)
    mean = q.mean(-1) if weights is None else (q * weights.unsqueeze(1)).sum(-1)
    index = mean.argmin(1)  # [N]
    return q.gather(1, index[:, None, None].expand(-1, 1, q.shape[-1])).squeeze(1)


def with_replica_dim(q: torch.Tensor, num_replicas: int) -> torch.Tensor:
    """A ``CriticNetwork``'s ``[B, M]`` of one critic as ``[B, 1, M]``; ``[B, R, M]`` as is."""
    return q.unsqueeze(1) if num_replicas == 1 else q


def check_quantile_critic(name: str, critic, critic_loss) -> int:
    """The number of quantiles; ``ValueError`` if the critic and the loss disagree."""
    num = getattr(critic_loss, "num_quantiles", None)
    if num is None:
        raise ValueError(f"{name}: critic_loss_ctor must build a TDQRLoss, got {critic_loss}")
    shape = tuple(critic.output_spec.shape)
    if (shape[-1:] != (num,)) or (critic.num_replicas > 1 and len(shape) != 2):
        raise ValueError(
            f"{name}: the critic's output {shape} is not {num} quantiles per critic (build it "
            f"with output_tensor_spec=TensorSpec(({num},)), as the loss's num_quantiles)"
        )
    return num


#: QRSAC's default critic: 50 quantiles (TDQRLoss's default num_quantiles).
QuantileCriticNetwork = functools.partial(CriticNetwork, output_tensor_spec=TensorSpec((50,)))


@alf.configurable
class QrsacAlgorithm(SacAlgorithm):
    """Quantile-regression soft actor-critic (module docstring); ALF's arguments.

    Args (the others as ``SacAlgorithm``'s):
        critic_network_ctor: ``ctor(input_tensor_spec=, num_replicas=)`` → the quantiles
            ``[B, R, N]``: a ``CriticNetwork`` with ``output_tensor_spec=TensorSpec((N,))``.
        min_critic_by_critic_mean: reduce the replicas to the one with the lowest mean
            (else: the minimum of each quantile).
        critic_loss_ctor: ``ctor()`` → a ``TDQRLoss`` whose ``num_quantiles`` is ``N``.
        use_entropy_reward: subtract :math:`\\alpha\\log\\pi` from the target samples
            (ALF's QRSAC default: False).
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = SquashedNormalActorNetwork,
        critic_network_ctor: Callable = QuantileCriticNetwork,
        num_critic_replicas: Count = 2,
        min_critic_by_critic_mean: bool = False,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDQRLoss,
        target_entropy: float | Callable | None = None,
        initial_log_alpha: float = 0.0,
        use_entropy_reward: bool = False,
        target_update_tau: Probability = 0.005,
        target_update_period: Count = 1,
        random_initial_collect: bool = False,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        reward_weights=None,
        debug_summaries: bool = False,
        name: str = "QrsacAlgorithm",
    ):
        if action_spec.is_discrete:
            raise ValueError(f"{name} supports continuous actions only, got {action_spec}")
        super().__init__(**sac_arguments(locals()))
        self._num_quantiles = check_quantile_critic(name, self._critic_networks, self._critic_loss)
        self._min_critic_by_critic_mean = min_critic_by_critic_mean

    def _target_critic_value(self, target_q):
        """``[N, R, M]`` → the ``M`` target samples ``[N, M]`` (``replica_min``)."""
        q = with_replica_dim(target_q, self._num_replicas)
        return replica_min(q, self._min_critic_by_critic_mean)

    def _actor_critic_value(self, actor_q):
        """``[N, R, M]`` → the mean of the reduced quantiles ``[N]``."""
        q = with_replica_dim(actor_q, self._num_replicas)
        return replica_min(q, self._min_critic_by_critic_mean).mean(-1)
