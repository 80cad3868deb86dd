"""Moved to ``alf.learners.unroller``; this path keeps older imports working."""

import sys

import alf.learners.unroller

sys.modules[__name__] = alf.learners.unroller
