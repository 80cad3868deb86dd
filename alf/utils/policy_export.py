"""Moved to ``alf.export.policy_export``; this path keeps older imports working."""

from alf.export.policy_export import (  # noqa: F401
    EXPORTER_LOGGERS,
    EXTENSIONS,
    FORMATS,
    IGNORED_TRANSFORMERS,
    OBSERVATION_TRANSFORMERS,
    ExportablePolicy,
    ExportError,
    LoadedPolicy,
    check_exportable,
    compare,
    export,
    format_of,
    observation_transformers,
    quiet_exporters,
    sample_observations,
)

__all__ = [
    "EXPORTER_LOGGERS",
    "EXTENSIONS",
    "ExportError",
    "ExportablePolicy",
    "FORMATS",
    "IGNORED_TRANSFORMERS",
    "LoadedPolicy",
    "OBSERVATION_TRANSFORMERS",
    "check_exportable",
    "compare",
    "export",
    "format_of",
    "observation_transformers",
    "quiet_exporters",
    "sample_observations",
]
