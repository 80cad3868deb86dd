"""Moved to ``alf.learners.learner``; this path keeps older imports working."""

from alf.learners.learner import (  # noqa: F401
    Learner,
    sample_weights,
    shuffled_mini_batches,
    split_sequences,
)

__all__ = [
    "Learner",
    "sample_weights",
    "shuffled_mini_batches",
    "split_sequences",
]
