"""Moved to ``alf.tuning.pbt.status``; this path keeps older imports working."""

from alf.tuning.pbt.status import (  # noqa: F401
    population_rows,
    status_text,
    values_in_force,
)

__all__ = [
    "population_rows",
    "status_text",
    "values_in_force",
]
