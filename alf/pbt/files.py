"""Files shared between PBT members: atomic writes, JSON lines and safe checkpoint bytes.

Everything another process may read is written so that it is never seen half-written:

- ``atomic_write``: a temporary file in the same folder, fsync'ed, renamed over the
  target, then the folder fsync'ed;
- ``append_line``: one JSON object a line, appended by a single ``write`` on a file
  opened with ``O_APPEND``, so records of concurrent writers never interleave on a
  local file system (NFS does not promise this);
- ``serialize_state`` / ``load_state``: checkpoint bytes that ``torch.load`` reads back
  with ``weights_only=True`` (nothing is unpickled; a pickled payload is refused and
  never runs).

Read errors are ``InvalidFile`` (the caller logs and skips); write errors are
``WorkspaceWriteError``, one line naming the file and the cause.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import torch


class WorkspaceWriteError(OSError):
    """A workspace file could not be written (disk full, read-only, ...); nothing was replaced."""


class InvalidFile(Exception):
    """What is wrong with a file read from the workspace (the reader logs it and skips the file)."""


def is_int(value) -> bool:
    """``value`` is an int and not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value) -> bool:
    """``value`` is an int or a float and not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def scalar_problem(value) -> str | None:
    """Why ``value`` is not a JSON scalar (None when it is one)."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not finite"
    return f"{value!r} ({type(value).__name__}) is not a JSON scalar"


def _reject_constant(token: str):
    raise ValueError(f"{token} is not valid JSON")


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_error(message: str, cause: OSError) -> WorkspaceWriteError:
    error = WorkspaceWriteError(message)
    error.errno = cause.errno
    return error


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it and rename it to ``path``."""
    directory = os.path.dirname(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(directory)
    except OSError as e:
        raise _write_error(f"cannot write {path}: {e.strerror}", e) from e
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def append_line(path: str, record: Mapping[str, Any]) -> None:
    """Append ``record`` to the JSON-lines file ``path`` as one line, in a single ``write``
    on a file opened with ``O_APPEND`` (so concurrent appenders never interleave).

    Raises:
        ValueError: ``record`` is not JSON (non-finite floats are refused).
        WorkspaceWriteError: the line could not be written whole.
    """
    data = (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as e:
        raise _write_error(f"cannot append to {path}: {e.strerror}", e) from e
    if written != len(data):
        raise WorkspaceWriteError(
            f"cannot append to {path}: {written} of {len(data)} bytes written"
        )


def read_lines(path: str) -> list[tuple[int, bytes]]:
    """``(line number, bytes)`` of each whole line of ``path``; a last line without its
    newline (a write in progress or cut short) is reported and left out."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines[-1]:
        logging.warning("PBT workspace: %s line %d is incomplete; skipped", path, len(lines))
    return [(i + 1, line) for i, line in enumerate(lines[:-1]) if line.strip()]


def parse_json(data: bytes) -> Any:
    """``data`` parsed as strict JSON (no NaN or Infinity); ``InvalidFile`` saying why not."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as e:
        raise InvalidFile(f"not UTF-8 text ({e.reason})") from e
    except ValueError as e:
        raise InvalidFile(f"not valid JSON ({e})") from e


def serialize_state(state: dict, what: str) -> bytes:
    """``state`` as checkpoint bytes (``torch.save``).

    Raises:
        ValueError: ``state`` is not a dict, or ``torch.load(weights_only=True)`` could not
            read it back (it holds objects other than tensors and plain values); ``what``
            (the file it was meant for) heads the message.
    """
    if not isinstance(state, dict):
        raise ValueError(f"{what}: the state must be a dict, got {type(state).__name__}")
    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
    except Exception as e:  # pickle raises PicklingError, AttributeError, TypeError, ...
        raise ValueError(f"{what}: the state cannot be saved: {_first_line(e)}") from e
    data = buffer.getvalue()
    try:
        torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, ...
        raise ValueError(
            f"{what}: the state holds values peers cannot load with weights_only=True: "
            f"{_first_line(e)}"
        ) from e
    return data


def load_state(data: bytes, map_location="cpu") -> dict:
    """The dict in checkpoint bytes ``data``, loaded with ``torch.load(weights_only=True)``.

    Raises:
        InvalidFile: the bytes cannot be loaded safely or do not hold a dict.
    """
    try:
        state = torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, EOFError, ...
        raise InvalidFile(f"cannot be loaded safely: {_first_line(e)}") from None
    if not isinstance(state, dict):
        raise InvalidFile("does not hold a dict")
    return state


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
