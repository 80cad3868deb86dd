"""``OnPolicyAlgorithm``: each unroll is used for exactly one update, then discarded."""

from __future__ import annotations

from alf.algorithms.learners import OnPolicyLearner
from alf.algorithms.rl_algorithm import RLAlgorithm


class OnPolicyAlgorithm(RLAlgorithm):
    """An RL algorithm trained on its latest unroll (e.g. actor-critic / A2C).

    Its learner is the ``OnPolicyLearner``: the unroll ``[T, B]``, transformed at
    rollout, plus the bootstrap row, is preprocessed and used for one update with
    the bootstrap row and LAST steps masked out.
    """

    learner_class = OnPolicyLearner
