r"""``RedqAlgorithm``: Randomized Ensembled Double Q-learning on SAC.

Chen et al. 2021, "Randomized Ensembled Double Q-Learning: Learning Fast Without a
Model" (ICLR 2021, arXiv:2101.05982), Algorithm 1, on ``SacAlgorithm``
(``sac_algorithm.py``); argument names of the authors' code (``num_min``).

- **Ensemble**: ``N = num_critic_replicas`` critics (10 in the paper), one batched
  ``CriticNetwork``, each regressed to the same target (``OneStepTDLoss``, summed).
- **Target**: in each update a random subset :math:`\mathcal M` of ``M = num_min``
  distinct target critics (2 in the paper) is drawn, one subset for the whole
  minibatch, and :math:`y = r + \gamma d\,(\min_{i\in\mathcal M} \bar Q_i(s', a') -
  \alpha\log\pi(a'|s'))`, :math:`a' \sim \pi(\cdot|s')`.
- **Actor**: :math:`J_\pi = \alpha\log\pi(\tilde a|s) - \frac1N\sum_{i=1}^N Q_i(s,
  \tilde a)`, the mean over the whole ensemble. α is SAC's (automatic entropy tuning).
- **Update-to-data ratio** ``G`` (20 in the paper): ``TrainerConfig(unroll_length=1,
  num_updates_per_train_iter=G)``, ``G`` updates of critics, actor and α per environment
  step. (The paper's Algorithm 1 updates the actor once per ``G`` critic updates; the
  authors' code has it as an option; here every update also updates the actor.)

With ``N = M = 2`` this is SAC: the subset is both critics.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork, sac_arguments
from alf.algorithms.td_loss import OneStepTDLoss
from alf.configuration.argtypes import Count, Probability
from alf.networks.critic_networks import CriticNetwork
from alf.tensor_specs import TensorSpec


@alf.configurable
class RedqAlgorithm(SacAlgorithm):
    """REDQ (module docstring).

    Args (the others as ``SacAlgorithm``'s):
        num_critic_replicas: ``N``, the size of the ensemble.
        num_min: ``M``, the number of target critics the target takes the minimum of.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        actor_network_ctor: Callable = SquashedNormalActorNetwork,
        critic_network_ctor: Callable = CriticNetwork,
        num_critic_replicas: Count = 10,
        num_min: Count = 2,
        env=None,
        config=None,
        critic_loss_ctor: Callable = OneStepTDLoss,
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
        name: str = "RedqAlgorithm",
    ):
        if action_spec.is_discrete:
            raise ValueError(f"{name} supports continuous actions only, got {action_spec}")
        if num_min > num_critic_replicas:
            raise ValueError(
                f"{name}: num_min={num_min} is more than the {num_critic_replicas} critics"
            )
        super().__init__(**sac_arguments(locals()))
        self._num_min = num_min

    def sample_target_subset(self) -> torch.Tensor:
        """``M`` distinct critic indices ``[M]``, uniformly at random (torch's global
        generator, on the CPU, so a seed fixes them on any device)."""
        return torch.randperm(self._num_replicas)[: self._num_min]

    def _target_critic_value(self, target_q):
        """``[N, R]`` → the minimum over one random subset of ``M`` replicas ``[N]``."""
        if self._num_replicas == 1:
            return target_q
        subset = self.sample_target_subset().to(target_q.device)
        return target_q.index_select(1, subset).amin(-1)

    def _actor_critic_value(self, actor_q):
        """``[N, R]`` → the mean over the ensemble ``[N]``."""
        return actor_q if self._num_replicas == 1 else actor_q.mean(-1)
