"""alf against a hand-written floor, phase by phase: rollout, update and bookkeeping.

    python -m benchmarks.floor_compare --task ppo_cart_pole [--rounds 3] [--env_steps N]
    python -m benchmarks.floor_compare --task sac_pendulum --env_steps 5000 --with_sb3 [--quick]

Each round trains alf (``harness/split.py``) and the floor (``floor_ppo.py``, ``floor_sac.py``:
the same algorithm and hyperparameters by hand), and with ``--with_sb3`` SB3, with the same
budget, seed and warm-up, each in a fresh process with ``--num_threads`` torch threads, one
after the other; who goes first changes each round. Reported: medians over the rounds of the
time per env step and of each phase, their ratios, and the median per-round paired ratios.
Records go to ``results/floor_compare.json`` (key: the task, or ``--record``).
"""

from __future__ import annotations

import os
from functools import partial

from benchmarks import floor_ppo, floor_sac
from benchmarks.harness import cli, phases, report, runner

FLOORS = {"ppo_cart_pole": floor_ppo, "sac_pendulum": floor_sac}
ROWS = [("time per env step", "us_per_step")] + [(p, f"{p}_us_per_step") for p in phases.PHASES]


def round_runs(task: str, round_index: int, seed: int, args) -> list[dict]:
    """Round ``round_index``: alf, the floor (and SB3) in fresh processes, in turn."""
    floor = FLOORS[task]
    common = dict(seed=seed, env_steps=args.env_steps or floor.ENV_STEPS)
    common.update(num_threads=args.num_threads, matmul_precision=args.matmul_precision)
    common["warmup_steps"] = floor.WARMUP_STEPS if args.warmup_steps is None else args.warmup_steps
    functions = dict(floor=f"{floor.__name__}:run")
    functions.update(alf="benchmarks.harness.split:alf_run", sb3="benchmarks.harness.split:sb3_run")
    frameworks = ("alf", "floor") + ("sb3",) * args.with_sb3
    shift = round_index % len(frameworks)  # each framework takes each place in turn
    runs = []
    for fw in frameworks[shift:] + frameworks[:shift]:
        out = os.path.join(args.work_dir, f"{task}_{fw}_round{round_index}.json")
        kwargs = common if fw == "floor" else dict(common, task=task)
        record = runner.call(functions[fw], out, **kwargs)
        runs.append(dict(record, round=round_index, load_end=runner.load_average()))
    return runs


def _paired(by_fw: dict, a: str, b: str) -> str:
    """Median over the rounds of ``a``'s time per env step / ``b``'s, formatted."""
    pairs = [(x, y) for x in by_fw[a] for y in by_fw[b] if x["round"] == y["round"]]
    ratios = (report.ratio(x["us_per_step"], y["us_per_step"]) for x, y in pairs)
    return report.fmt(report.median(ratios), 2)


def markdown(record: dict) -> str:
    """The medians with their ratios, and the per-round paired ratios."""
    runs, fmt = record["runs"], report.fmt
    by_fw = {fw: [r for r in runs if r["framework"] == fw] for fw in ("alf", "floor", "sb3")}
    with_sb3 = bool(by_fw["sb3"])
    medians = []
    for label, key in ROWS:
        alf, floor, sb3 = (report.median(r[key] for r in by_fw[fw]) for fw in by_fw)
        row = [label, fmt(alf), fmt(floor), fmt(report.ratio(alf, floor), 2)]
        if with_sb3:
            row += [fmt(sb3), fmt(report.ratio(sb3, floor), 2), fmt(report.ratio(sb3, alf), 2)]
        medians.append(row)
    columns = ["median µs per env step", "alf", "floor", "alf / floor"]
    columns += ["SB3", "SB3 / floor", "SB3 / alf"] * with_sb3
    rounds = len({r["round"] for r in runs})
    paired = partial(_paired, by_fw)
    text = f"{report.measured(record)}\n\n{report.table(columns, medians)}\n\nMedian of the per-"
    text += f"round paired ratios over {rounds} rounds: alf / floor **{paired('alf', 'floor')}**"
    if with_sb3:
        text += f"; SB3 / floor {paired('sb3', 'floor')}; SB3 / alf {paired('sb3', 'alf')}"
    return text + "."


def main() -> None:
    parser = cli.parser(__doc__, "floor_compare", seeds=(0,))
    parser.add_argument("--task", choices=sorted(FLOORS), default="ppo_cart_pole")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env_steps", type=int, help="per run; default: the task's budget")
    parser.add_argument("--warmup_steps", type=int, help="not timed; default: the floor's")
    parser.add_argument("--num_threads", type=int, default=1)
    parser.add_argument("--with_sb3", action="store_true", help="SB3 in each round too")
    parser.add_argument("--matmul_precision", default="highest", help="torch's, for products")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.env_steps = 1, args.env_steps or 2 * FLOORS[args.task].WARMUP_STEPS
    seeds = [args.seeds[i % len(args.seeds)] for i in range(args.rounds)]
    jobs = [partial(round_runs, args.task, i, seed, args) for i, seed in enumerate(seeds)]
    header = dict(task=args.task, rounds=args.rounds, env_steps=args.env_steps)
    header.update(warmup_steps=args.warmup_steps, num_threads=args.num_threads)
    header.update(with_sb3=args.with_sb3, matmul_precision=args.matmul_precision)
    cli.run(args, "floor_compare", markdown, jobs, args.task, **header)


if __name__ == "__main__":
    main()
