"""Moved to ``alf.tuning.pbt.status``; this path keeps older imports working."""

import sys

import alf.tuning.pbt.status

sys.modules[__name__] = alf.tuning.pbt.status
