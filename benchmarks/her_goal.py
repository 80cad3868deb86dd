"""SAC with and without hindsight relabeling on PointGoal-v0: success rate vs env steps.

    python benchmarks/her_goal.py --seeds 0 1 2 --env_steps 20000

For every seed, ``alf/examples/sac_her_goal_conf.py`` trains twice in fresh
subprocesses (``--worker``): with HER (``use_her=True``, her_proportion 0.8) and
without (``use_her=False``), everything else equal. The worker runs the same
training iterations as ``PolicyTrainer`` (``algorithm.train_iter()`` until
``env_steps``) and every ``--eval_every`` env steps plays ``--eval_episodes``
episodes with the deterministic policy on 10 separate envs (fixed seed), counting
an episode a success when ``env_info['is_success']`` is 1 at its last step (the
gymnasium-robotics convention). Results go to ``benchmarks/results/her_goal.json``;
the markdown summary printed at the end is what ``benchmarks/RESULTS.md`` shows.
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
REPO_DIR = os.path.dirname(BENCH_DIR)
CONF = os.path.join(REPO_DIR, "alf", "examples", "sac_her_goal_conf.py")
RESULTS_JSON = os.path.join(BENCH_DIR, "results", "her_goal.json")


def success_rate(algorithm, env, num_episodes: int, seed: int) -> float:
    """Fraction of ``num_episodes`` deterministic episodes ending with ``is_success`` 1."""
    import torch

    from alf.data_structures import StepType

    algorithm.eval()
    env.seed(seed)
    time_step = env.reset()
    transform_state = ()
    successes, episodes = 0, 0
    with torch.no_grad():
        while episodes < num_episodes:
            last = time_step.step_type == StepType.LAST
            successes += int((time_step.env_info["is_success"][last] > 0.5).sum())
            episodes += int(last.sum())
            transformed, transform_state = algorithm.data_transformer.transform_timestep(
                time_step, transform_state
            )
            action = algorithm.predict_step(transformed, ()).output
            time_step = env.step(action)
    algorithm.train()
    return successes / episodes


def worker(seed: int, use_her: bool, env_steps: int, eval_every: int, episodes: int, out: str):
    """Train one run in this process and write its success curve to ``out``."""
    import torch

    from alf.algorithms.config import TrainerConfig
    from alf.environments.utils import create_environment
    from alf.trainers.policy_trainer import create_algorithm
    from alf.utils import common, seeding
    from alf.utils.device import set_device
    from alf.utils.schedulers import update_progress

    params = [f"use_her={use_her}", f"TrainerConfig.random_seed={seed}"]
    common.parse_conf_file(CONF, params, [])
    config = TrainerConfig()
    seeding.set_random_seed(seed)
    torch.set_num_threads(1)
    env = create_environment(seed=seed)
    eval_env = create_environment(num_parallel_environments=10, nonparallel=True, seed=10_000)
    algorithm = create_algorithm(config, env, set_device("cpu"))
    start, eval_time = time.time(), 0.0
    steps, iteration, curve = 0, 0, []
    next_eval = eval_every
    while steps < env_steps:
        update_progress(iteration, steps, steps / env_steps)
        steps += algorithm.train_iter()
        iteration += 1
        if steps >= next_eval or steps >= env_steps:
            eval_start = time.time()
            curve.append((steps, success_rate(algorithm, eval_env, episodes, seed=123)))
            eval_time += time.time() - eval_start
            next_eval += eval_every
            print(f"seed {seed} her {use_her} steps {steps} success {curve[-1][1]:.2f}", flush=True)
    env.close()
    eval_env.close()
    result = dict(
        seed=seed,
        use_her=use_her,
        env_steps=steps,
        curve=curve,
        final_success=curve[-1][1],
        wall_s=time.time() - start,
        eval_s=eval_time,
    )
    with open(out, "w") as f:
        json.dump(result, f)


def summary(runs: list[dict], env_steps: int) -> str:
    lines = [
        "| variant | seed | success at 5k | 10k | final | first eval with success >= 0.9 "
        "| wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        curve = dict((int(s), r) for s, r in run["curve"])
        reached = next((s for s, r in run["curve"] if r >= 0.9), None)
        at = [curve.get(k) for k in (5000, 10000)]
        lines.append(
            f"| {'SAC+HER' if run['use_her'] else 'SAC'} | {run['seed']} | "
            + " | ".join("-" if v is None else f"{v:.2f}" for v in at)
            + f" | {run['final_success']:.2f} | {reached or 'never'} | {run['wall_s']:.0f} |"
        )
    for use_her in (True, False):
        finals = [r["final_success"] for r in runs if r["use_her"] == use_her]
        if finals:
            name = "SAC+HER" if use_her else "SAC"
            lines.append(
                f"\n{name}: final success after {env_steps} steps, mean over "
                f"{len(finals)} seeds: {statistics.mean(finals):.2f} (min {min(finals):.2f})"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--env_steps", type=int, default=20_000)
    parser.add_argument("--eval_every", type=int, default=2_500)
    parser.add_argument("--eval_episodes", type=int, default=100)
    parser.add_argument("--variants", nargs="+", default=["her", "no_her"])
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--use_her", type=int, default=1)
    parser.add_argument("--out", default=None)
    parser.add_argument("--json_path", default=RESULTS_JSON)
    args = parser.parse_args()
    if args.worker:
        worker(
            args.seeds[0],
            bool(args.use_her),
            args.env_steps,
            args.eval_every,
            args.eval_episodes,
            args.out,
        )
        return
    runs = []
    os.makedirs(os.path.dirname(args.json_path), exist_ok=True)
    for seed in args.seeds:
        for variant in args.variants:
            out = f"/tmp/her_goal_{seed}_{variant}.json"
            cmd = [sys.executable, __file__, "--worker", "--seeds", str(seed)]
            cmd += ["--use_her", str(int(variant == "her")), "--out", out]
            cmd += ["--env_steps", str(args.env_steps), "--eval_every", str(args.eval_every)]
            cmd += ["--eval_episodes", str(args.eval_episodes)]
            subprocess.run(cmd, check=True)
            with open(out) as f:
                runs.append(json.load(f))
            with open(args.json_path, "w") as f:
                json.dump(dict(env_steps=args.env_steps, runs=runs), f, indent=1)
    print(summary(runs, args.env_steps))


if __name__ == "__main__":
    main()
