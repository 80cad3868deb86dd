"""The terminal progress bar (``alf.trainers.progress``) on a fake terminal: a log line
written while the bar is on screen starts on a line of its own, and the bar comes back
after it."""

from __future__ import annotations

import io
import itertools
import logging
import sys
import types

import pytest

from alf.trainers.progress import ProgressBar


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self):
        return True


def screen(text: str) -> list[str]:
    """The lines a terminal shows for ``text``: ``\\r`` returns to the line's start and the
    characters written after it overwrite those there."""
    lines = []
    for raw in text.split("\n"):
        cells = []
        for part in raw.split("\r"):
            cells[: len(part)] = part
        lines.append("".join(cells).rstrip())
    return lines


METRICS = types.SimpleNamespace(average_return=500.0)


@pytest.fixture
def terminal():
    """A fake terminal, which the root logger writes to too (as stdout and stderr share a
    tty); a test makes it stdout (pytest sets its own stdout again after the fixtures)."""
    stream = FakeTerminal()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("I %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_log_line_starts_on_its_own_line_and_the_bar_comes_back(terminal, monkeypatch):
    monkeypatch.setattr(sys, "stdout", terminal)
    bar = ProgressBar(True, width=10)
    bar.update(0.5, 3, 300, 1000.0, METRICS)
    logging.info("Checkpoint written")
    bar.update(0.6, 4, 400, 1000.0, METRICS)  # at once, though within 0.2 s
    bar.close()
    lines = screen(terminal.getvalue())
    assert lines == [
        "I Checkpoint written",
        "[######----]  60.0% iter 4 steps 400 1,000 steps/s return 500.00",
        "",
    ]
    filters = [f for h in logging.getLogger().handlers for f in h.filters]
    assert not [f for f in filters if type(f).__module__ == "alf.trainers.progress"]


def test_the_bar_redraws_at_most_every_fifth_of_a_second(terminal, monkeypatch):
    monkeypatch.setattr(sys, "stdout", terminal)
    clock = itertools.chain([100.0], itertools.repeat(100.19))  # drawn at 100.0, then 0.19 s
    monkeypatch.setattr("alf.trainers.progress.time.time", lambda: next(clock))
    bar = ProgressBar(True, width=10)
    bar.update(0.5, 3, 300, 1000.0, METRICS)
    bar.update(0.6, 4, 400, 1000.0, METRICS)  # 0.19 s later: not drawn
    bar.close()
    assert terminal.getvalue().count("\r") == 1
    assert screen(terminal.getvalue())[0].startswith("[#####-----]  50.0% iter 3 ")


def test_a_disabled_bar_writes_nothing_and_leaves_the_log_alone(terminal, monkeypatch):
    monkeypatch.setattr(sys, "stdout", terminal)
    bar = ProgressBar(False)
    bar.update(0.5, 3, 300, 1000.0, METRICS)
    logging.info("hello")
    bar.close()
    assert terminal.getvalue() == "I hello\n"
