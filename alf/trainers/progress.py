"""The terminal progress bar of a training run."""

from __future__ import annotations

import sys
import time

import torch


class ProgressBar:
    """A one-line terminal progress bar (only when stdout is a terminal)."""

    def __init__(self, enabled: bool, width: int = 30):
        self._enabled = enabled
        self._width = width
        self._last = 0.0

    def update(self, fraction, iteration, env_steps, rate, metrics) -> None:
        """Redraw at most every 0.2 s; ``metrics`` (``EpisodeMetrics``) is only read then:
        its average return costs a numpy reduction, too much for every iteration."""
        if not self._enabled or time.time() - self._last < 0.2:
            return
        self._last = time.time()
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(fraction * self._width)
        bar = "#" * filled + "-" * (self._width - filled)
        avg = float(torch.as_tensor(metrics.average_return).float().mean())
        sys.stdout.write(
            f"\r[{bar}] {fraction * 100:5.1f}% iter {iteration} steps {env_steps} "
            f"{rate:,.0f} steps/s return {avg:.2f}"
        )
        sys.stdout.flush()

    def close(self) -> None:
        if self._enabled:
            sys.stdout.write("\n")
            sys.stdout.flush()
