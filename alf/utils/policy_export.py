"""Moved to ``alf.export.policy_export``; this path keeps older imports working."""

import sys

import alf.export.policy_export

sys.modules[__name__] = alf.export.policy_export
