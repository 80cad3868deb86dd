"""Moved to ``alf.data_transformers.frame_stacker``; this path keeps older imports working."""

import sys

import alf.data_transformers.frame_stacker

sys.modules[__name__] = alf.data_transformers.frame_stacker
