"""alf confs against each other over seeds: e.g. PPO alone, PPO + RND and PPO + ICM on
DeepSea, or PPG against PPO.

    python -m benchmarks.alf_confs --name deep_sea --seeds 0,1,2 \\
        --confs alf/examples/ppo_deep_sea_conf.py,alf/examples/ppo_rnd_deep_sea_conf.py \\
        [--param Name.arg=value ...] [--turn_s 5] \
        [--tag Metrics_vs_EnvironmentSteps/AverageEnvInfo/success]

For each seed the confs' runs start together and take turns on one core (``turn_s``), so that
all of them meet the same machine; the seeds follow one another. Per run: the final
evaluation return; the final value of each ``--tag`` of the training summaries (a
``Metrics_vs_EnvironmentSteps/...`` curve) and the first env step at which it was above 0;
env steps, CPU seconds and CPU milliseconds per env step. Results go to
``benchmarks/results/<name>.json`` with the machine's state; the table (the CPU cost's median
and its ratio to the first conf's) is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from benchmarks.harness import report, runner

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _scalars(path: str, tag: str) -> list[tuple[int, float]]:
    acc = EventAccumulator(path, size_guidance={"scalars": 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


def _summary(root_dir: str, turns, tags: list[str]) -> dict:
    env_steps = _scalars(os.path.join(root_dir, "train"), "Metrics/EnvironmentSteps")
    steps = int(env_steps[-1][1]) if env_steps else 0
    evals = _scalars(os.path.join(root_dir, "eval"), "Metrics/AverageReturn")
    result = dict(env_steps=steps, cpu_s=round(turns.cpu_s, 1), wall_s=round(turns.wall_s, 1))
    result.update(cpu_ms_per_env_step=round(1000 * turns.cpu_s / max(steps, 1), 4))
    result.update(final_eval_return=evals[-1][1] if evals else None)
    for tag in tags:
        curve = _scalars(os.path.join(root_dir, "train"), tag)
        result[tag] = dict(
            final=curve[-1][1] if curve else None,
            first_above_0=next((step for step, value in curve if value > 0), None),
        )
    return result


def run(confs, seeds, params, tags, turn_s: float) -> list[dict]:
    records = []
    with tempfile.TemporaryDirectory(prefix="alf_confs_") as tmp:
        for seed in seeds:
            dirs = [os.path.join(tmp, f"{i}_s{seed}") for i in range(len(confs))]
            cmds = [runner.alf_train_cmd(c, d, seed, params) for c, d in zip(confs, dirs)]
            logs = [d + ".log" for d in dirs]
            turns = runner.run_jobs(cmds, logs, turn_s)
            for conf, root_dir, turn in zip(confs, dirs, turns):
                records.append(dict(conf=conf, seed=seed, **_summary(root_dir, turn, tags)))
                print(records[-1], flush=True)
    return records


def table(records: list[dict], tags: list[str]) -> str:
    confs = list(dict.fromkeys(r["conf"] for r in records))
    cost = {
        c: statistics.median(r["cpu_ms_per_env_step"] for r in records if r["conf"] == c)
        for c in confs
    }
    lines = [
        "| conf | seeds | final eval return | "
        + " | ".join(f"{t} final (first > 0 at)" for t in tags)
        + " | CPU ms / env step (ratio) |"
    ]
    lines.append("|---" * (4 + len(tags)) + "|")
    for conf in confs:
        rows = [r for r in records if r["conf"] == conf]
        evals = " / ".join(f"{r['final_eval_return']}" for r in rows)
        cells = [
            " / ".join(f"{r[t]['final']:.2f} ({r[t]['first_above_0']})" for r in rows) for t in tags
        ]
        ratio = cost[conf] / cost[confs[0]]
        lines.append(
            f"| {os.path.basename(conf)} | {len(rows)} | {evals} | "
            + " | ".join(cells)
            + f" | {cost[conf]:.3f} ({ratio:.2f}x) |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--confs", required=True, type=lambda s: s.split(","))
    parser.add_argument("--seeds", default="0,1,2", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--param", action="append", default=[])
    parser.add_argument("--tag", action="append", default=[])
    parser.add_argument("--turn_s", type=float, default=5.0)
    parser.add_argument("--report_only", action="store_true")
    args = parser.parse_args(argv)
    path = os.path.join(RESULTS, f"{args.name}.json")
    if not args.report_only:
        machine = runner.machine_info()
        records = run(args.confs, args.seeds, args.param, args.tag, args.turn_s)
        command = "python -m benchmarks.alf_confs " + " ".join(argv or sys.argv[1:])
        report.write_json(path, dict(machine=machine, command=command, runs=records))
    print(table(report.read_json(path)["runs"], args.tag))


if __name__ == "__main__":
    main()
