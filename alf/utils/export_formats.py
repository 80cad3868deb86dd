"""Moved to ``alf.export.export_formats``; this path keeps older imports working."""

from alf.export.export_formats import (  # noqa: F401
    EXTENSIONS,
    FORMATS,
    ExportError,
    format_of,
)

__all__ = [
    "EXTENSIONS",
    "ExportError",
    "FORMATS",
    "format_of",
]
