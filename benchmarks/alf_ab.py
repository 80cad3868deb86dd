"""Steady-state speed of this checkout's alf against an older revision, in one run.

    python -m benchmarks.alf_ab --base 293c6c0 --task ppo_cartpole [--repeats 5]

Exports ``alf/`` of ``--base`` (``git archive``) and of this checkout's working tree (as it
is, uncommitted changes included) into two directories of a temporary one whose paths have the
same length (the environment's size can shift memory layout and speed by a few percent), then
times the same example conf on both, alternating in counterbalanced order (base, current,
current, base, ...: in a busy machine's runs the second of a pair was slower more often than
not, so each checkout goes first in half the pairs). Each run is a fresh process with
``PYTHONPATH`` and ``cwd`` at its checkout, one torch thread, building the conf's
algorithm through ``PolicyTrainer`` and timing ``train_iter`` after a warm-up
(``benchmarks/harness/steady.py``; each checkout runs its own copy of the conf).
Reports per run the process CPU time per env step (SAC: one update per env step), the
medians, and the speed ratio current / base = base CPU time per step / current CPU time
per step (> 1: the current checkout is faster), also as the median of the per-repeat
paired ratios and as the ratio of the fastest runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile

from benchmarks.harness import report, runner, steady

#: task -> (conf, warm-up iterations, timed iterations, conf params)
TASKS = {
    "ppo_cartpole": ("alf/examples/ppo_cart_pole_conf.py", 2, 100, []),
    "sac_pendulum": ("alf/examples/sac_pendulum_conf.py", 300, 1000, []),
}
CHECKOUTS = ("base", "current")


def export(rev: str, into: str) -> str:
    """``alf/`` of git revision ``rev`` under the new directory ``into``."""
    os.makedirs(into)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "alf"],
        cwd=runner.REPO_DIR,
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    return into


def summarize(runs: list[dict]) -> dict:
    """Median CPU µs per env step of each checkout and the current / base speed ratios: of the
    medians, median of the per-repeat ratios, and of the fastest runs (other jobs on the
    machine only ever add time, so the fastest run is the least disturbed).

    Args:
        runs: ``{checkout, repeat, cpu_s, wall_s, env_steps}`` per run.
    """
    per_step = {c: {} for c in CHECKOUTS}
    for r in runs:
        per_step[r["checkout"]][r["repeat"]] = 1e6 * r["cpu_s"] / r["env_steps"]
    medians = {c: report.median(per_step[c].values()) for c in CHECKOUTS}
    paired = [
        per_step["base"][i] / per_step["current"][i]
        for i in per_step["base"]
        if i in per_step["current"]
    ]
    fastest = {c: min(per_step[c].values()) for c in CHECKOUTS}
    return dict(
        cpu_us_per_step=medians,
        speed_ratio=report.ratio(medians["base"], medians["current"]),
        paired_speed_ratio=report.median(paired),
        fastest_speed_ratio=fastest["base"] / fastest["current"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare against")
    parser.add_argument("--task", choices=sorted(TASKS), default="ppo_cartpole")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, help="timed train_iter calls per run")
    parser.add_argument("--out", help="also write the runs and summary to this JSON file")
    args = parser.parse_args()
    conf, warmup, iterations, params = TASKS[args.task]
    iterations = args.iterations or iterations
    runs = []
    with tempfile.TemporaryDirectory(prefix="alf_ab_") as tmp:
        current = os.path.join(tmp, "b")
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(
            os.path.join(runner.REPO_DIR, "alf"), os.path.join(current, "alf"), ignore=ignore
        )
        checkouts = dict(base=export(args.base, os.path.join(tmp, "a")), current=current)
        for repeat in range(args.repeats):
            for name in CHECKOUTS[:: 1 if repeat % 2 == 0 else -1]:  # ABBA: order effects cancel
                result = steady.measure(checkouts[name], conf, repeat, warmup, iterations, params)
                runs.append(dict(result, checkout=name, repeat=repeat, load=runner.load_average()))
                cpu_us = 1e6 * result["cpu_s"] / result["env_steps"]
                wall_us = 1e6 * result["wall_s"] / result["env_steps"]
                print(f"{name:7s} repeat {repeat}: CPU {cpu_us:8.1f} µs/step, wall {wall_us:8.1f}")
    summary = summarize(runs)
    med = summary["cpu_us_per_step"]
    print(
        f"median CPU µs per env step: base ({args.base}) {med['base']:.1f}, current "
        f"{med['current']:.1f}; speed current / base {summary['speed_ratio']:.3f} "
        f"(median of paired ratios {summary['paired_speed_ratio']:.3f}, of the fastest runs "
        f"{summary['fastest_speed_ratio']:.3f})"
    )
    if args.out:
        record = dict(base=args.base, task=args.task, machine=runner.machine_info())
        report.write_json(args.out, dict(record, runs=runs, summary=summary))


if __name__ == "__main__":
    main()
