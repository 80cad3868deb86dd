"""Command-line entry points: ``python -m alf.bin.train`` and ``python -m alf.bin.play``.

Shared here (standard library only, so a CLI can report a bad input before it
imports torch): ``SetupError``, ``one_line``, ``deferred_logs``, ``report_error``,
``refuse_stray_arguments`` and ``flags_parser``,
which together make a failure print exactly one error line on stderr (and, with
``--verbose``, the traceback above it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback


class SetupError(Exception):
    """Bad user input found before anything was written or run."""


def one_line(error: BaseException) -> str:
    """The first line of ``error``'s message (its type name when the message is empty)."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def report_error(program: str, error: BaseException, verbose: bool = False) -> None:
    """Print ``program: error: <one line>`` on stderr; with ``verbose``, the traceback
    (and the chain of causes) first."""
    if verbose:
        traceback.print_exception(error, file=sys.stderr)
    print(f"{program}: error: {one_line(error)}", file=sys.stderr)


def refuse_stray_arguments(program: str, argv: list[str]) -> bool:
    """Print one error line and return True when ``argv`` (absl's leftovers: the program,
    then what no flag took) holds an argument, which would otherwise be dropped without a
    word (``--conf_param A=1 B=2`` applies ``A`` only)."""
    if len(argv) <= 1:
        return False
    print(
        f"{program}: error: unexpected argument {argv[1]!r}: no flag takes it (each value "
        "needs a flag of its own: --conf_param A=1 --conf_param B=2)",
        file=sys.stderr,
    )
    return True


def flags_parser(program: str):
    """absl's ``app.run(..., flags_parser=)``: a flag it does not know or cannot parse is
    one line, ``program: error: ...``, and exit status 2 (absl's own is two lines and 1)."""

    def parse(argv: list[str]) -> list[str]:
        from absl import flags

        try:
            return flags.FLAGS(argv)
        except flags.Error as e:
            print(f"{program}: error: {one_line(e)}", file=sys.stderr)
            sys.exit(2)

    return parse


def lock_directory(path: str, what: str = "root_dir", holder: str | None = None):
    """Create the directory ``path`` if needed and take its lock (``alf.utils.run_lock``):
    one process at a time per directory.

    Args:
        path: the directory.
        what: names it in messages (``root_dir``, ``workspace``).
        holder: what would hold it (``"launcher"``: "DIR is in use by another launcher:
            ..."); None: the lock's own message.

    Returns:
        the acquired ``RootDirLock`` (a context manager that releases it).

    Raises:
        SetupError: the directory is locked by another process, or cannot be used.
    """
    from alf.utils.run_lock import RootDirInUse, RootDirLock

    try:
        os.makedirs(path, exist_ok=True)
        lock = RootDirLock(path)
        lock.acquire()
    except RootDirInUse as e:
        message = str(e) if holder is None else f"{path} is in use by another {holder}: {e}"
        raise SetupError(one_line(message)) from e
    except OSError as e:
        raise SetupError(f"cannot use {what} {path}: {e.strerror or one_line(e)}") from e
    return lock


def child_env() -> dict:
    """This process's environment for a child ``python -m alf.bin.train``: the same, with
    this alf first on ``PYTHONPATH``."""
    import alf

    env = dict(os.environ)
    alf_parent = os.path.dirname(os.path.dirname(os.path.abspath(alf.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [alf_parent, env.get("PYTHONPATH")]))
    return env


class _Collector(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.NOTSET)
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def deferred_logs():
    """Hold back the log records emitted inside the block; print them only if it succeeds.

    A CLI sets up (parses the conf, builds envs) inside this block: when setup
    fails, the records (conf-file chatter, warnings that led nowhere) are dropped so
    that the one error line is all the user sees; when it succeeds they are passed to
    the root logger's handlers as if they had been emitted at once.
    """
    root = logging.getLogger()
    handlers = list(root.handlers)
    collector = _Collector()
    root.handlers = [collector]
    try:
        yield
    except BaseException:
        root.handlers = handlers
        raise
    root.handlers = handlers
    for record in collector.records:
        for handler in handlers:
            if record.levelno >= handler.level:
                handler.handle(record)
