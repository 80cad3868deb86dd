"""Variants of one conf, seed by seed (``her_goal``, ``obs_norm_hopper``).

A worker trains one (seed, variant) in a fresh process: the conf's algorithm built like
``PolicyTrainer`` builds it (``create_algorithm``), ``train_iter()`` until ``env_steps``
(no summaries, no checkpoints), and every ``eval_every`` env steps and at the end the
deterministic policy is evaluated with ``Evaluator`` on 10 separate envs reseeded to 123
(evaluation time measured apart). Every finished run is saved to the JSON at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable

from benchmarks.harness import report, runner

NUM_EVAL_ENVS = 10
EVAL_SEED = 123


def train_and_evaluate(
    conf: str,
    params: list[str],
    seed: int,
    env_steps: int,
    eval_every: int,
    num_eval_episodes: int,
    measure: Callable,
    label: str,
    prenormalize: bool = False,
) -> dict:
    """Train ``conf`` (with ``params``) for ``env_steps``, evaluating along the way.

    Args:
        measure: ``measure(metrics) -> tuple`` of the numbers to record from an
            evaluation's ``EpisodeMetrics``; the curve holds ``(env_steps, *measure)``.
        label: printed with each evaluation.
        prenormalize: first run ``TrainerConfig.num_prenormalization_steps`` steps
            of ``algorithm.prenormalize`` (they count in the budget).

    Returns:
        ``{env_steps, curve, wall_s, eval_s}``.
    """
    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.evaluator import Evaluator
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import common, seeding, torch_utils
    from alf.utils.device import set_device
    from alf.utils.schedulers import update_progress

    common.parse_conf_file(conf, params + [f"TrainerConfig.random_seed={seed}"], [])
    config = TrainerConfig()
    seeding.set_random_seed(seed)
    torch_utils.configure_cpu_math(1, config.flush_denormal)  # as PolicyTrainer does
    env = create_environment(seed=seed)
    eval_env = create_environment(
        num_parallel_environments=NUM_EVAL_ENVS, nonparallel=True, seed=10_000
    )
    try:
        algorithm = create_algorithm(config, env, set_device("cpu"))
        evaluator = Evaluator(algorithm, eval_env, num_episodes=num_eval_episodes, seed=EVAL_SEED)
        start, eval_time = time.time(), 0.0
        steps = algorithm.prenormalize(config.num_prenormalization_steps) if prenormalize else 0
        iteration, curve, next_eval = 0, [], eval_every
        while steps < env_steps:
            update_progress(iteration, steps, steps / env_steps)
            steps += algorithm.train_iter()
            iteration += 1
            if steps >= next_eval or steps >= env_steps:
                eval_start = time.time()
                curve.append((steps, *measure(evaluator.evaluate())))
                eval_time += time.time() - eval_start
                next_eval += eval_every
                print(f"seed {seed} {label} steps {steps}: {curve[-1][1:]}", flush=True)
    finally:
        env.close()
        eval_env.close()
    return dict(env_steps=steps, curve=curve, wall_s=time.time() - start, eval_s=eval_time)


@dataclasses.dataclass(frozen=True)
class VariantTask:
    """A conf, its variants (``--conf_param``s each) and how to measure and summarize them.

    ``measure(metrics) -> tuple`` picks the numbers of an evaluation; ``summary(runs,
    env_steps) -> str`` prints the table; ``prenormalize``: variants that first run
    ``algorithm.prenormalize`` for ``--prenorm_steps`` (counted in the budget).
    """

    name: str
    conf: str
    variants: dict
    measure: Callable
    summary: Callable
    env_steps: int
    eval_every: int
    eval_episodes: int
    default_variants: tuple[str, ...]
    prenormalize: tuple[str, ...] = ()


def main(task: VariantTask, doc: str) -> None:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--env_steps", type=int, default=task.env_steps)
    parser.add_argument("--eval_every", type=int, default=task.eval_every)
    parser.add_argument("--eval_episodes", type=int, default=task.eval_episodes)
    parser.add_argument("--prenorm_steps", type=int, default=2048)
    parser.add_argument("--variants", nargs="+", default=list(task.default_variants))
    parser.add_argument("--json_path", default=f"{report.RESULTS_DIR}/{task.name}.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    budget = [args.env_steps, args.eval_every, args.eval_episodes]
    if args.worker:
        prenormalize = args.worker in task.prenormalize
        params = list(task.variants[args.worker])
        params += [f"prenormalization_steps={args.prenorm_steps}"] * prenormalize
        seed = args.seeds[0]
        run = train_and_evaluate(
            task.conf, params, seed, *budget, task.measure, args.worker, prenormalize
        )
        report.write_json(args.out, dict(run, seed=seed, variant=args.worker))
        return
    runs = []
    for seed in args.seeds:
        for variant in args.variants:
            out = f"/tmp/{task.name}_{seed}_{variant}.json"
            flags = ["--env_steps", "--eval_every", "--eval_episodes", "--prenorm_steps"]
            values = [*budget, args.prenorm_steps]
            cmd = runner.module_cmd(f"benchmarks.{task.name}", "--worker", variant, "--seeds", seed)
            cmd += [str(x) for pair in zip(flags, values) for x in pair] + ["--out", out]
            runner.run(cmd, out + ".log")
            runs.append(report.read_json(out))
            report.write_json(args.json_path, dict(env_steps=args.env_steps, runs=runs))
    print(task.summary(runs, args.env_steps))
