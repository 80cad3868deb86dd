"""The actor/learner machinery: acting in the environments, and training on what was acted.

An actor hands its learner an ``Unroll``; a learner trains its algorithm on it. Each
algorithm class names the learner of its data regime (``RLAlgorithm.learner_class``):

* ``OnPolicyLearner`` (``OnPolicyAlgorithm``, e.g. actor-critic / A2C) and
  ``EpochLearner`` (``PPOAlgorithm``) train on the unroll just collected, transformed
  at rollout, and discard it (``on_policy_learner``);
* ``ReplayLearner`` (``OffPolicyAlgorithm``: SAC, DDPG/TD3, DQN) keeps a replay buffer
  of raw experience and replays it through the data transformers (``replay_learner``).

Modules: ``acting`` (the ``Actor`` contract, ``Unroll``, ``ActorCore``), ``unroller``
(the in-process acting loop: ``Unroller``, ``AlgorithmPolicy``), ``learner`` (the base
class and the minibatch helpers), ``on_policy_learner``, ``replay_learner``,
``trajectory_batching`` (whole episode segments for recurrent policies). The public
names are importable from the package (imported on first access,
``alf.utils.lazy_exports``).
"""

from alf.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "acting": ("Actor", "ActorCore", "Unroll"),
    "learner": ("Learner", "sample_weights", "shuffled_mini_batches", "split_sequences"),
    "on_policy_learner": ("EpochLearner", "OnPolicyLearner"),
    "replay_learner": ("ReplayLearner", "split_batch"),
    "unroller": ("AlgorithmPolicy", "Unroller"),
}

__all__ = sorted([name for names in _EXPORTS.values() for name in names])

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
