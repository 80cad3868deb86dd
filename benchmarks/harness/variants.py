"""Variants of one conf, seed by seed (``her_goal``, ``obs_norm_hopper``).

Each (seed, variant) trains in a fresh process: the conf's algorithm as ``PolicyTrainer`` builds
it, ``train_iter()`` until ``env_steps`` (no summaries or checkpoints), the deterministic policy
evaluated with ``Evaluator`` (10 envs reseeded to 123) every ``eval_every`` env steps and at the
end, evaluation time measured apart.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable
from functools import partial

from benchmarks.harness import cli, runner

NUM_EVAL_ENVS = 10
EVAL_SEED = 123


@dataclasses.dataclass(frozen=True)
class VariantTask:
    """A conf, its variants (``--conf_param``s each) and how to measure and summarize them.

    ``measure(metrics) -> tuple`` picks the numbers of an evaluation (the curve holds
    ``(env_steps, *measure)``); ``summary(runs, env_steps) -> str`` prints the table;
    ``prenormalize``: variants that first run ``algorithm.prenormalize`` for
    ``--prenorm_steps`` (counted in the budget).
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


def run_variant(name: str, variant: str, seed: int, budget: dict) -> dict:
    """Train ``benchmarks.<name>.TASK``'s ``variant``: ``{env_steps, curve, wall_s, eval_s}``."""
    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.evaluator import Evaluator
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import common, seeding, torch_utils
    from alf.utils.device import set_device
    from alf.utils.schedulers import update_progress

    task = importlib.import_module(f"benchmarks.{name}").TASK
    prenormalize, env_steps = variant in task.prenormalize, budget["env_steps"]
    params = [*task.variants[variant], f"TrainerConfig.random_seed={seed}"]
    params += [f"prenormalization_steps={budget['prenorm_steps']}"] * prenormalize
    common.parse_conf_file(task.conf, params, [])
    config = TrainerConfig()
    seeding.set_random_seed(seed)
    torch_utils.configure_cpu_math(1, config.flush_denormal)  # as PolicyTrainer does
    env = create_environment(seed=seed)
    eval_env = create_environment(
        num_parallel_environments=NUM_EVAL_ENVS, nonparallel=True, seed=10_000
    )
    try:
        algorithm = create_algorithm(config, env, set_device("cpu"))
        evaluator = Evaluator(algorithm, eval_env, budget["eval_episodes"], seed=EVAL_SEED)
        start, eval_time = time.time(), 0.0
        steps = algorithm.prenormalize(config.num_prenormalization_steps) if prenormalize else 0
        iteration, curve, next_eval = 0, [], budget["eval_every"]
        while steps < env_steps:
            update_progress(iteration, steps, steps / env_steps)
            steps += algorithm.train_iter()
            iteration += 1
            if steps >= next_eval or steps >= env_steps:
                eval_start = time.time()
                curve.append((steps, *task.measure(evaluator.evaluate())))
                eval_time += time.time() - eval_start
                next_eval += budget["eval_every"]
                print(f"seed {seed} {variant} steps {steps}: {curve[-1][1:]}", flush=True)
    finally:
        env.close()
        eval_env.close()
    run = dict(env_steps=steps, curve=curve, wall_s=time.time() - start, eval_s=eval_time)
    return dict(run, seed=seed, variant=variant)


def main(task: VariantTask, doc: str) -> None:
    parser = cli.parser(doc, task.name)
    for option in ("env_steps", "eval_every", "eval_episodes"):
        parser.add_argument(f"--{option}", type=int, default=getattr(task, option))
    parser.add_argument("--prenorm_steps", type=int, default=2048)
    parser.add_argument("--variants", nargs="+", default=list(task.default_variants))
    args = parser.parse_args()
    keys = ("env_steps", "eval_every", "eval_episodes", "prenorm_steps")
    budget = {k: getattr(args, k) for k in keys}

    def job(seed, variant):
        out = f"{args.work_dir}/{seed}_{variant}.json"
        kwargs = dict(name=task.name, variant=variant, seed=seed, budget=budget)
        return [runner.call("benchmarks.harness.variants:run_variant", out, **kwargs)]

    jobs = [partial(job, seed, variant) for seed in args.seeds for variant in args.variants]
    render = partial(task.summary, env_steps=args.env_steps)
    cli.run(args, task.name, render, jobs, block=False, env_steps=args.env_steps)
