"""The terminal progress bar of a training run.

The bar is one line redrawn in place (``\\r``). A log record written while it is on
screen would continue that line (``return 500.00I1127 16:21:48 ...``), so while the bar
is shown a filter on the root logger's handlers clears the bar's line before each record
is written; the bar is redrawn at the next update.
"""

from __future__ import annotations

import logging
import sys
import time

import torch


class _ClearBeforeLogging(logging.Filter):
    """A handler filter that clears the bar's line before the handler writes a record."""

    def __init__(self, bar: ProgressBar):
        super().__init__()
        self._bar = bar

    def filter(self, record) -> bool:
        self._bar.clear()
        return True


class ProgressBar:
    """A one-line terminal progress bar (only when stdout is a terminal).

    Args:
        enabled: draw it (else every call does nothing).
        width: the bar's width in characters.
        stream: where it is drawn (default: ``sys.stdout`` when it is created).
    """

    def __init__(self, enabled: bool, width: int = 30, stream=None):
        self._enabled = enabled
        self._width = width
        self._stream = sys.stdout if stream is None else stream
        self._last = 0.0
        self._line = ""
        self._shown = False
        self._filter = _ClearBeforeLogging(self)

    def update(self, fraction, iteration, env_steps, rate, metrics) -> None:
        """Redraw at most every 0.2 s (at once after a log record cleared it); ``metrics``
        (``EpisodeMetrics``) is only read then: its average return costs a numpy reduction,
        too much for every iteration."""
        if not self._enabled or (self._shown and time.time() - self._last < 0.2):
            return
        self._last = time.time()
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(fraction * self._width)
        bar = "#" * filled + "-" * (self._width - filled)
        avg = float(torch.as_tensor(metrics.average_return).float().mean())
        line = (
            f"[{bar}] {fraction * 100:5.1f}% iter {iteration} steps {env_steps} "
            f"{rate:,.0f} steps/s return {avg:.2f}"
        )
        # a shorter line than the one on screen leaves none of it behind
        padding = " " * max(len(self._line) - len(line), 0) if self._shown else ""
        self._stream.write(f"\r{line}{padding}")
        self._stream.flush()
        self._line = line
        self._shown = True
        for handler in logging.getLogger().handlers:  # handlers added since the last draw too
            if self._filter not in handler.filters:
                handler.addFilter(self._filter)

    def clear(self) -> None:
        """Blank the bar's line and return to its start (nothing when it is not shown)."""
        if self._shown:
            self._shown = False
            self._stream.write("\r" + " " * len(self._line) + "\r")
            self._stream.flush()

    def close(self) -> None:
        """End the bar's line (it stays on screen) and stop watching the log."""
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self._filter)
        if self._enabled and self._shown:
            self._stream.write("\n")
            self._stream.flush()
        self._shown = False
