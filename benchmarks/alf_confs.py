"""alf confs against each other over seeds: e.g. PPO alone, PPO + RND and PPO + ICM on
DeepSea, or PPG against PPO.

    python -m benchmarks.alf_confs --record deep_sea --seeds 0 1 2 \\
        --confs alf/examples/ppo_deep_sea_conf.py alf/examples/ppo_rnd_deep_sea_conf.py \\
        [--param Name.arg=value ...] [--turn_s 5] \\
        [--tag Metrics_vs_EnvironmentSteps/AverageEnvInfo/success]

For each seed the confs' runs start together and take turns on one core (``turn_s``), so that
all of them meet the same machine; the seeds follow one another. Per run: the final
evaluation return; the final value of each ``--tag`` of the training summaries (a
``Metrics_vs_EnvironmentSteps/...`` curve) and the first env step at which it was above 0;
env steps, CPU seconds and CPU milliseconds per env step. The record goes to
``results/alf_confs.json`` and its table (per conf: each seed's numbers, the median CPU cost
and its ratio to the first conf's) to the ``alf_confs:<record>`` block of RESULTS.md.
"""

from __future__ import annotations

import os
import statistics

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from benchmarks.harness import cli, report, runner


def _scalars(path: str, tag: str) -> list[tuple[int, float]]:
    acc = EventAccumulator(path, size_guidance={"scalars": 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


def _summary(root_dir: str, turns, tags: list[str]) -> dict:
    env_steps = _scalars(os.path.join(root_dir, "train"), "Metrics/EnvironmentSteps")
    steps = int(env_steps[-1][1]) if env_steps else 0
    evals = _scalars(os.path.join(root_dir, "eval"), "Metrics/AverageReturn")
    result = dict(env_steps=steps, cpu_s=turns.cpu_s, wall_s=turns.wall_s)
    result.update(cpu_ms_per_env_step=1000 * turns.cpu_s / max(steps, 1))
    result.update(final_eval_return=evals[-1][1] if evals else None)
    for tag in tags:
        curve = _scalars(os.path.join(root_dir, "train"), tag)
        first = next((step for step, value in curve if value > 0), None)
        result[tag] = dict(final=curve[-1][1] if curve else None, first_above_0=first)
    return result


def _seed_job(args, seed: int):
    def job() -> list[dict]:
        dirs = [os.path.join(args.work_dir, f"{i}_s{seed}") for i in range(len(args.confs))]
        cmds = [runner.alf_train_cmd(c, d, seed, args.param) for c, d in zip(args.confs, dirs)]
        turns = runner.run_jobs(cmds, [d + ".log" for d in dirs], args.turn_s)
        return [
            dict(conf=conf, seed=seed, **_summary(root_dir, turn, args.tag))
            for conf, root_dir, turn in zip(args.confs, dirs, turns)
        ]

    return job


def markdown(record: dict) -> str:
    """Per conf: each seed's final evaluation return and tags, and the median CPU cost per
    env step with its ratio to the first conf's."""
    runs, tags = record["runs"], record["tags"]
    confs = list(dict.fromkeys(r["conf"] for r in runs))
    cost = {
        c: statistics.median(r["cpu_ms_per_env_step"] for r in runs if r["conf"] == c)
        for c in confs
    }
    header = ["conf", "seeds", "final eval return per seed"]
    header += [f"{t.rsplit('/', 1)[-1]}: final (first > 0 at env step)" for t in tags]
    header += ["median CPU ms / env step", f"ratio to {os.path.basename(confs[0])}"]
    rows = []
    for conf in confs:
        mine = [r for r in runs if r["conf"] == conf]
        row = [f"`{os.path.basename(conf)}`", ", ".join(str(r["seed"]) for r in mine)]
        row.append(" / ".join(report.fmt(r["final_eval_return"], 3) for r in mine))
        for tag in tags:
            cells = [(report.fmt(r[tag]["final"], 2), r[tag]["first_above_0"]) for r in mine]
            row.append(" / ".join(f"{v} ({'never' if s is None else f'{s:,}'})" for v, s in cells))
        row += [f"{cost[conf]:.3f}", f"{cost[conf] / cost[confs[0]]:.2f}"]
        rows.append(row)
    steps = sorted({r["env_steps"] for r in runs})
    return f"{report.measured(record)}; env steps {steps}\n\n{report.table(header, rows)}"


def main() -> None:
    parser = cli.parser(__doc__, "alf_confs")
    parser.add_argument("--confs", nargs="+", required=True, help="paths from the checkout")
    parser.add_argument("--param", action="append", default=[], help="a --conf_param for all")
    parser.add_argument("--tag", action="append", default=[], help="a training summary curve")
    parser.add_argument("--turn_s", type=float, default=5.0)
    args = parser.parse_args()
    if not args.record:
        parser.error("--record: name the record (e.g. deep_sea)")
    jobs = [_seed_job(args, seed) for seed in args.seeds]
    cli.run(args, "alf_confs", markdown, jobs, args.record, tags=args.tag, params=args.param)


if __name__ == "__main__":
    main()
