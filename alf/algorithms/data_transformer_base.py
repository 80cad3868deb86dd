"""Moved to ``alf.data_transformers.base``; this path keeps older imports working."""

from alf.data_transformers.base import (  # noqa: F401
    DataTransformer,
    IdentityDataTransformer,
    TimeStepTransformer,
    field_paths,
    map_fields,
    statistics_frozen,
)

__all__ = [
    "DataTransformer",
    "IdentityDataTransformer",
    "TimeStepTransformer",
    "field_paths",
    "map_fields",
    "statistics_frozen",
]
