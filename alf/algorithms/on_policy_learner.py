"""Moved to ``alf.learners.on_policy_learner``; this path keeps older imports working."""

import sys

import alf.learners.on_policy_learner

sys.modules[__name__] = alf.learners.on_policy_learner
