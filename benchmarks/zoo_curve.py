"""A published learning curve from Stable-Baselines3 ``Monitor`` logs (rl-baselines3-zoo's
trained agents), as the game scores that ended in each window of total frames.

    python -m benchmarks.zoo_curve DIR [--window 250000] [--max_frames 4000000]

``DIR`` holds the ``<i>.monitor.csv`` files of one run's ``n`` parallel envs (a ``#{json}``
line, then ``r,l,t``: a whole game's raw score, its length in emulator frames and its end
time). ``make_atari_env`` puts the ``Monitor`` under the ``AtariWrapper``, so ``r`` is the
whole game's unclipped score and ``l`` counts raw frames (skipped frames and the no-op and
FIRE resets included). The envs step in lockstep, so a game that ends in env ``i`` when
env ``i`` has run ``F`` frames ends at about ``n * F`` frames of the whole run.

Printed per window ``(end - window, end]``: the number of games that ended in it, their
mean score, and the mean of the last 10 games ended by ``end`` (what alf's training
``AverageReturn`` is at ``end``). ``benchmarks/atari_ppo.py`` keeps the table it printed
for rl-baselines3-zoo's PPO Breakout agent (``PUBLISHED_CURVE``); the CSVs are not kept.
"""

from __future__ import annotations

import argparse
import csv
import glob
import os

LAST_GAMES = 10  # alf's AverageReturn: the mean of the last 10 whole games


def read_monitor(text: str) -> list[tuple[float, int]]:
    """``[(score, frames)]`` of the games of one ``Monitor`` CSV's text, in order."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("#"):
        raise ValueError("a Monitor CSV starts with a '#{json}' line")
    rows = csv.DictReader(lines[1:])
    if rows.fieldnames is None or not {"r", "l"} <= set(rows.fieldnames):
        raise ValueError(f"a Monitor CSV has the columns r,l,t; got {rows.fieldnames}")
    return [(float(row["r"]), int(row["l"])) for row in rows]


def game_ends(monitors: list[list[tuple[float, int]]]) -> list[tuple[int, float]]:
    """``[(total frames at the game's end, score)]`` of all envs' games, in time order
    (``n`` envs in lockstep: ``n`` times the env's own frame count)."""
    ends = []
    for env, games in enumerate(monitors):
        frames = 0
        for score, length in games:
            frames += length
            ends.append((len(monitors) * frames, env, score))
    return [(frames, score) for frames, _, score in sorted(ends)]


def window_curve(ends: list[tuple[int, float]], window: int, max_frames: int) -> list[tuple]:
    """``[(end, games in (end - window, end], their mean score, mean of the last 10 games
    ended by end)]`` for ``end = window, 2 window, ... <= max_frames`` (None: no game)."""
    if window <= 0 or max_frames < window:
        raise ValueError(f"need 0 < window <= max_frames, got {window} and {max_frames}")
    rows = []
    for end in range(window, max_frames + 1, window):
        inside = [s for f, s in ends if end - window < f <= end]
        before = [s for f, s in ends if f <= end][-LAST_GAMES:]
        rows.append(
            (
                end,
                len(inside),
                sum(inside) / len(inside) if inside else None,
                sum(before) / len(before) if before else None,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the directory of the <i>.monitor.csv files")
    parser.add_argument("--window", type=int, default=250_000)
    parser.add_argument("--max_frames", type=int, default=4_000_000)
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.monitor.csv")))
    if not paths:
        raise SystemExit(f"zoo_curve: no *.monitor.csv in {args.dir}")
    monitors = []
    for path in paths:
        with open(path) as f:
            monitors.append(read_monitor(f.read()))
    for end, games, mean, last in window_curve(game_ends(monitors), args.window, args.max_frames):
        mean = None if mean is None else round(mean, 2)
        last = None if last is None else round(last, 2)
        print(f"    ({end:_}, {games}, {mean}, {last}),")


if __name__ == "__main__":
    main()
