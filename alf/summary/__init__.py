"""Tensorboard summaries with a global step and an on/off switch.

Algorithms call ``alf.summary.scalar('name', value)`` freely: it does nothing
unless a writer is set and recording is on (the trainer turns it on every
``summary_interval`` iterations), so summaries cost nothing on other steps.
During a training iteration the trainer averages scalars (``average_scalars``):
one value per name per iteration, the mean over its updates.
"""

from alf.summary.summary_ops import (
    average_scalars,
    enable_summary,
    flush,
    get_global_counter,
    histogram,
    record_if,
    scalar,
    scope,
    scope_name,
    set_default_writer,
    set_global_counter,
    should_record_summaries,
    text,
)

__all__ = [
    "average_scalars",
    "enable_summary",
    "flush",
    "get_global_counter",
    "histogram",
    "record_if",
    "scalar",
    "scope",
    "scope_name",
    "set_default_writer",
    "set_global_counter",
    "should_record_summaries",
    "text",
]
