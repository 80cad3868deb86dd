"""Moved to ``alf.learners.replay_learner``; this path keeps older imports working."""

import sys

import alf.learners.replay_learner

sys.modules[__name__] = alf.learners.replay_learner
