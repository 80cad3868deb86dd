"""``PPOAlgorithm``: proximal policy optimization (Schulman et al. 2017).

An ``ActorCriticAlgorithm`` (same networks and steps) with PPO's clipped loss and
PPO's data regime, the ``EpochLearner``: each iteration unrolls ``unroll_length``
steps, computes GAE advantages and λ-returns once from the rollout values
(``preprocess_experience``, with the bootstrap row so every unrolled step is
trained on), then makes ``num_updates_per_train_iter`` epochs over shuffled
minibatches (``mini_batch_size`` × ``mini_batch_length``) and discards the unroll.

Approximate-KL early stop: with ``target_kl`` set, the epoch loop ends as soon
as a minibatch's ``approx_kl`` exceeds ``1.5 * target_kl`` (Stable-Baselines3's
rule).
"""

from __future__ import annotations

import torch

import alf
import alf.summary
from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_structures import Experience, LossInfo
from alf.learners.on_policy_learner import EpochLearner
from alf.parallel import collectives
from alf.utils.defaults import extends


@alf.configurable
class PPOAlgorithm(ActorCriticAlgorithm):
    """PPO (Schulman et al. 2017). Arguments as ``ActorCriticAlgorithm`` (including
    ``encoding_network_ctor``, a shared encoder of the actor and value heads), plus:

    Args:
        target_kl: stop this iteration's epochs when a minibatch's approximate KL
            exceeds ``1.5 * target_kl`` (None: never).
    """

    learner_class = EpochLearner

    @extends(ActorCriticAlgorithm.__init__, loss_class=PPOLoss, name="PPOAlgorithm")
    def __init__(self, *, target_kl: float | None = None, **parent_args):
        super().__init__(**parent_args)
        self._target_kl = target_kl
        self._stop_epochs = False
        self._num_updates_this_iter = 0

    def preprocess_experience(self, experience: Experience) -> Experience:
        """Advantages (GAE) and returns from the rollout values, ``[T, B]`` time-major."""
        self._stop_epochs = False
        self._num_updates_this_iter = 0
        ts, info = experience.time_step, experience.rollout_info
        advantages, returns = self._loss.advantages_and_returns(
            ts.reward, info.value, ts.step_type, ts.discount
        )
        return experience._replace(
            rollout_info=info._replace(advantages=advantages, returns=returns)
        )

    def update_from_experience(self, experience, valid_masks=None) -> LossInfo:
        loss_info = super().update_from_experience(experience, valid_masks)
        self._num_updates_this_iter += 1
        if self._target_kl is not None:
            # every learner rank stops together, on the ranks' mean KL
            (approx_kl,) = collectives.mean_across_ranks([float(loss_info.extra.approx_kl)])
            if approx_kl > 1.5 * self._target_kl:
                self._stop_epochs = True
        return loss_info

    def calc_loss(self, info) -> LossInfo:
        """PPO's loss; its ``approx_kl`` is computed only for ``target_kl`` (or summaries)."""
        loss_info = self._loss(info, with_approx_kl=self._target_kl is not None)
        return self.add_entropy_target_loss(loss_info, info)

    def stop_training_epochs(self) -> bool:
        return self._stop_epochs

    def after_train_iter(self, experience, train_info=None) -> None:
        if alf.summary.should_record_summaries():
            alf.summary.scalar("ppo/num_updates", self._num_updates_this_iter)
            alf.summary.scalar("ppo/early_stopped", float(self._stop_epochs))
            alf.summary.scalar("ppo/advantage_std", torch.std(experience.rollout_info.advantages))
