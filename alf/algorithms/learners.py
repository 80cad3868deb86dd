"""The learners, the learner side of the actor/learner seam, in one import.

A learner trains its algorithm on the ``Unroll`` an actor hands it; each algorithm
class names the learner of its data regime (``RLAlgorithm.learner_class``):

* ``OnPolicyLearner`` (``OnPolicyAlgorithm``, e.g. actor-critic / A2C) and
  ``EpochLearner`` (``PPOAlgorithm``) train on the unroll just collected, transformed
  at rollout, and discard it (``on_policy_learner``);
* ``ReplayLearner`` (``OffPolicyAlgorithm``: SAC, DDPG/TD3, DQN) keeps a replay buffer
  of raw experience and replays it through the data transformers
  (``replay_learner``).

The base class and the minibatch helpers are in ``learner``.
"""

from alf.algorithms.learner import (
    Learner,
    sample_weights,
    shuffled_mini_batches,
    split_sequences,
)
from alf.algorithms.on_policy_learner import EpochLearner, OnPolicyLearner
from alf.algorithms.replay_learner import ReplayLearner, split_batch

__all__ = [
    "EpochLearner",
    "Learner",
    "OnPolicyLearner",
    "ReplayLearner",
    "sample_weights",
    "shuffled_mini_batches",
    "split_batch",
    "split_sequences",
]
