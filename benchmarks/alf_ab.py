"""Steady-state speed of this checkout's alf against an older revision, in one run.

    taskset -c 1 python -m benchmarks.alf_ab --base 293c6c0 --task ppo_cartpole [--repeats 30]
    python -m benchmarks.alf_ab --base HEAD~1 --task sac_pendulum --quick

``alf/`` of ``--base`` and of this working tree (uncommitted changes included), copied to paths
of the same length, are timed on the same example conf (``harness/steady.py``); in each repeat
both run at once taking turns of ``--turn_s`` s on one core, the seed shared, who starts
alternating. Reported: CPU time per env step and speed ratios current / base (> 1: current is
faster). Records go to ``results/alf_ab.json`` (key: the task, or ``--record``).
"""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import tempfile
from functools import partial

from benchmarks.harness import cli, report, runner, steady

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
    summary["geomean_speed_ratio"] = math.exp(sum(map(math.log, paired)) / len(paired))
    return dict(summary, fastest_speed_ratio=min(base.values()) / min(current.values()))


def repeat(checkouts: dict, conf: str, warmup: int, iterations: int, index: int, args) -> list:
    """Repeat ``index``: both checkouts at once, taking turns (who starts alternates)."""
    names = CHECKOUTS[:: 1 if index % 2 == 0 else -1]
    jobs = [steady.worker(checkouts[n], conf, index, warmup, iterations) for n in names]
    logs = [os.path.join(args.work_dir, f"{n}_{index}.log") for n in names]
    runner.run_jobs([cmd for cmd, _ in jobs], logs, args.turn_s)
    runs = []
    for (_, root_dir), name, log in zip(jobs, names, logs):
        shutil.rmtree(root_dir, ignore_errors=True)
        with open(log) as f:
            runs.append(dict(steady.result(f.read()), checkout=name, repeat=index))
    return runs


def markdown(record: dict) -> str:
    """The record's block: one row of medians and speed ratios."""
    s, r = summarize(record["runs"]), record["runs"][0]
    header = ["task", "timed per run", "median CPU µs/step base", "current"]
    header += ["paired ratio, median (95% interval)", "geometric mean", "fastest runs"]
    row = [record["task"], f"{r['iterations']:,} iterations, {r['env_steps']:,} env steps"]
    row += [report.fmt(v) for v in s["cpu_us_per_step"].values()]
    low, high = s["paired_ci95"]
    row += [f"**{s['paired_speed_ratio']:.3f}** ({low:.3f}–{high:.3f})"]
    row += [f"{s['geomean_speed_ratio']:.3f}", f"{s['fastest_speed_ratio']:.3f}"]
    repeats = len({r["repeat"] for r in record["runs"]})
    head = f"{report.measured(record)} (base {record['base']}, {repeats} repeats)"
    return f"{head}\n\n{report.table(header, [row])}"


def main() -> None:
    parser = cli.parser(__doc__, "alf_ab", seeds=None)
    parser.add_argument("--base", required=True, help="git revision to compare against")
    parser.add_argument("--task", choices=sorted(TASKS), default="ppo_cartpole")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, help="timed train_iter calls per run")
    parser.add_argument("--turn_s", type=float, default=0.5, help="0: one after the other")
    args = parser.parse_args()
    verify = ["git", "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}"]
    if subprocess.run(verify, cwd=runner.REPO_DIR, capture_output=True).returncode != 0:
        parser.error(f"--base: no such git revision: {args.base}")
    conf, warmup, iterations = TASKS[args.task]
    iterations = args.iterations or (2 if args.quick else iterations)
    args.repeats = 2 if args.quick else args.repeats
    with tempfile.TemporaryDirectory(prefix="alf_ab_") as tmp:
        current = os.path.join(tmp, "b")
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(f"{runner.REPO_DIR}/alf", f"{current}/alf", ignore=ignore)
        checkouts = dict(base=export(args.base, os.path.join(tmp, "a")), current=current)
        job = partial(repeat, checkouts, conf, warmup, iterations)
        jobs = [partial(job, i, args) for i in range(args.repeats)]
        cli.run(args, "alf_ab", markdown, jobs, args.task, base=args.base, task=args.task)


if __name__ == "__main__":
    main()
