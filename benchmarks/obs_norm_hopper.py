"""PPO on Hopper-v5 with and without ``ObservationNormalizer``: eval return, same budget.

    python benchmarks/obs_norm_hopper.py --seeds 0 1 2 --env_steps 100000

For every seed, ``benchmarks/confs/ppo_hopper_obs_norm_conf.py`` trains in fresh
subprocesses (``--worker``) once per variant: ``obs_norm`` (``obs_norm=True``),
``raw`` (``obs_norm=False``) and, when listed in ``--variants``, ``obs_norm_prenorm``
(``obs_norm=True`` plus ``--prenorm_steps`` prenormalization steps, which count in
the budget). The worker runs ``algorithm.train_iter()`` (what ``PolicyTrainer``
runs, without summaries and checkpoints) until ``env_steps`` and every
``--eval_every`` steps and at the end evaluates 10 deterministic episodes with
``Evaluator`` on 10 separate envs (fixed seed; raw rewards). Results go to
``benchmarks/results/obs_norm_hopper.json``; the printed markdown summary is what
``benchmarks/RESULTS.md`` shows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.join(BENCH_DIR, "confs", "ppo_hopper_obs_norm_conf.py")
RESULTS_JSON = os.path.join(BENCH_DIR, "results", "obs_norm_hopper.json")
VARIANTS = {
    "raw": ["obs_norm=False"],
    "obs_norm": ["obs_norm=True"],
    "obs_norm_prenorm": ["obs_norm=True"],
}


def worker(seed, variant, env_steps, eval_every, prenorm_steps, out) -> None:
    """Train one run in this process and write its eval curve to ``out``."""
    import torch

    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.evaluator import Evaluator
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import common, seeding
    from alf.utils.device import set_device
    from alf.utils.schedulers import update_progress

    params = VARIANTS[variant] + [f"TrainerConfig.random_seed={seed}"]
    if variant == "obs_norm_prenorm":
        params.append(f"prenormalization_steps={prenorm_steps}")
    common.parse_conf_file(CONF, params, [])
    config = TrainerConfig()
    seeding.set_random_seed(seed)
    torch.set_num_threads(1)
    env = create_environment(seed=seed)
    eval_env = create_environment(num_parallel_environments=10, nonparallel=True, seed=10_000)
    algorithm = create_algorithm(config, env, set_device("cpu"))
    evaluator = Evaluator(algorithm, eval_env, num_episodes=10, seed=123)
    start, eval_time = time.time(), 0.0
    steps = algorithm.prenormalize(config.num_prenormalization_steps) if prenorm_steps else 0
    iteration, curve, next_eval = 0, [], eval_every
    while steps < env_steps:
        update_progress(iteration, steps, steps / env_steps)
        steps += algorithm.train_iter()
        iteration += 1
        if steps >= next_eval or steps >= env_steps:
            eval_start = time.time()
            metrics = evaluator.evaluate()
            curve.append(
                (
                    steps,
                    float(torch.as_tensor(metrics.average_return)),
                    metrics.average_episode_length,
                )
            )
            eval_time += time.time() - eval_start
            next_eval += eval_every
            print(f"seed {seed} {variant} steps {steps} return/length {curve[-1][1:]}", flush=True)
    env.close()
    eval_env.close()
    result = dict(
        seed=seed,
        variant=variant,
        env_steps=steps,
        curve=curve,
        final_return=curve[-1][1],
        best_return=max(c[1] for c in curve),
        final_episode_length=curve[-1][2],
        wall_s=time.time() - start,
        eval_s=eval_time,
    )
    with open(out, "w") as f:
        json.dump(result, f)


def summary(runs: list[dict]) -> str:
    lines = [
        "| variant | seed | env steps | final eval return | final eval episode length "
        "| best eval return | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        lines.append(
            f"| {run['variant']} | {run['seed']} | {run['env_steps']:,} | "
            f"{run['final_return']:.1f} | {run.get('final_episode_length', '-')} | "
            f"{run['best_return']:.1f} | {run['wall_s']:.0f} |"
        )
    for variant in VARIANTS:
        finals = [r["final_return"] for r in runs if r["variant"] == variant]
        if finals:
            lines.append(
                f"\n{variant}: final eval return mean {statistics.mean(finals):.1f}, "
                f"median {statistics.median(finals):.1f} over {len(finals)} seeds"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--env_steps", type=int, default=100_000)
    parser.add_argument("--eval_every", type=int, default=20_480)
    parser.add_argument("--prenorm_steps", type=int, default=2048)
    parser.add_argument("--variants", nargs="+", default=["obs_norm", "raw"])
    parser.add_argument("--worker", default=None, help="variant to train in this process")
    parser.add_argument("--out", default=None)
    parser.add_argument("--json_path", default=RESULTS_JSON)
    args = parser.parse_args()
    if args.worker:
        worker(
            args.seeds[0],
            args.worker,
            args.env_steps,
            args.eval_every,
            args.prenorm_steps,
            args.out,
        )
        return
    runs = []
    os.makedirs(os.path.dirname(args.json_path), exist_ok=True)
    for seed in args.seeds:
        for variant in args.variants:
            out = f"/tmp/obs_norm_hopper_{seed}_{variant}.json"
            cmd = [sys.executable, __file__, "--worker", variant, "--seeds", str(seed)]
            cmd += ["--out", out, "--env_steps", str(args.env_steps)]
            cmd += ["--eval_every", str(args.eval_every)]
            cmd += ["--prenorm_steps", str(args.prenorm_steps)]
            subprocess.run(cmd, check=True)
            with open(out) as f:
                runs.append(json.load(f))
            with open(args.json_path, "w") as f:
                json.dump(dict(env_steps=args.env_steps, runs=runs), f, indent=1)
    print(summary(runs))


if __name__ == "__main__":
    main()
