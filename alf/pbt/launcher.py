"""Moved to ``alf.tuning.pbt.launcher``; this path keeps older imports working."""

import sys

import alf.tuning.pbt.launcher

sys.modules[__name__] = alf.tuning.pbt.launcher
