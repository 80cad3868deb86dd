"""Command-line entry points: ``python -m alf.bin.train`` and ``python -m alf.bin.play``.

Shared here (standard library only, so a CLI can report a bad input before it
imports torch): ``SetupError``, ``one_line``, ``deferred_logs`` and ``report_error``,
which together make a failure print exactly one error line on stderr (and, with
``--verbose``, the traceback above it).
"""

from __future__ import annotations

import contextlib
import logging
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
