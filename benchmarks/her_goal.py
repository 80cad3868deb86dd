"""SAC with and without hindsight relabeling on PointGoal-v0: success rate vs env steps.

    python -m benchmarks.her_goal --seeds 0 1 2 --env_steps 20000

For every seed, ``alf/examples/sac_her_goal_conf.py`` trains twice in fresh
subprocesses (``--worker``): with HER (``use_her=True``, her_proportion 0.8) and
without (``use_her=False``), everything else equal. The worker runs the same
training iterations as ``PolicyTrainer`` (``algorithm.train_iter()`` until
``env_steps``) and every ``--eval_every`` env steps plays ``--eval_episodes``
episodes with the deterministic policy on 10 separate envs (fixed seed;
``harness/variants.py``); the success rate is the evaluation's
``AverageEnvInfo/is_success``, the mean of ``env_info['is_success']`` at the
episodes' last steps (the gymnasium-robotics convention). Results go to
``benchmarks/results/her_goal.json``; the markdown summary printed at the end is what
``benchmarks/RESULTS.md`` shows.
"""

from __future__ import annotations

import argparse
import os
import statistics

from benchmarks.harness.report import RESULTS_DIR, write_json
from benchmarks.harness.variants import run_variants, train_and_evaluate

CONF = "alf/examples/sac_her_goal_conf.py"
RESULTS_JSON = os.path.join(RESULTS_DIR, "her_goal.json")


def worker(seed: int, use_her: bool, env_steps: int, eval_every: int, episodes: int, out: str):
    """Train one run in this process and write its success curve to ``out``."""
    result = train_and_evaluate(
        CONF,
        [f"use_her={use_her}"],
        seed,
        env_steps,
        eval_every,
        episodes,
        measure=lambda metrics: (metrics.average_env_info()["is_success"],),
        label=f"her {use_her}",
    )
    curve = result["curve"]
    write_json(out, dict(result, seed=seed, use_her=use_her, final_success=curve[-1][1]))


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

    def worker_args(seed: int, variant: str) -> list[str]:
        return [
            *("--worker", "--seeds", str(seed), "--use_her", str(int(variant == "her"))),
            *("--env_steps", str(args.env_steps), "--eval_every", str(args.eval_every)),
            *("--eval_episodes", str(args.eval_episodes)),
        ]

    runs = run_variants(
        "benchmarks.her_goal",
        args.seeds,
        args.variants,
        worker_args,
        args.json_path,
        args.env_steps,
    )
    print(summary(runs, args.env_steps))


if __name__ == "__main__":
    main()
