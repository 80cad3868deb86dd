"""SIGTERM and SIGINT during training: a flag the trainer checks, instead of an abrupt exit.

The first signal sets ``caught``: the trainer ends an evaluation at its next env step,
finishes the iteration in progress, writes a checkpoint and returns. A second signal exits
the process at once with status ``128 + signum``; checkpoints are written atomically, so
none is left half-written.
"""

from __future__ import annotations

import os
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
                if signal.getsignal(sig) is signal.SIG_IGN:
                    continue  # ignored on purpose (nohup, a background job): leave it so
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        name = signal.Signals(signum).name
        if self.caught is not None:  # the second one: no more waiting
            os.write(2, f"Received {name} again: exiting now, without a checkpoint\n".encode())
            os._exit(128 + signum)
        self.caught = name

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
