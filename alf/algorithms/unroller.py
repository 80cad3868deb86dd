"""Moved to ``alf.learners.unroller``; this path keeps older imports working."""

from alf.learners.unroller import (  # noqa: F401
    AlgorithmPolicy,
    Unroll,
    Unroller,
    experience_of,
    policy_step,
)

__all__ = [
    "AlgorithmPolicy",
    "Unroll",
    "Unroller",
    "experience_of",
    "policy_step",
]
