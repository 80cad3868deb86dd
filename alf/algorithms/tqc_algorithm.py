r"""``TqcAlgorithm``: Truncated Quantile Critics.

Kuznetsov et al. 2020, "Controlling Overestimation Bias with Truncated Mixture of
Continuous Distributional Quantile Critics" (arXiv:2005.04269), on ``SacAlgorithm``
(``sac_algorithm.py``), with sb3-contrib's argument names (``TQC``:
``top_quantiles_to_drop_per_net``, ``n_quantiles`` as ``num_quantiles``, ``n_critics``
as SAC's ``num_critic_replicas``).

``R`` critics (one batched ``CriticNetwork``) each predict ``M`` quantiles
:math:`\theta_{i,k}(s, a)` at the fractions :math:`(2k+1)/2M`. With ``d =
top_quantiles_to_drop_per_net``:

- **Target**: the ``R·M`` target quantiles :math:`\bar\theta_{i,k}(s', a')`,
  :math:`a' \sim \pi(\cdot|s')`, are pooled into one mixture, sorted, and its ``d·R``
  largest dropped; the ``K = R·M − d·R`` smallest minus :math:`\alpha\log\pi(a'|s')` are
  the target samples :math:`z_j`, and :math:`y_j = r + \gamma d_{t+1} z_j` (eq. 10–11).
- **Critics**: each critic's ``M`` quantiles regress to the same ``K`` samples with the
  quantile Huber loss (κ = 1; ``OneStepTDQRLoss``), the mean over the ``M × K`` pairs
  (sb3-contrib's ``sum_over_quantiles=False``), summed over the critics (sb3-contrib
  takes the mean over the critics: the same gradients, ``R`` times smaller; Adam
  undoes the scale).
- **Actor**: :math:`J_\pi = \alpha\log\pi(\tilde a|s) - \frac{1}{RM}\sum_{i,k}
  \theta_{i,k}(s, \tilde a)`, the mean of all quantiles (no minimum over critics: the
  truncation controls the overestimation). α is SAC's.

The paper's settings: ``R = 5``, ``M = 25``, ``d`` per task (HalfCheetah 0, Hopper 5,
Walker and Ant and Humanoid 2), critics of 3 × 512; sb3-contrib's defaults (used here):
``R = 2``, ``M = 25``, ``d = 2``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import alf
from alf.algorithms.qrsac_algorithm import check_quantile_critic, with_replica_dim
from alf.algorithms.quantile_td_loss import OneStepTDQRLoss
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork, sac_arguments
from alf.configuration.argtypes import Count, NonNegativeInt, Probability
from alf.networks.critic_networks import CriticNetwork
from alf.tensor_specs import TensorSpec


@alf.configurable
class TqcAlgorithm(SacAlgorithm):
    """Truncated quantile critics (module docstring).

    Args (the others as ``SacAlgorithm``'s):
        critic_network_ctor: ``ctor(input_tensor_spec=, num_replicas=,
            output_tensor_spec=)`` → the quantiles ``[B, R, M]`` (``output_tensor_spec``
            is set to ``TensorSpec((num_quantiles,))`` here).
        num_critic_replicas: ``R``, the number of critics (sb3-contrib's ``n_critics``).
        num_quantiles: ``M``, the quantiles per critic (sb3-contrib's ``n_quantiles``).
        top_quantiles_to_drop_per_net: ``d``; the target drops the ``d·R`` largest of
            the ``R·M`` pooled quantiles.
        critic_loss_ctor: ``ctor(num_quantiles=)`` → a ``TDQRLoss``.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = SquashedNormalActorNetwork,
        critic_network_ctor: Callable = CriticNetwork,
        num_critic_replicas: Count = 2,
        num_quantiles: Count = 25,
        top_quantiles_to_drop_per_net: NonNegativeInt = 2,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDQRLoss,
        target_entropy: float | Callable | None = None,
        initial_log_alpha: float = 0.0,
        use_entropy_reward: bool = True,
        target_update_tau: Probability = 0.005,
        target_update_period: Count = 1,
        random_initial_collect: bool = False,
        optimizer=None,
        actor_optimizer=None,
        critic_optimizer=None,
        alpha_optimizer=None,
        reward_weights=None,
        debug_summaries: bool = False,
        name: str = "TqcAlgorithm",
    ):
        if action_spec.is_discrete:
            raise ValueError(f"{name} supports continuous actions only, got {action_spec}")
        if top_quantiles_to_drop_per_net >= num_quantiles:
            raise ValueError(
                f"{name}: top_quantiles_to_drop_per_net={top_quantiles_to_drop_per_net} "
                f"leaves no quantile of {num_quantiles}"
            )
        super().__init__(
            **sac_arguments(
                locals(),
                critic_network_ctor=functools.partial(
                    critic_network_ctor, output_tensor_spec=TensorSpec((num_quantiles,))
                ),
                critic_loss_ctor=functools.partial(critic_loss_ctor, num_quantiles=num_quantiles),
            )
        )
        check_quantile_critic(name, self._critic_networks, self._critic_loss)
        self._num_quantiles = num_quantiles
        self._num_target_quantiles = (num_quantiles - top_quantiles_to_drop_per_net) * (
            num_critic_replicas
        )

    @property
    def num_target_quantiles(self) -> int:
        """``K = R·M − d·R``, the target samples kept after the truncation."""
        return self._num_target_quantiles

    def _target_critic_value(self, target_q):
        """``[N, R, M]`` → the ``K`` smallest of the pooled ``R·M`` quantiles ``[N, K]``,
        ascending."""
        pooled = with_replica_dim(target_q, self._num_replicas).flatten(1)
        return pooled.sort(-1).values[:, : self._num_target_quantiles]

    def _actor_critic_value(self, actor_q):
        """``[N, R, M]`` → the mean of all quantiles ``[N]``."""
        return actor_q.flatten(1).mean(-1)
