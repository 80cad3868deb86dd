"""Moved to ``alf.tuning.grid_search.record``; this path keeps older imports working."""

from alf.tuning.grid_search.record import (  # noqa: F401
    LOG_DIR,
    RECORD_FILE,
    RECORD_FORMAT,
    STDERR_TAIL_FILE,
    SUMMARY_FILE,
    TAIL_LINES,
    check_same_grid,
    is_done,
    merge_previous,
    now,
    read_record,
    record_path,
    run_entry,
    save_output_tail,
    write_record,
    write_text_atomically,
)

__all__ = [
    "LOG_DIR",
    "RECORD_FILE",
    "RECORD_FORMAT",
    "STDERR_TAIL_FILE",
    "SUMMARY_FILE",
    "TAIL_LINES",
    "check_same_grid",
    "is_done",
    "merge_previous",
    "now",
    "read_record",
    "record_path",
    "run_entry",
    "save_output_tail",
    "write_record",
    "write_text_atomically",
]
