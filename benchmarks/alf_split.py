"""Where alf's training time goes: rollout, update and bookkeeping, as the floors report it.

    python -m benchmarks.alf_split --task ppo_cart_pole [--env_steps N] [--seed 0] [--evaluate]

Trains the task's conf (that of ``benchmarks/ppo_cart_pole.py`` or ``benchmarks/sac_pendulum.py``,
with the same ``--conf_param``s as their learning runs) through ``PolicyTrainer.train()``, as
``alf.bin.train`` does, one torch thread by default. alf is not changed: timers are wrapped
around these methods of the built trainer from outside (``harness/phases.PhaseClock``: a nested
call's time is charged to its own phase only, never twice; nothing is synchronized):

- bookkeeping: ``PolicyTrainer._train``, the loop itself: whatever it does besides the calls
  below is bookkeeping (progress and schedules, the summaries written at an iteration's end,
  train metrics, checkpoints, the progress bar); inside the calls below, ``EpisodeMetrics``
  (the per-step episode statistics), ``alf.summary.scalar`` / ``histogram`` while recording,
  ``RLAlgorithm._summarize_loss`` and PPO's ``PPOLoss._diagnostics`` (summary-only);
- update: ``RLAlgorithm.train_iter`` less its unroll, i.e. the learner's ``train`` (storing the
  unroll in the replay buffer, replay sampling or minibatching, the replayed data transformers,
  GAE, forward, backward, optimizer steps, target networks) and the data transformers'
  ``after_train_iter``;
- rollout: ``Unroller.unroll`` of the training unroller (policy steps, data transformers on the
  time steps, device and numpy/torch conversions, env steps, the bootstrap row);
- eval (left out of the rates): ``Evaluator.evaluate``, with everything it calls.

Off by default: evaluation (``--evaluate`` keeps the conf's, timed as eval). The first
``--warmup_steps`` env steps are not timed (the floors' defaults). A wrapped call costs about a
microsecond: once per unroll, per learner call and per env step (the metrics).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shutil
import tempfile
import time
from types import SimpleNamespace

from benchmarks.harness import phases

#: task -> the module of its alf-vs-SB3 benchmark (its ``TASK``) and of its floor
TASKS = dict(
    ppo_cart_pole=("benchmarks.ppo_cart_pole", "benchmarks.floor_ppo"),
    sac_pendulum=("benchmarks.sac_pendulum", "benchmarks.floor_sac"),
)
PRECISION_HELP = "torch.set_float32_matmul_precision (alf: TrainerConfig.matmul_precision)"
REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def task_spec(task: str):
    """The task's ``vs_sb3.Task`` and its floor module."""
    bench, floor = TASKS[task]
    return importlib.import_module(bench).TASK, importlib.import_module(floor)


def conf_params(task, env_steps: int, evaluate: bool, num_threads: int) -> list[str]:
    """The ``--conf_param``s of the task's learning runs (``vs_sb3.seed_runs``) for
    ``env_steps``, evaluation off unless ``evaluate``."""
    params = [f"TrainerConfig.num_env_steps={env_steps}", *task.conf_params]
    if task.algorithm == "sac":
        sac = dict(num_checkpoints=1, initial_collect_steps=task.learning_starts)
        if evaluate:
            sac.update(eval_interval=task.eval_every, num_eval_episodes=task.num_eval_episodes)
            sac.update(num_eval_environments=task.num_eval_episodes)
        params += [f"TrainerConfig.{k}={v}" for k, v in sac.items()]
    params.append(f"TrainerConfig.num_threads={num_threads}")
    return params + ["TrainerConfig.evaluate=False"] * (not evaluate)


@contextlib.contextmanager
def _patched(*patches):
    """Set ``(owner, name, value)`` attributes for the block, then restore them."""
    saved = [(owner, name, owner.__dict__.get(name, _MISSING)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in reversed(saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


_MISSING = object()


def timed_patches(trainer, clock: phases.PhaseClock, warmup_steps: int, state) -> list[tuple]:
    """The ``(owner, name, wrapper)`` patches of the module doc; ``state`` gets ``env_steps``,
    ``timed_from`` (the env steps when timing started), ``cpu_s`` (process CPU time from then
    to the loop's end) and ``eval_cpu_s`` (that of the evaluations in it)."""
    import alf.summary
    from alf.metrics import EpisodeMetrics

    alg, recording = trainer.algorithm, alf.summary.should_record_summaries
    book, update = "bookkeeping", "update"
    train_iter = clock.timed(update, alg.train_iter)

    def counted_train_iter():
        if state.timed_from is None and state.env_steps >= warmup_steps:
            clock.reset()
            state.timed_from, state.cpu_s = state.env_steps, time.process_time()
            state.eval_cpu_s = 0.0
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
    if trainer._evaluator is not None:
        evaluate = clock.timed(phases.EVAL, trainer._evaluator.evaluate)

        def timed_evaluate():
            cpu = time.process_time()
            try:
                return evaluate()
            finally:
                state.eval_cpu_s += time.process_time() - cpu

        patches.append((trainer._evaluator, "evaluate", timed_evaluate))
    return patches


def run(
    task: str,
    seed: int = 0,
    env_steps: int | None = None,
    num_threads: int = 1,
    warmup_steps: int | None = None,
    evaluate: bool = False,
    matmul_precision: str = "highest",
) -> dict:
    """Train ``task``'s conf with the timers (module doc): its ``phases.result`` record."""
    import alf
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    spec, floor = task_spec(task)
    env_steps = spec.env_steps if env_steps is None else env_steps
    warmup_steps = floor.WARMUP_STEPS if warmup_steps is None else warmup_steps
    root_dir = tempfile.mkdtemp(prefix=f"alf_split_{task}_")
    params = conf_params(spec, env_steps, evaluate, num_threads)
    params += [f"TrainerConfig.root_dir={root_dir!r}", f"TrainerConfig.random_seed={seed}"]
    params.append(f"TrainerConfig.matmul_precision={matmul_precision!r}")
    clock, state = phases.PhaseClock(), SimpleNamespace(env_steps=0, timed_from=None)
    state.cpu_s = state.eval_cpu_s = 0.0
    alf.reset_configs()
    try:
        common.parse_conf_file(os.path.join(REPO_DIR, spec.conf), params, [])
        trainer = PolicyTrainer(TrainerConfig())
        with _patched(*timed_patches(trainer, clock, warmup_steps, state)):
            trainer.train()
        metrics = trainer.algorithm.metrics
    finally:
        alf.reset_configs()
        shutil.rmtree(root_dir, ignore_errors=True)
    final = float(metrics.average_return) if metrics.has_episodes else None
    timed = state.env_steps - (state.timed_from or 0)
    return phases.result(
        "alf", task, seed, state.env_steps, timed, clock.totals, clock.totals[phases.EVAL],
        state.cpu_s - state.eval_cpu_s, num_threads=num_threads, final_train_return=final,
    )  # fmt: skip


def cli_main(run_fn, doc: str, *extra_flags) -> None:
    """The command line of a split (this one, ``sb3_split.py``): the task, budget, seed,
    threads and warm-up flags plus ``extra_flags`` (``(name, kwargs)``), then ``run_fn``'s
    record printed."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--task", choices=sorted(TASKS), default="ppo_cart_pole")
    parser.add_argument("--env_steps", type=int, help="default: the task's budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num_threads", type=int, default=1)
    parser.add_argument("--warmup_steps", type=int, help="default: the floor's")
    parser.add_argument("--matmul_precision", default="highest", help=PRECISION_HELP)
    for name, kwargs in extra_flags:
        parser.add_argument(name, **kwargs)
    record = run_fn(**vars(parser.parse_args()))
    print(phases.line(record))
    print(f"final training return {record['final_train_return']}")


def main() -> None:
    evaluate = dict(action="store_true", help="keep the conf's evaluation")
    cli_main(run, __doc__, ("--evaluate", evaluate))


if __name__ == "__main__":
    main()
