"""Moved to ``alf.learners.acting``; this path keeps older imports working."""

import sys

import alf.learners.acting

sys.modules[__name__] = alf.learners.acting
