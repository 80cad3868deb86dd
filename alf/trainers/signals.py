"""SIGTERM and SIGINT during training: a flag the trainer checks, instead of an abrupt exit."""

from __future__ import annotations

import signal
import threading


class SignalCatcher:
    """Turns SIGTERM/SIGINT into a flag checked between iterations (main thread only)."""

    def __init__(self):
        self.caught = None
        self._previous = {}

    def __enter__(self):
        if in_main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.caught = signal.Signals(signum).name

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
