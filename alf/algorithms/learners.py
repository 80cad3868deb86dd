"""Moved to ``alf.learners``; this path keeps older imports working."""

import sys

import alf.learners

sys.modules[__name__] = alf.learners
