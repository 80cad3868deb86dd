"""Moved to ``alf.data_transformers.base``; this path keeps older imports working."""

import sys

import alf.data_transformers.base

sys.modules[__name__] = alf.data_transformers.base
