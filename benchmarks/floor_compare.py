"""alf against a hand-written floor, phase by phase: rollout, update and bookkeeping.

    python -m benchmarks.floor_compare --task ppo_cart_pole [--rounds 3] [--env_steps N]
    python -m benchmarks.floor_compare --task sac_pendulum [--seeds 0 1] [--report_only]
    python -m benchmarks.floor_compare --task ppo_cart_pole --with_sb3 --results_json F.json

Each round trains alf (``alf_split.py``: ``PolicyTrainer`` on the task's conf, its phases timed
from outside) and the floor (``floor_ppo.py`` or ``floor_sac.py``: the same algorithm and
hyperparameters by hand) with the same budget, seed and warm-up, each in a fresh process with
``--num_threads`` torch threads (1), one after the other; who goes first alternates from round to
round, the seed cycles through ``--seeds``. Neither evaluates. Reported: each run's time per env
step and its split, the medians over the rounds and the alf / floor ratios per phase (the
project's target: alf's time per env step at most 1.25 times the floor's). Records go to
``results/floor_<task>.json``, the tables to the ``floor_<task>`` block of RESULTS.md.

``--with_sb3`` adds Stable-Baselines3 to each round (``sb3_split.py``: the model of the task's
alf-vs-SB3 benchmark, split the same way from outside), the three in turn, so that the speed
the floor itself reaches against SB3 is measured in the same rounds. ``--matmul_precision``
sets ``torch.set_float32_matmul_precision`` in all of them (alf: its ``TrainerConfig`` field).
"""

from __future__ import annotations

import os
from functools import partial

from benchmarks import alf_split
from benchmarks.harness import cli, phases, report, runner

FRAMEWORKS = ("alf", "floor")
TARGET = 1.25


def round_runs(task: str, round_index: int, seed: int, args) -> list[dict]:
    """Round ``round_index``: alf and the floor in fresh processes (the order alternates)."""
    spec, floor = alf_split.task_spec(task)
    common = dict(seed=seed, env_steps=args.env_steps or spec.env_steps)
    common.update(num_threads=args.num_threads, warmup_steps=args.warmup_steps)
    common.update(matmul_precision=args.matmul_precision)
    if common["warmup_steps"] is None:
        common["warmup_steps"] = floor.WARMUP_STEPS
    calls = dict(
        alf=("benchmarks.alf_split:run", dict(common, task=task, evaluate=False)),
        floor=(f"{floor.__name__}:run", dict(common, eval_episodes=0)),
        sb3=("benchmarks.sb3_split:run", dict(common, task=task)),
    )
    frameworks = FRAMEWORKS + ("sb3",) * args.with_sb3
    shift = round_index % len(frameworks)  # each framework takes each place in turn
    runs = []
    for framework in frameworks[shift:] + frameworks[:shift]:
        function, kwargs = calls[framework]
        out = os.path.join(args.work_dir, f"{task}_{framework}_round{round_index}.json")
        info = dict(round=round_index, start=runner.now(), load_start=runner.load_average())
        record = runner.call(function, out, **kwargs)
        record.pop("curve", None)
        info.update(end=runner.now(), load_end=runner.load_average())
        runs.append(dict(record, **info))
    return runs


def _phase_cell(record: dict, phase: str) -> str:
    share = record[f"{phase}_share"]
    return f"{report.fmt(record[f'{phase}_us_per_step'])} ({100 * (share or 0):.0f}%)"


ROWS = [("time per env step", "us_per_step")] + [(p, f"{p}_us_per_step") for p in phases.PHASES]


def markdown(runs: list[dict]) -> str:
    """Per-run table, medians with alf / floor ratios, and the per-round paired ratio."""
    fmt = report.fmt
    header = ["round", "framework", "seed", "timed env steps", "env steps/s", "µs / env step"]
    header += [f"{p} µs" for p in phases.PHASES] + ["final train return", "load (1 min)"]
    rows = []
    for r in runs:
        row = [r["round"], r["framework"], r["seed"], fmt(r["timed_env_steps"])]
        row += [fmt(r["steps_per_s"], 0, whole_from=1), fmt(r["us_per_step"])]
        row += [_phase_cell(r, p) for p in phases.PHASES]
        row += [fmt(r["final_train_return"]), f"{r['load_start'][0]:.2f} → {r['load_end'][0]:.2f}"]
        rows.append(row)
    by_fw = {fw: [r for r in runs if r["framework"] == fw] for fw in FRAMEWORKS + ("sb3",)}
    with_sb3 = bool(by_fw["sb3"])
    medians = []
    for label, key in ROWS:
        alf, floor, sb3 = (report.median(r[key] for r in by_fw[fw]) for fw in by_fw)
        row = [label, fmt(alf), fmt(floor), fmt(report.ratio(alf, floor), 2)]
        if with_sb3:
            row += [fmt(sb3), fmt(report.ratio(sb3, floor), 2), fmt(report.ratio(sb3, alf), 2)]
        medians.append(row)
    columns = ["median", "alf", "floor", "alf / floor"]
    columns += ["SB3", "SB3 / floor", "SB3 / alf"] * with_sb3
    sb3_note = " (of times: SB3 / floor is the floor's speed-up over SB3)" * with_sb3
    pairs = [
        report.ratio(a["us_per_step"], f["us_per_step"])
        for a in by_fw["alf"]
        for f in by_fw["floor"]
        if a["round"] == f["round"]
    ]
    paired = report.median(pairs)
    verdict = "-" if paired is None else ("within" if paired <= TARGET else "over")
    text = f"""Per run (µs per timed env step; each phase's share in parentheses):

{report.table(header, rows)}

Medians (µs per env step) and their ratios{sb3_note}:

{report.table(columns, medians)}

Median of the per-round paired ratios alf / floor of the time per env step: \
{fmt(paired, 2)} over {len(pairs)} rounds ({verdict} the target of {TARGET})."""
    if with_sb3:
        text += f""" Paired SB3 / floor: \
{fmt(_paired(by_fw, "sb3", "floor"), 2)}; SB3 / alf: {fmt(_paired(by_fw, "sb3", "alf"), 2)}."""
    return text


def _paired(by_fw: dict, a: str, b: str) -> float | None:
    """Median over the rounds of ``a``'s time per env step / ``b``'s."""
    return report.median(
        report.ratio(x["us_per_step"], y["us_per_step"])
        for x in by_fw[a]
        for y in by_fw[b]
        if x["round"] == y["round"]
    )


def main() -> None:
    parser = cli.parser(__doc__, "floor_compare", seeds=(0,))
    parser.add_argument("--task", choices=sorted(alf_split.TASKS), default="ppo_cart_pole")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env_steps", type=int, help="per run; default: the task's budget")
    parser.add_argument("--warmup_steps", type=int, help="not timed; default: the floor's")
    parser.add_argument("--num_threads", type=int, default=1)
    parser.add_argument("--with_sb3", action="store_true", help="SB3 in each round too")
    parser.add_argument("--matmul_precision", default="highest", help=alf_split.PRECISION_HELP)
    args = parser.parse_args()
    jobs = [
        partial(round_runs, args.task, i, args.seeds[i % len(args.seeds)], args)
        for i in range(args.rounds)
    ]
    header = dict(task=args.task, rounds=args.rounds, env_steps=args.env_steps)
    header.update(warmup_steps=args.warmup_steps, num_threads=args.num_threads)
    header.update(with_sb3=args.with_sb3, matmul_precision=args.matmul_precision)
    cli.run(args, f"floor_{args.task}", markdown, jobs, **header)


if __name__ == "__main__":
    main()
