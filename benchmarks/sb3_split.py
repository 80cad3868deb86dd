"""Where Stable-Baselines3's training time goes, split as the floors report it.

    python -m benchmarks.sb3_split --task ppo_cart_pole [--env_steps N] [--seed 0]

Trains the SB3 model of the task's alf-vs-SB3 benchmark (``harness/sb3.model``: the same
hyperparameters, one torch thread, subnormals not flushed, as in those comparisons) with
``learn``, timers wrapped around two of its methods from outside (``harness/phases.PhaseClock``):

- rollout: ``collect_rollouts`` (policy forward, env steps, numpy/torch conversions, buffer
  writes; PPO's values and log-probabilities; for SAC also the random actions before
  ``learning_starts``);
- update: ``train`` (minibatching or replay sampling, GAE is computed at the rollout's end and
  so counts as rollout, forward, backward, optimizer steps, target networks);
- bookkeeping: the rest of ``learn`` (SB3's logger, callbacks, progress).

The first ``--warmup_steps`` env steps (the floor's default) are one ``learn`` call, untimed;
the rest a second call (``reset_num_timesteps=False``). Splitting the run in two changes PPO's
linearly decaying schedules (SB3 computes the progress per call), not the work per step, so
the rates hold but the returns are not those of a single run. Nothing evaluates.
"""

from __future__ import annotations

import dataclasses
import time

from benchmarks import alf_split
from benchmarks.harness import phases


def run(
    task: str,
    seed: int = 0,
    env_steps: int | None = None,
    num_threads: int = 1,
    warmup_steps: int | None = None,
    matmul_precision: str = "highest",
) -> dict:
    """Train ``task``'s SB3 model with the timers (module doc): its ``phases.result`` record."""
    import torch

    from benchmarks.harness import sb3

    spec, floor = alf_split.task_spec(task)
    env_steps = spec.env_steps if env_steps is None else env_steps
    warmup_steps = floor.WARMUP_STEPS if warmup_steps is None else warmup_steps
    model = sb3.model(dataclasses.asdict(spec), seed)
    torch.set_num_threads(num_threads)
    torch.set_float32_matmul_precision(matmul_precision)
    model.learn(warmup_steps)
    done_before = model.num_timesteps
    clock = phases.PhaseClock()
    model.collect_rollouts = clock.timed("rollout", model.collect_rollouts)
    model.train = clock.timed("update", model.train)
    learn = clock.timed("bookkeeping", model.learn)
    cpu = time.process_time()
    learn(env_steps - done_before, reset_num_timesteps=False)
    cpu = time.process_time() - cpu
    episodes = [info["r"] for info in model.ep_info_buffer]
    final = sum(episodes) / len(episodes) if episodes else None
    timed = model.num_timesteps - done_before
    return phases.result(
        "sb3", task, seed, model.num_timesteps, timed, clock.totals, 0.0, cpu,
        num_threads=num_threads, final_train_return=final,
    )  # fmt: skip


def main() -> None:
    alf_split.cli_main(run, __doc__)


if __name__ == "__main__":
    main()
