"""Moved to ``alf.data_transformers``; this path (ALF's) keeps older imports working."""

import sys

import alf.data_transformers

sys.modules[__name__] = alf.data_transformers
