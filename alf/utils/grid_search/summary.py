"""Moved to ``alf.tuning.grid_search.summary``; this path keeps older imports working."""

from alf.tuning.grid_search.summary import (  # noqa: F401
    OBJECTIVE_SOURCES,
    OBJECTIVE_TAG,
    add_objectives,
    counts,
    format_objective,
    last_scalar,
    objective,
    rows,
    summary_text,
    table,
)

__all__ = [
    "OBJECTIVE_SOURCES",
    "OBJECTIVE_TAG",
    "add_objectives",
    "counts",
    "format_objective",
    "last_scalar",
    "objective",
    "rows",
    "summary_text",
    "table",
]
