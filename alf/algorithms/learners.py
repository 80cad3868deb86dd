"""Moved to ``alf.learners``; this path keeps older imports working."""

from alf.learners.learner import (  # noqa: F401
    Learner,
    sample_weights,
    shuffled_mini_batches,
    split_sequences,
)
from alf.learners.on_policy_learner import EpochLearner, OnPolicyLearner  # noqa: F401
from alf.learners.replay_learner import ReplayLearner, split_batch  # noqa: F401

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
