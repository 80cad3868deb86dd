"""Moved to ``alf.learners.acting``; this path keeps older imports working."""

from alf.learners.acting import (  # noqa: F401
    Actor,
    ActorCore,
    PolicyStep,
    Unroll,
    experience_of,
    policy_step,
)

__all__ = [
    "Actor",
    "ActorCore",
    "PolicyStep",
    "Unroll",
    "experience_of",
    "policy_step",
]
