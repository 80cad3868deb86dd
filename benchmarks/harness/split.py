"""Where alf's and Stable-Baselines3's training time goes, split as the floors report it
(``phases.py``); ``floor_compare.py`` runs these in fresh processes. Neither evaluates.

alf: ``PolicyTrainer.train()`` on the task's conf (``tasks.py``, with its learning runs'
``--conf_param``s), timers wrapped from outside (a nested call's time is charged to its own
phase only): bookkeeping = ``PolicyTrainer._train`` (the loop: progress, summaries, metrics,
checkpoints), ``EpisodeMetrics``, ``alf.summary.scalar`` / ``histogram`` while recording,
``_summarize_loss`` and PPO's ``_diagnostics``; update = ``train_iter`` less its unroll;
rollout = ``Unroller.unroll`` (policy, transformers, conversions, env steps).

SB3: the task's model (``sb3.model``, subnormals not flushed): rollout = ``collect_rollouts``
(PPO's GAE included), update = ``train``, bookkeeping = the rest of ``learn``; the warm-up is an
untimed ``learn`` call (which changes PPO's linear schedules, not the work per step).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import time
from types import SimpleNamespace
from unittest import mock

from benchmarks.harness import phases
from benchmarks.tasks import TASKS

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _timed_patches(trainer, clock: phases.PhaseClock, warmup_steps: int, state) -> list[tuple]:
    """The ``(owner, name, wrapper)`` patches of the module doc; ``state`` gets ``env_steps``,
    ``timed_from`` (the env steps when timing started) and ``cpu_s`` (from then to the end)."""
    import alf.summary
    from alf.metrics import EpisodeMetrics

    alg, recording, book = trainer.algorithm, alf.summary.should_record_summaries, "bookkeeping"
    train_iter = clock.timed("update", alg.train_iter)

    def counted_train_iter():
        if state.timed_from is None and state.env_steps >= warmup_steps:
            clock.reset()
            state.timed_from, state.cpu_s = state.env_steps, time.process_time()
        steps = train_iter()
        state.env_steps += steps
        return steps

    loop = clock.timed(book, trainer._train)

    def timed_loop():
        state.cpu_s = time.process_time()
        try:
            loop()
        finally:
            state.cpu_s = time.process_time() - state.cpu_s

    patches = [(trainer, "_train", timed_loop), (alg, "train_iter", counted_train_iter)]
    patches.append((alg.unroller, "unroll", clock.timed("rollout", alg.unroller.unroll)))
    patches.append((EpisodeMetrics, "__call__", clock.timed(book, EpisodeMetrics.__call__)))
    for name in ("scalar", "histogram"):
        summary = clock.timed(book, getattr(alf.summary, name), recording)
        patches.append((alf.summary, name, summary))
    patches.append((alg, "_summarize_loss", clock.timed(book, alg._summarize_loss, recording)))
    loss = getattr(alg, "loss", None)
    if hasattr(loss, "_diagnostics"):
        patches.append((loss, "_diagnostics", clock.timed(book, loss._diagnostics)))
    return patches


def alf_run(task: str, seed, env_steps, num_threads, warmup_steps, matmul_precision) -> dict:
    """Train ``task``'s conf with the timers (module doc): its ``phases.result`` record."""
    import alf
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    spec, root_dir = TASKS[task], tempfile.mkdtemp(prefix=f"alf_split_{task}_")
    params = [f"TrainerConfig.num_env_steps={env_steps}", *spec.conf_params]  # as learning runs
    sac = ["TrainerConfig.num_checkpoints=1"]
    sac.append(f"TrainerConfig.initial_collect_steps={spec.learning_starts}")
    params += sac * (spec.algorithm == "sac")
    params += [f"TrainerConfig.num_threads={num_threads}", "TrainerConfig.evaluate=False"]
    params += [f"TrainerConfig.root_dir={root_dir!r}", f"TrainerConfig.random_seed={seed}"]
    params.append(f"TrainerConfig.matmul_precision={matmul_precision!r}")
    clock, state = phases.PhaseClock(), SimpleNamespace(env_steps=0, timed_from=None, cpu_s=0.0)
    alf.reset_configs()
    try:
        common.parse_conf_file(os.path.join(REPO_DIR, spec.conf), params, [])
        trainer = PolicyTrainer(TrainerConfig())
        with contextlib.ExitStack() as stack:
            for owner, name, wrapper in _timed_patches(trainer, clock, warmup_steps, state):
                stack.enter_context(mock.patch.object(owner, name, wrapper))
            trainer.train()
        metrics = trainer.algorithm.metrics
    finally:
        alf.reset_configs()
        shutil.rmtree(root_dir, ignore_errors=True)
    final = float(metrics.average_return) if metrics.has_episodes else None
    timed = state.env_steps - (state.timed_from or 0)
    return phases.result(
        "alf", task, seed, state.env_steps, timed, clock.totals, state.cpu_s,
        num_threads=num_threads, final_train_return=final,
    )  # fmt: skip


def sb3_run(task: str, seed, env_steps, num_threads, warmup_steps, matmul_precision) -> dict:
    """Train ``task``'s SB3 model with the timers (module doc): its ``phases.result`` record."""
    import torch

    from benchmarks.harness import sb3

    model = sb3.model(dataclasses.asdict(TASKS[task]), seed)  # seeded by SB3
    torch.set_num_threads(num_threads)
    torch.set_float32_matmul_precision(matmul_precision)
    model.learn(warmup_steps)
    done_before, clock = model.num_timesteps, phases.PhaseClock()
    model.collect_rollouts = clock.timed("rollout", model.collect_rollouts)
    model.train = clock.timed("update", model.train)
    learn = clock.timed("bookkeeping", model.learn)
    cpu = time.process_time()
    learn(env_steps - done_before, reset_num_timesteps=False)
    cpu = time.process_time() - cpu
    episodes = [info["r"] for info in model.ep_info_buffer]
    final = sum(episodes) / len(episodes) if episodes else None
    return phases.result(
        "sb3", task, seed, model.num_timesteps, model.num_timesteps - done_before, clock.totals,
        cpu, num_threads=num_threads, final_train_return=final,
    )  # fmt: skip
