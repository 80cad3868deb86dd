"""PPO on HalfCheetah-v5 with the zoo's normalization: alf vs Stable-Baselines3.

    python -m benchmarks.ppo_halfcheetah_zoo [--seeds 0 1 2 3 4] [--turn_s S] [--report_only]
    python -m benchmarks.ppo_halfcheetah_zoo --only alf --conf_param "reward_norm='reward'" \\
        --results_json benchmarks/results/ppo_halfcheetah_zoo_reward_std.json
    python -m benchmarks.ppo_halfcheetah_zoo --seeds 5 6 7 --no_write \\
        --results_json benchmarks/results/ppo_halfcheetah_zoo_seeds5_7.json   (and 8 9)
    python -m benchmarks.ppo_halfcheetah_zoo --summary

``benchmarks.ppo_halfcheetah`` with rl-baselines3-zoo's ``normalize: true`` on both sides: SB3
trains in ``VecNormalize`` (its defaults, gamma 0.98) and evaluates with the statistics frozen
and raw rewards; alf trains ``benchmarks/confs/ppo_halfcheetah_zoo_conf.py`` (its docstring says
how its normalizers follow VecNormalize). Both evaluate 10 deterministic episodes every 20,480 env
steps and at the end. ``--summary`` compares the final and best eval returns of the ``GROUPS``
(per seed, medians, Mann-Whitney U) from their result files.
"""

import dataclasses
import os
import sys

from benchmarks.harness import report
from benchmarks.harness.vs_sb3 import main
from benchmarks.ppo_halfcheetah import TASK as PLAIN

TASK = dataclasses.replace(
    PLAIN,
    name="ppo_halfcheetah_zoo",
    conf="benchmarks/confs/ppo_halfcheetah_zoo_conf.py",
    seeds=(0, 1, 2, 3, 4),
    normalize=True,
)

#: the zoo-normalization runs: seeds 0-4 in the first file; 5-9 later, in two processes
#: (each alf then SB3 per seed)
ZOO_RUNS = [
    "ppo_halfcheetah_zoo.json",
    "ppo_halfcheetah_zoo_seeds5_7.json",
    "ppo_halfcheetah_zoo_seeds8_9.json",
]
#: label -> (framework, result files): the runs ``--summary`` compares
GROUPS = {
    "alf (rewards / std of the discounted return, as VecNormalize)": ("alf", ZOO_RUNS),
    "SB3 (VecNormalize)": ("sb3", ZOO_RUNS),
    "alf (rewards / std of the rewards)": ("alf", ["ppo_halfcheetah_zoo_reward_std.json"]),
}


def group_runs(framework: str, files: list[str]) -> list[dict]:
    """The runs of ``framework`` in the result files that exist, by seed."""
    runs = []
    for name in files:
        record = report.read_json(os.path.join(report.RESULTS_DIR, name))
        runs += [r for r in record.get("runs", []) if r["framework"] == framework]
    return sorted(runs, key=lambda r: r["seed"])


def mann_whitney(a: list[float], b: list[float]) -> str:
    """Two-sided Mann-Whitney U of ``a`` against ``b`` (U of ``a``; exact p without ties)."""
    from scipy.stats import mannwhitneyu

    if not a or not b:
        return "-"
    test = mannwhitneyu(a, b, alternative="two-sided")
    return f"U = {test.statistic:g}, p = {test.pvalue:.3f} (n = {len(a)}, {len(b)})"


def summary(groups: dict = GROUPS) -> str:
    """Per-seed final / best eval returns of each group, their medians, and the rank tests of
    each two groups."""
    runs = {label: group_runs(*spec) for label, spec in groups.items()}
    fmt = report.fmt
    rows = [
        [label, r["seed"], fmt(r["final_return"]), fmt(r["best_return"])]
        for label, group in runs.items()
        for r in group
    ]
    medians = [
        [
            label,
            len(group),
            fmt(report.median(r["final_return"] for r in group)),
            fmt(report.median(r["best_return"] for r in group)),
        ]
        for label, group in runs.items()
    ]
    tests = []
    labels = list(runs)
    for i, first in enumerate(labels):
        for second in labels[i + 1 :]:
            for key in ("final_return", "best_return"):
                a, b = ([r[key] for r in runs[label]] for label in (first, second))
                tests.append([first, second, key.replace("_", " "), mann_whitney(a, b)])
    return f"""Per seed (eval AverageReturn, 10 deterministic episodes):

{report.table(["runs", "seed", "final", "best"], rows)}

Medians:

{report.table(["runs", "seeds", "final (median)", "best (median)"], medians)}

Two-sided Mann-Whitney U of each two groups (U counts the pairs where the first is larger):

{report.table(["first", "second", "return", "test"], tests)}"""


if __name__ == "__main__":
    if "--summary" in sys.argv:
        text = summary()
        report.write_block("ppo_halfcheetah_zoo_summary", text)
        print(text)
    else:
        main(TASK, __doc__)
