"""Moved to ``alf.data_transformers.hindsight_relabeler``; this path keeps older imports working."""

from alf.data_transformers.hindsight_relabeler import (  # noqa: F401
    HindsightExperienceTransformer,
    l2_distance_reward_fn,
)

__all__ = [
    "HindsightExperienceTransformer",
    "l2_distance_reward_fn",
]
