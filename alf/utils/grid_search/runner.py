"""Moved to ``alf.tuning.grid_search.runner``; this path keeps older imports working."""

from alf.tuning.grid_search.runner import (  # noqa: F401
    Runner,
    StopSignals,
)

__all__ = [
    "Runner",
    "StopSignals",
]
