"""The train-and-evaluate loop and the seed × variant driver of the variant benchmarks
(``her_goal``, ``obs_norm_hopper``).

A worker trains one run in its own process: it builds the conf's algorithm like
``PolicyTrainer`` (``create_algorithm``), calls ``algorithm.train_iter()`` until
``env_steps`` (no summaries, no checkpoints) and every ``eval_every`` env steps, and
at the end, evaluates the deterministic policy with ``Evaluator`` on 10 separate envs
reseeded to 123 before each evaluation. Evaluation time is measured and reported
apart. The driver runs one fresh subprocess per (seed, variant), importing this
checkout's alf (``PYTHONPATH``), and saves every
finished run to the results JSON at once, so an interrupted run loses only its last
run.
"""

from __future__ import annotations

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


def run_variants(
    module: str,
    seeds: list[int],
    variants: list[str],
    worker_args: Callable[[int, str], list[str]],
    json_path: str,
    env_steps: int,
) -> list[dict]:
    """For each seed and variant run ``python -m module --worker ... --out FILE`` afresh.

    Args:
        worker_args: ``(seed, variant) -> argv`` for ``script`` (``--out`` is added).

    Returns:
        The workers' results, also saved to ``json_path`` after each run.
    """
    runs = []
    name = module.rsplit(".", 1)[-1]
    for seed in seeds:
        for variant in variants:
            out = f"/tmp/{name}_{seed}_{variant}.json"
            cmd = runner.module_cmd(module, *worker_args(seed, variant), "--out", out)
            runner.run(cmd, out + ".log")
            runs.append(report.read_json(out))
            report.write_json(json_path, dict(env_steps=env_steps, runs=runs))
    return runs
