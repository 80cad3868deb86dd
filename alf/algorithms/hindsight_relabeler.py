"""Moved to ``alf.data_transformers.hindsight_relabeler``; this path keeps older imports working."""

import sys

import alf.data_transformers.hindsight_relabeler

sys.modules[__name__] = alf.data_transformers.hindsight_relabeler
