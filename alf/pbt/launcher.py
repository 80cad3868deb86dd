"""Moved to ``alf.tuning.pbt.launcher``; this path keeps older imports working."""

from alf.tuning.pbt.launcher import (  # noqa: F401
    LOG_DIR,
    RECORD_FILE,
    SETUP_ERROR_STATUS,
    Launcher,
    ProcessBackend,
    SlurmBackend,
    device_env,
    marker_path,
    member_command,
    member_dir,
    now,
    read_record,
    write_record,
)

__all__ = [
    "LOG_DIR",
    "Launcher",
    "ProcessBackend",
    "RECORD_FILE",
    "SETUP_ERROR_STATUS",
    "SlurmBackend",
    "device_env",
    "marker_path",
    "member_command",
    "member_dir",
    "now",
    "read_record",
    "write_record",
]
