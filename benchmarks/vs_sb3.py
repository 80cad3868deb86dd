"""alf against Stable-Baselines3 with the same hyperparameters, on a task of ``tasks.py``.

    python -m benchmarks.vs_sb3 --task ppo_cart_pole [--seeds 0 1 2 3 4] [--turn_s 5]
    python -m benchmarks.vs_sb3 --task sac_pendulum --steady 1000 --repeats 5 [--with_sb3_ftz]
    python -m benchmarks.vs_sb3 --task sac_halfcheetah --quick [--steady 1]

Learning runs (record ``learning``): per seed, alf (its training CLI on the task's conf) and SB3
(``harness/sb3.py``) train in fresh processes, one torch thread each, one after the other or
(``--turn_s S``) taking turns on one core (``harness/interleave.py``: times are running times),
evaluating at the same env steps; evaluation time is left out of the rates. "steady": the
median rate between evaluations; "start-up": the time to the first evaluation less what its
steps take at that rate. ``--steady N`` (record ``steady``) alternates timings of N iterations
after a warm-up (alf: ``harness/steady.py``; SAC: ``steady_starts + 200`` steps; DQN:
``learning_starts`` and 2 iterations).
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
from functools import partial

from benchmarks.harness import cli, report, runner, steady
from benchmarks.tasks import TASKS, Task

FRAMEWORKS = ("alf", "sb3")
UNLOADED = ("final_return", "best_return", "peak_rss_mb")  # what load on the machine leaves
SB3_LEARN, SB3_STEADY = "benchmarks.harness.sb3:learn", "benchmarks.harness.sb3:steady_state"


def seed_runs(task: Task, seed: int, work_dir: str, turn_s: float, only=None) -> list[dict]:
    """alf and SB3 (or ``only`` one of them) on ``seed``: their results."""
    root_dir = os.path.join(work_dir, f"alf_seed{seed}")
    shutil.rmtree(root_dir, ignore_errors=True)  # alf would resume an old run
    params = [f"TrainerConfig.num_env_steps={task.env_steps}", *task.conf_params]
    if task.algorithm == "sac":  # no mid-run checkpoint: it restarts the training env
        n, sac = task.num_eval_episodes, dict(num_checkpoints=1, eval_interval=task.eval_every)
        sac.update(num_eval_episodes=n, num_eval_environments=n)
        sac.update(initial_collect_steps=task.learning_starts)
        params += [f"TrainerConfig.{k}={v}" for k, v in sac.items()]
    out = os.path.join(work_dir, f"sb3_seed{seed}.json")
    jobs = [("alf", runner.alf_train_cmd(task.conf, root_dir, seed, params), root_dir + ".log")]
    sb3_cmd = runner.function_cmd(SB3_LEARN, out, task=dataclasses.asdict(task), seed=seed)
    jobs = [job for job in jobs + [("sb3", sb3_cmd, out + ".log")] if only in (None, job[0])]
    turns = runner.run_jobs([job[1] for job in jobs], [job[2] for job in jobs], turn_s)
    runs = {"alf": lambda: _alf_run(task, root_dir), "sb3": lambda: report.read_json(out)}
    return [result(task, job[0], seed, t, runs[job[0]]()) for job, t in zip(jobs, turns)]


def _scalars(event_dir: str, tag: str) -> list[tuple[int, float, float]]:
    """``[(step, wall_time, value)]`` of the scalar ``tag`` in ``event_dir`` (empty if absent)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(event_dir, size_guidance={"scalars": 0})
    events.Reload()
    if tag not in events.Tags()["scalars"]:
        return []
    return [(e.step, e.wall_time, e.value) for e in events.Scalars(tag)]


def _alf_run(task: Task, root_dir: str) -> dict:
    """alf's evaluations from its summaries (``time/eval`` is written right after each)."""
    eval_dir = os.path.join(root_dir, "eval")
    returns = _scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    times = _scalars(eval_dir, "time/eval")
    evals = [[s, v, t - d, t] for (s, _, v), (_, t, d) in zip(returns, times)]
    sac = task.algorithm == "sac"  # an update per step, also on the one filling the warm-up
    updates = evals[-1][0] - task.learning_starts + 1 if sac else None
    return dict(env_steps=evals[-1][0], updates=updates, evals=evals)


def result(task: Task, framework: str, seed: int, turns, run: dict) -> dict:
    """A run's record; ``run["evals"]``: ``[env_steps, return, wall-clock start, end]``."""
    eval_s, curve = 0.0, []
    for steps, value, begin, end in run["evals"]:
        eval_s += turns.running_s(begin, end)
        curve.append([int(steps), value, turns.running_s(turns.start, end) - eval_s])
    wall, unit = turns.wall_s, task.unit
    count = run["env_steps"] if unit == "steps" else run["updates"]
    pairs = [(a, b) for a, b in zip(curve, curve[1:]) if a[0] >= task.learning_starts]
    steady_rate = report.median((b[0] - a[0]) / (b[2] - a[2]) for a, b in pairs if b[2] > a[2])
    hit = next((e for e in curve if task.threshold is not None and e[1] >= task.threshold), None)
    record = dict(framework=framework, seed=seed, env_steps=int(run["env_steps"]))
    record.update(updates=run["updates"], wall_s=wall, eval_s=eval_s, train_s=wall - eval_s)
    record.update(cpu_s=turns.cpu_s, peak_rss_mb=turns.peak_rss_mb)
    record[f"{unit}_per_sec"] = count / (wall - eval_s)
    record[f"steady_{unit}_per_sec"] = steady_rate
    record[f"{unit}_per_cpu_sec"] = count / turns.cpu_s
    record.update(final_return=curve[-1][1], best_return=max(e[1] for e in curve))
    record.update(steps_to_threshold=hit and hit[0], time_to_threshold_s=hit and hit[2])
    if task.algorithm == "ppo":
        record["startup_s"] = steady_rate and curve[0][2] - curve[0][0] / steady_rate
    return record


def speeds(task: Task, frameworks, seed: int, iterations: int, work_dir: str) -> list[dict]:
    """A steady-state run of each of ``alf``, ``sb3``, ``sb3_ftz`` (SB3 flushing subnormals)."""
    sac, runs = task.algorithm == "sac", []
    for framework in frameworks:
        if framework == "alf":
            params = [*task.conf_params]  # the task's and the command line's
            params += [f"TrainerConfig.initial_collect_steps={task.steady_starts}"] * sac
            warmup = task.steady_starts + 200 if sac else 2
            if task.algorithm == "dqn":  # the initial collection (in unrolls), then 2 more
                warmup = -(-task.learning_starts // task.sb3["train_freq"]) + 2
            result = steady.measure(runner.REPO_DIR, task.conf, seed, warmup, iterations, params)
        else:
            out = os.path.join(work_dir, f"speed_{framework}_{seed}.json")
            kwargs = dict(task=dataclasses.asdict(task), seed=seed, iterations=iterations)
            result = runner.call(SB3_STEADY, out, **kwargs, flush_denormal=framework != "sb3")
        runs.append(dict(framework=framework, seed=seed, load_end=runner.load_average()))
        runs[-1].update({k: result[k] for k in ("env_steps", "wall_s", "cpu_s")})
    return runs


def _rows(task: Task) -> list[tuple[str, str]]:
    """``(label, key)`` of the medians table (rows no run has are left out)."""
    t, unit = task.threshold, task.unit
    rows = [("wall s", "wall_s"), ("wall − eval s", "train_s")]
    rows += [(f"{unit}/s (wall − eval)", f"{unit}_per_sec")]
    rows += [(f"steady {unit}/s (between evals)", f"steady_{unit}_per_sec")]
    rows += [(f"{unit} per CPU s", f"{unit}_per_cpu_sec"), ("start-up s (est.)", "startup_s")]
    if t is not None:
        rows += [(f"env steps to eval ≥ {t:g} (never: ∞)", "steps_to_threshold")]
        rows += [(f"wall − eval s to eval ≥ {t:g} (runs reaching it)", "time_to_threshold_s")]
    rows += [("final eval return", "final_return")]
    rows += [("best eval return", "best_return")] * (t is None)  # else: seeds reaching it
    return rows + [("peak RSS MB", "peak_rss_mb")]


def _median(runs: list[dict], key: str) -> float | None:
    if key == "steps_to_threshold":  # a run that never reached it counts as infinitely many
        return report.median(math.inf if r[key] is None else r[key] for r in runs) if runs else None
    return report.median(r.get(key) for r in runs)


def markdown(task: Task, record: dict) -> str:
    """A learning record's block: medians, alf / SB3 ratios, paired ratios."""
    runs, unit, steady = record["runs"], task.unit, f"steady_{task.unit}_per_sec"
    fmt = partial(report.fmt, whole_from=1000 if task.algorithm == "ppo" else None)
    by_fw = {fw: [r for r in runs if r["framework"] == fw] for fw in FRAMEWORKS}
    by_fw = {fw: mine for fw, mine in by_fw.items() if mine}
    shown = UNLOADED if record.get("returns_only") else [k for _, k in _rows(task)]
    rows = []
    for label, key in _rows(task):
        if key in shown and any(r.get(key) is not None for r in runs):
            values = [_median(mine, key) for mine in by_fw.values()]
            both = len(values) == 2 and math.inf not in values
            rows.append([label] + ["∞" if v == math.inf else fmt(v) for v in values])
            rows[-1] += [fmt(report.ratio(*values) if both else None, 2)] * (len(values) == 2)
    if task.threshold is not None:
        counts = [sum(r["steps_to_threshold"] is not None for r in mine) for mine in by_fw.values()]
        rows.append([f"seeds reaching ≥ {task.threshold:g}"])
        rows[-1] += [f"{n}/{len(mine)}" for n, mine in zip(counts, by_fw.values())]
        rows[-1] += [""] * (len(by_fw) == 2)
    header = ["median", *by_fw] + ["alf / sb3"] * (len(by_fw) == 2)
    text = f"{report.measured(record)}\n\n{report.table(header, rows)}"
    if len(by_fw) < 2 or record.get("returns_only"):
        return text
    pairs = [(a, b) for a in by_fw["alf"] for b in by_fw["sb3"] if a["seed"] == b["seed"]]

    def paired(key):
        return report.fmt(report.median(report.ratio(a.get(key), b.get(key)) for a, b in pairs), 2)

    text += f"\n\nMedian of the per-seed paired ratios alf / SB3 ({len(pairs)} seeds): {unit}/s "
    text += f"(wall − eval) {paired(f'{unit}_per_sec')}"
    if any(r.get(steady) for r in runs):
        faster = sum((a[steady] or 0) > (b[steady] or 0) for a, b in pairs)
        text += f", steady {paired(steady)} (alf faster in {faster} of {len(pairs)})"
    return text + "."


def steady_markdown(task: Task, record: dict) -> str:
    """A steady-state record's block: median rates per framework, their ratios to SB3's."""
    runs, unit = record["runs"], task.unit
    fws = [fw for fw in ("alf", "sb3", "sb3_ftz") if any(r["framework"] == fw for r in runs)]
    rows = []
    for label, time_key in ((f"{unit} per CPU s", "cpu_s"), (f"{unit}/s (wall)", "wall_s")):
        rates = {
            fw: report.median(r["env_steps"] / r[time_key] for r in runs if r["framework"] == fw)
            for fw in fws
        }
        rows.append([label] + [report.fmt(rates[fw], whole_from=1000) for fw in fws])
        rows[-1] += [f"**{report.ratio(rates['alf'], rates[fw]):.2f}**" for fw in fws[1:]]
    header = ["median", *fws] + [f"alf / {fw}" for fw in fws[1:]]
    timed = f"{len(runs) // len(fws)} repeats of {runs[0]['env_steps']:,} timed {unit}"
    return f"{report.measured(record)} ({timed})\n\n{report.table(header, rows)}"


def main() -> None:
    parser = cli.parser(__doc__, "vs_sb3")
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--env_steps", type=int, help="per learning run")
    parser.add_argument("--eval_every", type=int, help="SAC: env steps")
    parser.add_argument("--turn_s", type=float, default=0.0, help="take turns (s); 0: don't")
    parser.add_argument("--steady", type=int, default=0, help="steady-state A/B of N iterations")
    parser.add_argument("--repeats", type=int, default=3, help="steady-state A/B repeats")
    parser.add_argument("--with_sb3_ftz", action="store_true", help="A/B: also SB3 + FTZ")
    parser.add_argument("--only", choices=FRAMEWORKS, help="learning runs of one framework")
    parser.add_argument("--conf_param", action="append", default=[], help="alf: added")
    args = parser.parse_args()
    task = TASKS[args.task].quick() if args.quick else TASKS[args.task]
    if args.steady and task.algorithm not in ("ppo", "sac", "dqn"):
        parser.error(f"--steady times PPO, SAC and DQN only, not {task.name}")
    if args.quick:
        args.seeds, args.repeats, args.steady = args.seeds[:1], 1, args.steady and 2
    task = dataclasses.replace(task, conf_params=task.conf_params + tuple(args.conf_param))
    task = dataclasses.replace(task, env_steps=args.env_steps or task.env_steps)
    task = dataclasses.replace(task, eval_every=args.eval_every or task.eval_every)
    frameworks = FRAMEWORKS + ("sb3_ftz",) * args.with_sb3_ftz
    steady_job = partial(speeds, task, frameworks, iterations=args.steady, work_dir=args.work_dir)
    if args.steady:
        jobs = [partial(steady_job, seed=i) for i in range(args.repeats)]
        cli.run(args, task.name, partial(steady_markdown, task), jobs, "steady")
    else:
        learn = partial(seed_runs, task, work_dir=args.work_dir, turn_s=args.turn_s, only=args.only)
        jobs = [partial(learn, seed=seed) for seed in args.seeds]
        cli.run(args, task.name, partial(markdown, task), jobs, "learning")


if __name__ == "__main__":
    main()
