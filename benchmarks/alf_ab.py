"""Steady-state speed of this checkout's alf against an older revision, in one run.

    python -m benchmarks.alf_ab --base 293c6c0 --task ppo_cartpole [--repeats 5] [--turn_s 0.5]

``alf/`` of ``--base`` and of this working tree (uncommitted changes included) are copied to
two paths of the same length (the environment's size can shift speed by a few percent) and
timed on the same example conf (``harness/steady.py``). In each repeat both run at once taking
turns of ``--turn_s`` seconds on one core (``harness/interleave.py``), so a slow spell of the
machine falls on both; who starts alternates. Reported: process CPU time per env step and the
speed ratio current / base (> 1: current is faster), of the medians, as the median of the
per-repeat ratios and of the fastest runs (wall time includes the other's turns). Pin it to
a core: ``taskset -c 1 python -m ...``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile

from benchmarks.harness import report, runner, steady

#: task -> (conf, warm-up iterations, timed iterations)
TASKS = dict(ppo_cartpole=("alf/examples/ppo_cart_pole_conf.py", 2, 100))
TASKS["sac_pendulum"] = ("alf/examples/sac_pendulum_conf.py", 300, 1000)
CHECKOUTS = ("base", "current")


def export(rev: str, into: str) -> str:
    """``alf/`` of git revision ``rev`` under the new directory ``into``."""
    os.makedirs(into)
    git_archive = ["git", "archive", "--format=tar", rev, "alf"]
    archive = subprocess.run(git_archive, cwd=runner.REPO_DIR, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    return into


def summarize(runs: list[dict]) -> dict:
    """Median CPU µs per env step of each checkout and the speed ratios current / base (other
    jobs only ever add time: the fastest run is the least disturbed); for the median of the
    paired ratios, a 95% bootstrap interval (10,000 resamples, seeded)."""
    per_step = {c: {} for c in CHECKOUTS}
    for r in runs:
        per_step[r["checkout"]][r["repeat"]] = 1e6 * r["cpu_s"] / r["env_steps"]
    medians = {c: report.median(per_step[c].values()) for c in CHECKOUTS}
    base, current = (per_step[c] for c in CHECKOUTS)
    paired = [base[i] / current[i] for i in base if i in current]
    summary = dict(cpu_us_per_step=medians, speed_ratio=report.ratio(*medians.values()))
    summary.update(paired_speed_ratio=report.median(paired))
    rng = random.Random(0)
    boot = sorted(report.median(rng.choices(paired, k=len(paired))) for _ in range(10_000))
    summary["paired_ci95"] = [boot[249], boot[9750]]
    return dict(summary, fastest_speed_ratio=min(base.values()) / min(current.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare against")
    parser.add_argument("--task", choices=sorted(TASKS), default="ppo_cartpole")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, help="timed train_iter calls per run")
    parser.add_argument("--turn_s", type=float, default=0.5, help="0: one after the other")
    parser.add_argument("--out", help="also write the runs and summary to this JSON file")
    args = parser.parse_args()
    conf, warmup, iterations = TASKS[args.task]
    iterations = args.iterations or iterations
    runs = []
    with tempfile.TemporaryDirectory(prefix="alf_ab_") as tmp:
        current = os.path.join(tmp, "b")
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(f"{runner.REPO_DIR}/alf", f"{current}/alf", ignore=ignore)
        checkouts = dict(base=export(args.base, os.path.join(tmp, "a")), current=current)
        for repeat in range(args.repeats):
            names = CHECKOUTS[:: 1 if repeat % 2 == 0 else -1]  # who starts alternates
            jobs = [steady.worker(checkouts[n], conf, repeat, warmup, iterations) for n in names]
            logs = [os.path.join(tmp, f"{n}_{repeat}.log") for n in names]
            runner.run_jobs([cmd for cmd, _ in jobs], logs, args.turn_s)
            for _, root_dir in jobs:
                shutil.rmtree(root_dir, ignore_errors=True)
            for name, log in zip(names, logs):
                with open(log) as f:
                    result = steady.result(f.read())
                runs.append(dict(result, checkout=name, repeat=repeat, load=runner.load_average()))
                cpu_us = 1e6 * result["cpu_s"] / result["env_steps"]
                wall_us = 1e6 * result["wall_s"] / result["env_steps"]
                print(f"{name:7s} repeat {repeat}: CPU {cpu_us:8.1f} µs/step, wall {wall_us:8.1f}")
    summary = summarize(runs)
    med = summary["cpu_us_per_step"]
    print(
        f"median CPU µs per env step: base ({args.base}) {med['base']:.1f}, current "
        f"{med['current']:.1f}; speed current / base {summary['speed_ratio']:.3f} "
        f"(median of paired ratios {summary['paired_speed_ratio']:.3f}, 95% interval "
        f"{summary['paired_ci95'][0]:.3f}-{summary['paired_ci95'][1]:.3f}; of the fastest runs "
        f"{summary['fastest_speed_ratio']:.3f})"
    )
    if args.out:
        record = dict(base=args.base, task=args.task, machine=runner.machine_info())
        report.write_json(args.out, dict(record, runs=runs, summary=summary))


if __name__ == "__main__":
    main()
