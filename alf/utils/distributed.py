"""Moved to ``alf.parallel.collectives``; this path keeps older imports working."""

import sys

import alf.parallel.collectives

sys.modules[__name__] = alf.parallel.collectives
