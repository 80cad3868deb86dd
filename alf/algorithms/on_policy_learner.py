"""Moved to ``alf.learners.on_policy_learner``; this path keeps older imports working."""

from alf.learners.on_policy_learner import (  # noqa: F401
    EpochLearner,
    OnPolicyLearner,
)

__all__ = [
    "EpochLearner",
    "OnPolicyLearner",
]
