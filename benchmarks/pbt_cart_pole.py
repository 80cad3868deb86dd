"""PBT on CartPole: a population of 4 (one member started at lr 1e-6) against single runs.

    python -m benchmarks.pbt_cart_pole [--seeds 1] [--env_steps 50000] [--interval 5000]

Three jobs per seed ``S``, all of ``alf/examples/pbt_ppo_cart_pole_conf.py`` without
evaluation, the same env steps per member:

- ``population``: ``alf.bin.pbt_launch`` with 4 members and ``--max_parallel 2`` (so the
  members run in turns of one interval each), member ``K`` with seed ``S + K`` and member 3
  at ``PBTConfig.initial_values={"Adam.lr": 1e-6}``;
- ``single_default``: one run at the conf's values (seed ``S``, as member 0);
- ``single_bad``: one run at lr 1e-6 (seed ``S + 3``, as member 3).

A single run is a population of one (``PBTConfig.num_policies=1``: no peer, so it never
changes anything and trains exactly as without PBT, ``tests/pbt/test_member.py``), so
every curve is the same metric: the objective (training ``AverageReturn`` over the last 10
episodes) each member published at each check. Recorded: those curves, the lineage (every
decision other than ``continue``, values old -> new), the time of each check (the
members' ``check at N env steps took Xs`` log lines) and wall times.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from alf.pbt.workspace import Workspace
from benchmarks.harness import cli, report

NAME = "pbt_cart_pole"
CONF = os.path.join(report.BENCH_DIR, "..", "alf", "examples", "pbt_ppo_cart_pole_conf.py")
NUM_POLICIES = 4
BAD_MEMBER = 3
BAD_LR = 1e-6
_CHECK_RE = re.compile(r"PBT member (\d+): check at (\d+) env steps took ([0-9.]+)s")


def _params(args, seed: int) -> list[str]:
    return [
        f"TrainerConfig.num_env_steps={args.env_steps}",
        f"TrainerConfig.random_seed={seed}",
        "TrainerConfig.evaluate=False",
        f"PBTConfig.interval_steps={args.interval}",
        f"PBTConfig.start_after={args.interval}",
        f"PBTConfig.initial_delay={2 * args.interval}",
    ]


def _run(command: list[str], log_path: str | None = None) -> float:
    """Run ``command`` (a module of this python) to the end; its wall seconds."""
    start = time.monotonic()
    out = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
    try:
        done = subprocess.run([sys.executable, "-m", *command], stdout=out, stderr=out)
    finally:
        if log_path:
            out.close()
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} ... exited with {done.returncode}")
    return time.monotonic() - start


def _curves(workspace: str) -> dict:
    """``{member: [[env_steps, objective, lr], ...]}`` from each member's history."""
    ws = Workspace(workspace)
    return {
        str(idx): [
            [e.env_steps, e.objective, e.hyperparameters["Adam.lr"]] for e in ws.history(idx)
        ]
        for idx in ws.members()
    }


def _checks_in(path: str) -> list[list]:
    """``[member, env_steps, seconds]`` of every check logged in the file ``path``."""
    found = []
    with open(path, errors="replace") as f:
        for line in f:
            match = _CHECK_RE.search(line)
            if match:
                found.append([int(match[1]), int(match[2]), float(match[3])])
    return found


def _lineage(workspace: str) -> list[dict]:
    keep = ("member", "env_steps", "kind", "source", "objective", "source_objective", "changes")
    records = Workspace(workspace).read_lineage()
    return [{k: r.get(k) for k in keep} for r in records if r["kind"] != "continue"]


def population(args, seed: int) -> list[dict]:
    workspace = os.path.join(args.work_dir, f"population_s{seed}")
    shutil.rmtree(workspace, ignore_errors=True)
    command = ["alf.bin.pbt_launch", "--conf", CONF, "--workspace", workspace]
    command += ["--num_policies", str(NUM_POLICIES), "--max_parallel", "2", "--nostore_snapshot"]
    for param in _params(args, seed):
        command += ["--conf_param", param]
    lr = json.dumps({"Adam.lr": BAD_LR})
    command += ["--member_conf_param", f"{BAD_MEMBER}:PBTConfig.initial_values={lr}"]
    wall = _run(command)
    logs = os.path.join(workspace, "logs")
    checks = []
    for idx in range(NUM_POLICIES):
        checks += [[idx, *c[1:]] for c in _checks_in(os.path.join(logs, f"{idx:03d}.log"))]
    return [
        dict(
            job="population",
            seed=seed,
            wall_s=wall,
            curves=_curves(workspace),
            lineage=_lineage(workspace),
            checks=checks,
        )
    ]


def single(args, seed: int, job: str) -> list[dict]:
    workspace = os.path.join(args.work_dir, f"{job}_s{seed}")
    shutil.rmtree(workspace, ignore_errors=True)
    run_seed = seed if job == "single_default" else seed + BAD_MEMBER
    params = _params(args, run_seed) + [
        f"PBTConfig.workspace={workspace!r}",
        "PBTConfig.num_policies=1",
        "PBTConfig.policy_idx=0",
    ]
    if job == "single_bad":
        params.append(f"PBTConfig.initial_values={{'Adam.lr': {BAD_LR}}}")
    root = os.path.join(workspace, "000")
    command = ["alf.bin.train", "--conf", CONF, "--root_dir", root, "--nostore_snapshot"]
    for param in params:
        command += ["--conf_param", param]
    os.makedirs(workspace, exist_ok=True)
    log = os.path.join(workspace, "train.log")
    wall = _run(command, log)
    return [
        dict(
            job=job,
            seed=seed,
            run_seed=run_seed,
            wall_s=wall,
            curves=_curves(workspace),
            checks=_checks_in(log),
        )
    ]


def _g(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def markdown(runs: list[dict]) -> str:
    """The tables of the runs: objective curves, lineage, check times, wall times."""
    parts = []
    for seed in sorted({r["seed"] for r in runs}):
        by_job = {r["job"]: r for r in runs if r["seed"] == seed}
        parts.append(_curve_table(seed, by_job))
        pop = by_job.get("population")
        if pop:
            parts.append(_lineage_table(pop))
            parts.append(_check_table(by_job))
    return "\n\n".join(parts)


def _curve_table(seed: int, by_job: dict) -> str:
    pop = by_job.get("population", {}).get("curves", {})
    singles = {job: by_job[job]["curves"].get("0", []) for job in by_job if job != "population"}
    steps = sorted({p[0] for curve in pop.values() for p in curve})
    steps = steps or sorted({p[0] for curve in singles.values() for p in curve})
    rows = []
    for step in steps:
        values = [p[1] for curve in pop.values() for p in curve if p[0] == step]
        bad = [p for p in pop.get(str(BAD_MEMBER), []) if p[0] == step]
        row = [report.fmt(step)]
        row += [report.fmt(max(values), 1) if values else "-"]
        row += [report.fmt(statistics.median(values), 1) if values else "-"]
        row += [report.fmt(bad[0][1], 1) if bad else "-", _g(bad[0][2]) if bad else "-"]
        for job in ("single_default", "single_bad"):
            point = [p for p in singles.get(job, []) if p[0] == step]
            row.append(report.fmt(point[0][1], 1) if point else "-")
        rows.append(row)
    header = [
        "env steps / member",
        "population best",
        "population median",
        f"member {BAD_MEMBER}",
        f"member {BAD_MEMBER} lr",
        "single, default",
        f"single, lr {BAD_LR:g}",
    ]
    return f"Seed {seed}: objective (training AverageReturn) at each check\n\n" + report.table(
        header, rows
    )


def _lineage_table(pop: dict) -> str:
    rows = []
    for r in pop["lineage"]:
        changes = ", ".join(
            f"{name.split('.')[-1]} {_g(old)} → {_g(new)}"
            for name, (old, new) in r["changes"].items()
        )
        source = "-" if r["source"] is None else str(r["source"])
        rows.append(
            [
                report.fmt(r["env_steps"]),
                str(r["member"]),
                r["kind"],
                source,
                report.fmt(r["objective"], 1),
                report.fmt(r.get("source_objective"), 1),
                changes,
            ]
        )
    header = ["env steps", "member", "decision", "copied", "objective", "source's", "values"]
    return "Lineage (every decision but `continue`)\n\n" + report.table(header, rows)


def _check_table(by_job: dict) -> str:
    rows = []
    for job, run in by_job.items():
        seconds = [c[2] for c in run["checks"]]
        if not seconds:
            continue
        rows.append(
            [
                job,
                str(len(seconds)),
                f"{1000 * statistics.median(seconds):.0f}",
                f"{1000 * max(seconds):.0f}",
                report.fmt(run["wall_s"], 0),
            ]
        )
    header = ["run", "checks", "check ms (median)", "check ms (max)", "wall s"]
    return "PBT checks (publish, read the peers, decide, copy) and wall time\n\n" + report.table(
        header, rows
    )


def main() -> None:
    parser = cli.parser(__doc__, NAME, seeds=(1,))
    parser.add_argument("--env_steps", type=int, default=50_000)
    parser.add_argument("--interval", type=int, default=5_000)
    args = parser.parse_args()
    jobs = []
    for seed in args.seeds:
        jobs += [
            lambda seed=seed: population(args, seed),
            lambda seed=seed: single(args, seed, "single_default"),
            lambda seed=seed: single(args, seed, "single_bad"),
        ]
    cli.run(
        args,
        NAME,
        markdown,
        jobs,
        env_steps=args.env_steps,
        interval=args.interval,
        conf="alf/examples/pbt_ppo_cart_pole_conf.py",
    )


if __name__ == "__main__":
    main()
