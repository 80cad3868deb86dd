"""Moved to ``alf.learners.learner``; this path keeps older imports working."""

import sys

import alf.learners.learner

sys.modules[__name__] = alf.learners.learner
