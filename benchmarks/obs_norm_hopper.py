"""PPO on Hopper-v5 with and without ``ObservationNormalizer``: eval return, same budget.

    python -m benchmarks.obs_norm_hopper [--seeds 0 1 2] [--env_steps 100000]
        [--variants obs_norm raw obs_norm_prenorm] [--prenorm_steps 2048]

``benchmarks/confs/ppo_hopper_obs_norm_conf.py`` with ``obs_norm`` False (``raw``) and True,
the latter also with ``--prenorm_steps`` prenormalization steps (counted in the budget).
"""

from __future__ import annotations

import statistics

from benchmarks.harness import report
from benchmarks.harness.variants import VariantTask, main


def summary(runs: list[dict], env_steps: int) -> str:
    rows = []
    for run in runs:
        _, final, length = run["curve"][-1]
        best = max(c[1] for c in run["curve"])
        row = [run["variant"], run["seed"], f"{run['env_steps']:,}", f"{final:.1f} ({length})"]
        rows.append(row + [f"{best:.1f}", f"{run['wall_s']:.0f}"])
    header = ["variant", "seed", "env steps", "final eval return (episode length)", "best"]
    lines = [report.table(header + ["wall s"], rows)]
    for variant in dict.fromkeys(r["variant"] for r in runs):
        finals = [r["curve"][-1][1] for r in runs if r["variant"] == variant]
        lines.append(
            f"\n{variant}: final eval return mean {statistics.mean(finals):.1f}, "
            f"median {statistics.median(finals):.1f} over {len(finals)} seeds"
        )
    return "\n".join(lines)


TASK = VariantTask(
    name="obs_norm_hopper",
    conf="benchmarks/confs/ppo_hopper_obs_norm_conf.py",
    variants={
        "raw": ["obs_norm=False"],
        "obs_norm": ["obs_norm=True"],
        "obs_norm_prenorm": ["obs_norm=True"],
    },
    measure=lambda metrics: (float(metrics.average_return), metrics.average_episode_length),
    summary=summary,
    env_steps=100_000,
    eval_every=20_480,
    eval_episodes=10,
    default_variants=("obs_norm", "raw"),
    prenormalize=("obs_norm_prenorm",),
)

if __name__ == "__main__":
    main(TASK, __doc__)
