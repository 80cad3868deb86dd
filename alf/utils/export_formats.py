"""Moved to ``alf.export.export_formats``; this path keeps older imports working."""

import sys

import alf.export.export_formats

sys.modules[__name__] = alf.export.export_formats
