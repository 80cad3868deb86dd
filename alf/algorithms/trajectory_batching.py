"""Moved to ``alf.learners.trajectory_batching``; this path keeps older imports working."""

from alf.learners.trajectory_batching import (  # noqa: F401
    Segments,
    episode_segments,
    trajectory_mini_batches,
)

__all__ = [
    "Segments",
    "episode_segments",
    "trajectory_mini_batches",
]
