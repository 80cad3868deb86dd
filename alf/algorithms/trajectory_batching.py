"""Moved to ``alf.learners.trajectory_batching``; this path keeps older imports working."""

import sys

import alf.learners.trajectory_batching

sys.modules[__name__] = alf.learners.trajectory_batching
