"""Where the time of a training run goes: rollout, update and bookkeeping.

The hand-written floors (``floor_ppo.py``, ``floor_sac.py``) each report a ``result(...)``
record (the driver that timed alf and SB3 the same way and put them side by side is in git
history: ``git show 10f8ff4:benchmarks/floor_compare.py``). rollout: choosing actions, stepping
the envs, numpy/torch conversions (and alf's data transformers); update: storing, sampling or
minibatching, returns and advantages, forward, backward, optimizer steps, target networks;
bookkeeping: episode statistics, summaries, checkpoints and the loop itself.
``PhaseClock`` measures exclusive time through nested calls; the floors time inline.
"""

from __future__ import annotations

import functools
import time

PHASES = ("rollout", "update", "bookkeeping")


class PhaseClock:
    """Exclusive wall-clock time per phase: ``enter(phase)`` charges the time since the last
    event to the running phase and makes ``phase`` the running one until the matching
    ``exit()``, which resumes the enclosing one; every moment between the first ``enter`` and
    the last ``exit`` is charged to exactly one phase."""

    def __init__(self):
        self.totals = dict.fromkeys(PHASES, 0.0)
        self._stack: list[str] = []
        self._since = 0.0

    def enter(self, phase: str) -> None:
        now = time.perf_counter()
        if self._stack:
            self.totals[self._stack[-1]] += now - self._since
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


def setup_torch(seed: int, num_threads: int, matmul_precision: str) -> None:
    """One process's torch as every framework here runs it (alf: its ``TrainerConfig``)."""
    import torch

    torch.set_num_threads(num_threads)
    torch.set_float32_matmul_precision(matmul_precision)
    torch.manual_seed(seed)


def result(framework, task, seed, env_steps, timed_env_steps, phase_s, cpu_s, **extra) -> dict:
    """A run's record: the raw seconds per phase over ``timed_env_steps`` (the env steps after
    the warm-up) and what follows from them: env steps/s, µs per env step (total and per phase)
    and each phase's share."""
    timed_s = sum(phase_s[p] for p in PHASES)
    record = dict(framework=framework, task=task, seed=seed, env_steps=int(env_steps))
    record.update(timed_env_steps=int(timed_env_steps), timed_s=timed_s, cpu_s=cpu_s)
    record.update({f"{p}_s": phase_s[p] for p in PHASES})
    steps = max(int(timed_env_steps), 1)
    record["steps_per_s"] = timed_env_steps / timed_s if timed_s > 0 else None
    record["us_per_step"] = 1e6 * timed_s / steps
    for p in PHASES:
        record[f"{p}_us_per_step"] = 1e6 * phase_s[p] / steps
        record[f"{p}_share"] = phase_s[p] / timed_s if timed_s > 0 else None
    return dict(record, **extra)
