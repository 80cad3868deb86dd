"""``OnPolicyAlgorithm``: each unroll is used for exactly one update, then discarded."""

from __future__ import annotations

from alf.algorithms.rl_algorithm import RLAlgorithm
from alf.learners.on_policy_learner import OnPolicyLearner


class OnPolicyAlgorithm(RLAlgorithm):
    """An RL algorithm trained on its latest unroll (e.g. actor-critic / A2C).

    Its learner is the ``OnPolicyLearner``: the unroll ``[T, B]``, transformed at
    rollout, plus the bootstrap row, is preprocessed and used for one update with
    the bootstrap row and LAST steps masked out. (A subclass may name the
    ``EpochLearner`` instead, as PPO does: epochs of minibatches over the unroll.)
    """

    learner_class = OnPolicyLearner

    def stop_training_epochs(self) -> bool:
        """Whether to end this iteration's remaining minibatch updates now (asked by the
        ``EpochLearner`` after each update; e.g. PPO's ``target_kl``)."""
        return False
