"""Moved to ``alf.learners.replay_learner``; this path keeps older imports working."""

from alf.learners.replay_learner import (  # noqa: F401
    ReplayLearner,
    split_batch,
)

__all__ = [
    "ReplayLearner",
    "split_batch",
]
