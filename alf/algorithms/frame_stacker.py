"""Moved to ``alf.data_transformers.frame_stacker``; this path keeps older imports working."""

from alf.data_transformers.frame_stacker import (  # noqa: F401
    FrameStacker,
)

__all__ = [
    "FrameStacker",
]
