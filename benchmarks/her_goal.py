"""SAC with and without hindsight relabeling on PointGoal-v0: success rate vs env steps.

    python -m benchmarks.her_goal [--seeds 0 1 2] [--env_steps 20000] [--variants her no_her]

``alf/examples/sac_her_goal_conf.py`` with ``use_her`` True and False; success rate: the
evaluation's ``AverageEnvInfo/is_success``.
"""

from __future__ import annotations

import statistics

from benchmarks.harness import report
from benchmarks.harness.variants import VariantTask, main


def summary(runs: list[dict], env_steps: int) -> str:
    rows = []
    for run in runs:
        curve = {int(s): r for s, r in run["curve"]}
        reached = next((s for s, r in run["curve"] if r >= 0.9), None)
        row = [run["variant"], run["seed"]]
        row += ["-" if curve.get(k) is None else f"{curve[k]:.2f}" for k in (5000, 10000)]
        row += [f"{run['curve'][-1][1]:.2f}", reached or "never", f"{run['wall_s']:.0f}"]
        rows.append(row)
    header = ["variant", "seed", "success at 5k", "10k", "final", "first eval ≥ 0.9", "wall s"]
    lines = [report.table(header, rows)]
    for variant in dict.fromkeys(r["variant"] for r in runs):
        finals = [r["curve"][-1][1] for r in runs if r["variant"] == variant]
        lines.append(
            f"\n{variant}: final success after {env_steps} steps, mean over {len(finals)} seeds: "
            f"{statistics.mean(finals):.2f} (min {min(finals):.2f})"
        )
    return "\n".join(lines)


TASK = VariantTask(
    name="her_goal",
    conf="alf/examples/sac_her_goal_conf.py",
    variants={"her": ["use_her=True"], "no_her": ["use_her=False"]},
    measure=lambda metrics: (metrics.average_env_info()["is_success"],),
    summary=summary,
    env_steps=20_000,
    eval_every=2_500,
    eval_episodes=100,
    default_variants=("her", "no_her"),
)

if __name__ == "__main__":
    main(TASK, __doc__)
