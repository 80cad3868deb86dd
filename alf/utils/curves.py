"""Learning curves from training runs' tensorboard files: read, group, aggregate.

Used by ``alf.bin.plot``; plain numpy and tensorboard's event reader, no plotting.

* ``find_runs(paths)``: each path is a run's root_dir (it has event files in ``train/``
  or ``eval/``) or a directory of runs (a grid search's or PBT workspace's root, one
  level down).
* ``read_curve(run_dir, tag, x, source)``: one run's ``(x, y)``. ``source`` is ``eval``,
  ``train`` or ``auto`` (eval's events when they have the tag, else train's, as the grid
  search's summary does). ``x`` is ``env_steps``, ``iteration`` or ``wall_time`` (seconds
  since the run's first event of that tag). The env steps of a ``Metrics/<name>`` value
  are those it was written at under ``Metrics_vs_EnvironmentSteps/<name>``; for other tags
  they come from ``train/Metrics/EnvironmentSteps`` (written every ``summary_interval``
  iterations: interpolated between, extrapolated beyond the last). A step written twice
  (a resumed run redoes the iterations after its checkpoint) keeps its newest value.
* ``group_runs(runs, pattern)``: runs grouped into curves by a regular expression
  searched in each run's path (its first group, or the whole match, is the curve's
  label); without a pattern, runs whose directory names differ only by a trailing seed
  or repeat number (``-r0``, ``_seed2``, ``_3``) form one curve, labelled with the rest of
  the name (``lr=0.1`` for ``lr=0.1-r0``), or with the parent directory's name when
  nothing is left (``ppo/seed1``, ``ppo/3``: ``ppo``).
* ``aggregate(curves)``: mean and standard deviation (sample, ``ddof=1``; 0 for one
  run) over the runs of a group at each x. When all runs have the same x values (the
  usual case for env steps: same conf, other seeds) those are used; otherwise each run is
  interpolated linearly on ``num_points`` points over the range all runs cover.
"""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np

X_AXES = ("env_steps", "iteration", "wall_time")
SOURCES = ("auto", "eval", "train")
ENV_STEPS_TAG = "Metrics/EnvironmentSteps"
METRICS_PREFIX = "Metrics/"
#: the trainer writes each ``Metrics/<name>`` at its env steps too, under this prefix
VS_ENV_STEPS_PREFIX = "Metrics_vs_EnvironmentSteps/"

_SEED_SUFFIX = re.compile(r"(?:^|[-_])(?:seed|run|rep|r|s)?[-_=]?\d+$", re.IGNORECASE)


class CurveError(ValueError):
    """Bad input for a curve (one line naming the run, tag or pattern)."""


@dataclasses.dataclass
class Curve:
    """One run's curve."""

    run_dir: str
    source: str
    x: np.ndarray
    y: np.ndarray


@dataclasses.dataclass
class Aggregate:
    """A group's curve: ``mean`` and ``std`` over its ``runs`` at each ``x``."""

    label: str
    runs: list
    x: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    values: np.ndarray  # [num_runs, len(x)]


def _has_events(directory: str) -> bool:
    return os.path.isdir(directory) and any(n.startswith("events.") for n in os.listdir(directory))


def is_run(path: str) -> bool:
    """``path`` is a training run's root_dir (event files in ``train/`` or ``eval/``)."""
    return any(_has_events(os.path.join(path, s)) for s in ("train", "eval"))


def find_runs(paths) -> list[str]:
    """The run directories given by ``paths`` (runs, or directories of runs), in order."""
    runs = []
    for path in paths:
        path = os.path.abspath(os.path.expanduser(path))
        if not os.path.isdir(path):
            raise CurveError(f"--root_dirs: {path} is not a directory")
        if is_run(path):
            runs.append(path)
            continue
        inner = [os.path.join(path, n) for n in sorted(os.listdir(path))]
        inner = [p for p in inner if os.path.isdir(p) and is_run(p)]
        if not inner:
            raise CurveError(
                f"--root_dirs: {path} holds no training run (no event files in train/ or eval/, "
                "nor in its subdirectories)"
            )
        runs.extend(inner)
    seen = set()
    return [r for r in runs if not (r in seen or seen.add(r))]


def _events(directory: str, tag: str):
    """``[(step, wall_time, value)]`` of ``tag`` in ``directory`` (None: no such tag),
    sorted by step; of a step written twice, the newest."""
    if not _has_events(directory):
        return None
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(directory, size_guidance={"scalars": 0})
    accumulator.Reload()
    if tag not in accumulator.Tags()["scalars"]:
        return None
    newest = {}
    for e in sorted(accumulator.Scalars(tag), key=lambda e: e.wall_time):
        newest[e.step] = (e.step, e.wall_time, e.value)
    return [newest[s] for s in sorted(newest)]


def read_curve(run_dir: str, tag: str, x: str = "env_steps", source: str = "auto") -> Curve:
    """One run's curve of ``tag`` (see the module doc)."""
    if x not in X_AXES:
        raise CurveError(f"--x must be one of {', '.join(X_AXES)}, got {x!r}")
    if source not in SOURCES:
        raise CurveError(f"--source must be one of {', '.join(SOURCES)}, got {source!r}")
    sources = ("eval", "train") if source == "auto" else (source,)
    for name in sources:
        events = _events(os.path.join(run_dir, name), tag)
        if events:
            break
    else:
        raise CurveError(f"{run_dir} has no scalar {tag!r} in {' or '.join(sources)}/")
    if x == "env_steps" and tag.startswith(METRICS_PREFIX):
        # the same values, written at their env steps: exact where EnvironmentSteps,
        # written every summary_interval only, would have to be interpolated
        twin = _events(
            os.path.join(run_dir, name), VS_ENV_STEPS_PREFIX + tag[len(METRICS_PREFIX) :]
        )
        if twin and len(twin) == len(events):
            events = twin
            x = "step"
    steps = np.array([e[0] for e in events], dtype=np.float64)
    y = np.array([e[2] for e in events], dtype=np.float64)
    if x in ("iteration", "step"):
        xs = steps
    elif x == "wall_time":
        wall = np.array([e[1] for e in events], dtype=np.float64)
        xs = wall - wall.min()
    else:
        xs = _env_steps_at(run_dir, steps)
    return Curve(run_dir, name, xs, y)


def _env_steps_at(run_dir: str, iterations: np.ndarray) -> np.ndarray:
    """The environment steps at ``iterations``, from the train events (interpolated
    between the iterations that have them, extrapolated at the rate of the last two beyond
    the last)."""
    events = _events(os.path.join(run_dir, "train"), ENV_STEPS_TAG)
    if not events:
        raise CurveError(
            f"{run_dir} has no train/{ENV_STEPS_TAG} scalar to give env steps: use --x iteration"
        )
    known_steps = np.array([e[0] for e in events], dtype=np.float64)
    known_env = np.array([e[2] for e in events], dtype=np.float64)
    if len(known_steps) == 1:
        return iterations * (known_env[0] / max(known_steps[0], 1.0))
    result = np.interp(iterations, known_steps, known_env)
    beyond = iterations > known_steps[-1]
    rate = (known_env[-1] - known_env[-2]) / (known_steps[-1] - known_steps[-2])
    result[beyond] = known_env[-1] + rate * (iterations[beyond] - known_steps[-1])
    return result


def group_key(run_dir: str, pattern: re.Pattern | None) -> str | None:
    """The label of the curve ``run_dir`` belongs to (None: the pattern does not match)."""
    if pattern is not None:
        match = pattern.search(run_dir)
        if match is None:
            return None
        return next((g for g in match.groups() if g is not None), match.group(0))
    name = os.path.basename(run_dir.rstrip(os.sep))
    stripped = _SEED_SUFFIX.sub("", name).rstrip("-_.=")
    return stripped or os.path.basename(os.path.dirname(run_dir)) or name


def group_runs(runs: list[str], pattern: str | None = None) -> dict[str, list[str]]:
    """``{label: [run_dir]}`` in the order the labels first appear (see the module doc)."""
    compiled = None
    if pattern is not None:
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise CurveError(f"--group {pattern!r} is not a regular expression: {e}") from e
    groups = {}
    for run in runs:
        key = group_key(run, compiled)
        if key is None:
            raise CurveError(f"--group {pattern!r} does not match the run {run}")
        groups.setdefault(key, []).append(run)
    return groups


def aggregate(label: str, curves: list[Curve], num_points: int = 200) -> Aggregate:
    """Mean and std of ``curves`` at common x values (see the module doc)."""
    if not curves:
        raise CurveError(f"curve {label!r} has no runs")
    same_x = all(len(c.x) == len(curves[0].x) and np.array_equal(c.x, curves[0].x) for c in curves)
    if same_x:
        grid = curves[0].x
        values = np.stack([c.y for c in curves])
    else:
        low = max(float(c.x.min()) for c in curves)
        high = min(float(c.x.max()) for c in curves)
        if high < low:
            raise CurveError(
                f"the runs of curve {label!r} cover no common range of x "
                f"({', '.join(c.run_dir for c in curves)})"
            )
        grid = np.linspace(low, high, num_points) if high > low else np.array([low])
        values = np.stack([np.interp(grid, c.x, c.y) for c in curves])
    mean = values.mean(axis=0)
    std = values.std(axis=0, ddof=1) if len(curves) > 1 else np.zeros_like(mean)
    return Aggregate(label, [c.run_dir for c in curves], grid, mean, std, values)


def learning_curves(
    paths,
    tag: str,
    x: str = "env_steps",
    source: str = "auto",
    group: str | None = None,
    num_points: int = 200,
) -> list[Aggregate]:
    """Read the runs under ``paths``, group them and aggregate each group's curve of ``tag``."""
    runs = find_runs(paths)
    groups = group_runs(runs, group)
    return [
        aggregate(label, [read_curve(r, tag, x, source) for r in members], num_points)
        for label, members in groups.items()
    ]
