"""PPO on Hopper-v5 with and without ``ObservationNormalizer``: eval return, same budget.

    python -m benchmarks.obs_norm_hopper --seeds 0 1 2 --env_steps 100000

For every seed, ``benchmarks/confs/ppo_hopper_obs_norm_conf.py`` trains in fresh
subprocesses (``--worker``) once per variant: ``obs_norm`` (``obs_norm=True``),
``raw`` (``obs_norm=False``) and, when listed in ``--variants``, ``obs_norm_prenorm``
(``obs_norm=True`` plus ``--prenorm_steps`` prenormalization steps, which count in
the budget). The worker (``harness/variants.py``) runs ``algorithm.train_iter()`` (what
``PolicyTrainer`` runs, without summaries and checkpoints) until ``env_steps`` and
every ``--eval_every`` steps and at the end evaluates 10 deterministic episodes
with ``Evaluator`` on 10 separate envs (fixed seed; raw rewards). Results go to
``benchmarks/results/obs_norm_hopper.json``; the printed markdown summary is what
``benchmarks/RESULTS.md`` shows.
"""

from __future__ import annotations

import argparse
import os
import statistics

from benchmarks.harness.report import RESULTS_DIR, write_json
from benchmarks.harness.variants import run_variants, train_and_evaluate

CONF = "benchmarks/confs/ppo_hopper_obs_norm_conf.py"
RESULTS_JSON = os.path.join(RESULTS_DIR, "obs_norm_hopper.json")
VARIANTS = {
    "raw": ["obs_norm=False"],
    "obs_norm": ["obs_norm=True"],
    "obs_norm_prenorm": ["obs_norm=True"],
}


def worker(seed, variant, env_steps, eval_every, prenorm_steps, out) -> None:
    """Train one run in this process and write its eval curve to ``out``."""
    params = list(VARIANTS[variant])
    prenormalize = variant == "obs_norm_prenorm"
    if prenormalize:
        params.append(f"prenormalization_steps={prenorm_steps}")

    def measure(metrics):
        return float(metrics.average_return), metrics.average_episode_length

    result = train_and_evaluate(
        CONF, params, seed, env_steps, eval_every, 10, measure, variant, prenormalize
    )
    curve = result["curve"]
    write_json(
        out,
        dict(
            result,
            seed=seed,
            variant=variant,
            final_return=curve[-1][1],
            best_return=max(c[1] for c in curve),
            final_episode_length=curve[-1][2],
        ),
    )


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

    def worker_args(seed: int, variant: str) -> list[str]:
        return [
            *("--worker", variant, "--seeds", str(seed), "--env_steps", str(args.env_steps)),
            *("--eval_every", str(args.eval_every), "--prenorm_steps", str(args.prenorm_steps)),
        ]

    runs = run_variants(
        "benchmarks.obs_norm_hopper",
        args.seeds,
        args.variants,
        worker_args,
        args.json_path,
        args.env_steps,
    )
    print(summary(runs))


if __name__ == "__main__":
    main()
