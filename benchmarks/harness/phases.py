"""Where the time of a training run goes: rollout, update and bookkeeping.

The hand-written floors (``benchmarks/floor_ppo.py``, ``floor_sac.py``) and alf's trainer
(``benchmarks/alf_split.py``) report one record each, ``result(...)``, so that
``benchmarks/floor_compare.py`` can put them side by side:

- **rollout**: choosing actions (policy forward), stepping the environment, and moving data
  between numpy and torch (and alf's data transformers at rollout);
- **update**: what training does with the data: storing it, replay sampling or minibatching,
  returns and advantages, forward, backward, optimizer step, target networks;
- **bookkeeping**: episode statistics, summaries, checkpoints and the loop around it all.

Evaluation, when a run does any, is timed apart and left out of the rates. ``PhaseClock``
measures exclusive time through nested calls (alf's split wraps methods that call each other);
the floors time their few phases inline with ``time.perf_counter``.
"""

from __future__ import annotations

import functools
import time

PHASES = ("rollout", "update", "bookkeeping")
EVAL = "eval"


class PhaseClock:
    """Exclusive wall-clock time per phase.

    ``enter(phase)`` charges the time since the last event to the phase running so far and
    makes ``phase`` the running one until the matching ``exit()``, which resumes the enclosing
    phase: every moment between the first ``enter`` and the last ``exit`` is charged to exactly
    one phase. Inside an ``absorbing`` phase (evaluation) nested phases are charged to it.
    """

    def __init__(self, phases=PHASES + (EVAL,), absorbing=(EVAL,)):
        self.totals = dict.fromkeys(phases, 0.0)
        self._absorbing = frozenset(absorbing)
        self._stack: list[str] = []
        self._since = 0.0

    def enter(self, phase: str) -> None:
        now = time.perf_counter()
        if self._stack:
            top = self._stack[-1]
            self.totals[top] += now - self._since
            if top in self._absorbing:
                phase = top
        self._stack.append(phase)
        self._since = now

    def exit(self) -> None:
        now = time.perf_counter()
        self.totals[self._stack.pop()] += now - self._since
        self._since = now

    def reset(self) -> None:
        """Forget the time charged so far (the running phases go on from now)."""
        self.totals = dict.fromkeys(self.totals, 0.0)
        self._since = time.perf_counter()

    def timed(self, phase: str, function, when=None):
        """``function`` charging its calls to ``phase`` (only while ``when()`` holds, if given:
        other calls go through untimed)."""

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if when is not None and not when():
                return function(*args, **kwargs)
            self.enter(phase)
            try:
                return function(*args, **kwargs)
            finally:
                self.exit()

        return wrapper


def result(
    framework: str,
    task: str,
    seed: int,
    env_steps: int,
    timed_env_steps: int,
    phase_s: dict,
    eval_s: float,
    cpu_s: float,
    **extra,
) -> dict:
    """A run's record: the raw seconds per phase over ``timed_env_steps`` (the env steps after
    the warm-up) and what follows from them: env steps/s, µs per env step (total and per phase)
    and each phase's share."""
    timed_s = sum(phase_s[p] for p in PHASES)
    record = dict(framework=framework, task=task, seed=seed, env_steps=int(env_steps))
    record.update(timed_env_steps=int(timed_env_steps), timed_s=timed_s, cpu_s=cpu_s)
    record.update({f"{p}_s": phase_s[p] for p in PHASES}, eval_s=eval_s)
    steps = max(int(timed_env_steps), 1)
    record["steps_per_s"] = timed_env_steps / timed_s if timed_s > 0 else None
    record["us_per_step"] = 1e6 * timed_s / steps
    for p in PHASES:
        record[f"{p}_us_per_step"] = 1e6 * phase_s[p] / steps
        record[f"{p}_share"] = phase_s[p] / timed_s if timed_s > 0 else None
    return dict(record, **extra)


def line(record: dict) -> str:
    """One line: rate, time per env step and its split."""
    parts = " + ".join(
        f"{p} {record[f'{p}_us_per_step']:.1f} ({100 * (record[f'{p}_share'] or 0):.0f}%)"
        for p in PHASES
    )
    rate = record["steps_per_s"]
    return (
        f"{record['framework']} {record['task']} seed {record['seed']}: "
        f"{record['timed_env_steps']:,} timed env steps in {record['timed_s']:.2f} s: "
        f"{rate or 0:,.0f} env steps/s, {record['us_per_step']:.1f} µs per env step = {parts} µs"
        f"; eval {record['eval_s']:.2f} s (left out); CPU {record['cpu_s']:.2f} s"
    )
