"""alf against Stable-Baselines3 with the same hyperparameters (the PPO and SAC tasks).

Per seed, alf (its training CLI on the task's conf) and SB3 (``harness/sb3.py``) train in fresh
processes, one torch thread each, one after the other or (``--turn_s S``) taking turns on one
core (``interleave.py``; times are then running times). Both evaluate at the same env steps;
evaluation is timed and left out of the rates. ``--steady N`` alternates steady-state timings
instead (alf: ``harness/steady.py``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from functools import partial

from benchmarks.harness import cli, report, runner, steady, tb

FRAMEWORKS, UPDATE_STATS = ("alf", "sb3"), ("approx_kl", "clip_fraction")
THRESHOLD_KEYS = ["steps_to_threshold", "time_to_threshold_s"]
SB3_LEARN, SB3_STEADY = "benchmarks.harness.sb3:learn", "benchmarks.harness.sb3:steady_state"
#: ``stable_baselines3.SAC`` keyword arguments at SB3's defaults.
SB3_SAC_DEFAULTS = dict(learning_rate=3e-4, buffer_size=1_000_000, learning_starts=100)
SB3_SAC_DEFAULTS.update(batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1)
SB3_SAC_DEFAULTS.update(ent_coef="auto", target_entropy="auto")
SB3_SAC_DEFAULTS["policy_kwargs"] = dict(net_arch=[256, 256])


@dataclasses.dataclass(frozen=True)
class Task:
    """One benchmark: ``sb3`` holds SB3's keyword arguments; ``steady_starts`` is SAC's
    ``learning_starts`` in steady-state runs (alf: ``initial_collect_steps``)."""

    name: str
    algorithm: str  # "ppo" or "sac"
    env_name: str
    conf: str
    env_steps: int
    eval_every: int
    seeds: tuple[int, ...]
    sb3: dict
    conf_params: tuple[str, ...] = ()
    threshold: float | None = None
    num_envs: int = 1
    num_eval_episodes: int = 10
    learning_starts: int = 0
    steady_starts: int = 0
    startup: bool = True  # PPO tables: show the start-up estimate
    update_stats: bool = False  # PPO: show approx KL and clip fraction
    normalize: bool = False  # PPO: SB3 in VecNormalize (the zoo's ``normalize: true``)

    @property
    def unit(self) -> str:
        return "steps" if self.algorithm == "ppo" else "updates"


# -- learning runs -----------------------------------------------------------------------


def seed_runs(task: Task, seed: int, work_dir: str, turn_s: float, only=None) -> list[dict]:
    """alf and SB3 (or ``only`` one of them) on ``seed``: their results."""
    root_dir = os.path.join(work_dir, f"alf_seed{seed}")
    shutil.rmtree(root_dir, ignore_errors=True)  # alf would resume an old run
    params = [f"TrainerConfig.num_env_steps={task.env_steps}", *task.conf_params]
    if task.algorithm == "sac":  # no mid-run checkpoint: it restarts the training env
        sac = dict(num_checkpoints=1, eval_interval=task.eval_every)
        sac.update(num_eval_episodes=task.num_eval_episodes)
        sac.update(num_eval_environments=task.num_eval_episodes)
        sac.update(initial_collect_steps=task.learning_starts)
        params += [f"TrainerConfig.{k}={v}" for k, v in sac.items()]
    alf_cmd = runner.alf_train_cmd(task.conf, root_dir, seed, params) + ["--nostore_snapshot"]
    out = os.path.join(work_dir, f"sb3_seed{seed}.json")
    info = dict(start=runner.now(), load_start=runner.load_average())
    sb3_cmd = runner.function_cmd(SB3_LEARN, out, task=dataclasses.asdict(task), seed=seed)
    jobs = [("alf", alf_cmd, root_dir + ".log"), ("sb3", sb3_cmd, out + ".log")]
    jobs = [job for job in jobs if only in (None, job[0])]
    turns = runner.run_jobs([job[1] for job in jobs], [job[2] for job in jobs], turn_s)
    turns = dict(zip([job[0] for job in jobs], turns))
    info.update(end=runner.now(), load_end=runner.load_average())
    results = []
    if "alf" in turns:
        results.append(result(task, "alf", seed, turns["alf"], _alf_run(task, root_dir, info)))
    if "sb3" in turns:
        results.append(result(task, "sb3", seed, turns["sb3"], report.read_json(out)))
    return [dict(r, **info) for r in results]


def _alf_run(task: Task, root_dir: str, info: dict) -> dict:
    """alf's evaluations and PPO statistics from its summaries (``info``: checkpoint time)."""
    eval_dir, train_dir = os.path.join(root_dir, "eval"), os.path.join(root_dir, "train")
    returns = tb.scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    times = tb.scalars(eval_dir, "time/eval")  # written right after each evaluation
    alf = dict(evals=[[s, v, t - d, t] for (s, _, v), (_, t, d) in zip(returns, times)])
    alf["env_steps"] = alf["evals"][-1][0]
    alf["updates"] = alf["env_steps"] - task.learning_starts + 1  # SAC: also on the step filling
    if task.algorithm == "ppo":
        alf["loop_rates"] = [v for _, _, v in tb.scalars(train_dir, "time/env_steps_per_sec")]
        kl, clip = (_per_step(tb.scalars(train_dir, f"loss/{n}")) for n in UPDATE_STATS)
        alf["update_stats"] = [dict(zip(UPDATE_STATS, (kl[s], clip[s]))) for s in kl if s in clip]
        with open(root_dir + ".log") as f:
            checkpoints = re.findall(r"Checkpoint .* written in ([0-9.]+)s", f.read())
        info["checkpoint_s"] = round(sum(map(float, checkpoints)), 3)
    return alf


def _per_step(values) -> dict:
    """Mean per step (older alf wrote one value per minibatch)."""
    steps = {}
    for step, _, value in values:
        steps.setdefault(step, []).append(value)
    return {s: sum(v) / len(v) for s, v in steps.items()}


def result(task: Task, framework: str, seed: int, turns, run: dict) -> dict:
    """A run's record; ``run["evals"]``: ``[env_steps, return, wall-clock start, end]``."""
    eval_s, curve = 0.0, []
    for steps, value, begin, end in run["evals"]:
        eval_s += turns.running_s(begin, end)
        curve.append(
            [int(steps), round(value, 3), round(turns.running_s(turns.start, end) - eval_s, 3)]
        )
    wall, unit = turns.wall_s, task.unit
    count = run["env_steps"] if unit == "steps" else run["updates"]
    rates = [
        (b[0] - a[0]) / (b[2] - a[2])
        for a, b in zip(curve, curve[1:])
        if a[0] >= task.learning_starts and b[2] > a[2]
    ]
    steady_rate = report.median(rates)
    hit = next((e for e in curve if task.threshold is not None and e[1] >= task.threshold), None)
    record = dict(framework=framework, seed=seed, env_steps=int(run["env_steps"]))
    record["updates"] = run["updates"]
    record.update(wall_s=wall, eval_s=eval_s, train_s=wall - eval_s, cpu_s=turns.cpu_s)
    record["peak_rss_mb"] = turns.peak_rss_mb
    record[f"{unit}_per_sec"] = count / (wall - eval_s)
    record[f"steady_{unit}_per_sec"] = steady_rate
    record[f"{unit}_per_cpu_sec"] = count / turns.cpu_s
    record.update(final_return=curve[-1][1], best_return=max(e[1] for e in curve))
    record.update(steps_to_threshold=hit and hit[0], time_to_threshold_s=hit and hit[2])
    if task.algorithm == "ppo":
        stats = run["update_stats"]
        record["startup_s"] = steady_rate and curve[0][2] - curve[0][0] / steady_rate
        record["loop_steps_per_sec"] = report.median(run["loop_rates"])
        medians = {k: report.median(s[k] for s in stats) for k in UPDATE_STATS}
        record["update_stats"] = dict(iterations=len(stats), **medians)
    return dict(record, evals=curve)


def speeds(task: Task, frameworks, seed: int, iterations: int, work_dir: str) -> list[dict]:
    """A steady-state run of each of ``alf``, ``sb3``, ``sb3_ftz`` (SB3 flushing subnormals)."""
    sac, runs = task.algorithm == "sac", []
    for framework in frameworks:
        info = dict(framework=framework, seed=seed)
        info.update(start=runner.now(), load_start=runner.load_average())
        if framework == "alf":
            params = [*task.conf_params]  # the task's and the command line's
            params += [f"TrainerConfig.initial_collect_steps={task.steady_starts}"] * sac
            warmup = task.steady_starts + 200 if sac else 2
            result = steady.measure(runner.REPO_DIR, task.conf, seed, warmup, iterations, params)
        else:
            out = os.path.join(work_dir, f"speed_{framework}_{seed}.json")
            kwargs = dict(task=dataclasses.asdict(task), seed=seed, iterations=iterations)
            result = runner.call(SB3_STEADY, out, **kwargs, flush_denormal=framework != "sb3")
        info.update(end=runner.now(), load_end=runner.load_average())
        runs.append(dict(info, **{k: result[k] for k in ("env_steps", "wall_s", "cpu_s")}))
    return runs


# -- tables ------------------------------------------------------------------------------


def _load(r: dict) -> str:
    return f"{r['load_start'][0]:.2f} → {r['load_end'][0]:.2f}" if "load_start" in r else "-"


def columns(task: Task) -> list[tuple]:
    """``(header, key or cell function, digits, text for None)`` of the per-run table."""
    t = None if task.threshold is None else f"{task.threshold:g}"
    if task.algorithm == "ppo":
        cols = [("env steps", "env_steps"), ("wall s", "wall_s"), ("eval s", "eval_s")]
        cols += [("wall − eval s", "train_s"), ("steps/s (wall − eval)", "steps_per_sec", 0)]
        cols += [("steady steps/s (between evals)", "steady_steps_per_sec", 0)]
        cols += [("start-up s (est.)", "startup_s")] * task.startup
        cols += [("own per-iteration steps/s (median)", "loop_steps_per_sec", 0)]
        if t:
            cols += [(f"steps to ≥{t}", "steps_to_threshold", 1, "never")]
            cols += [(f"time to ≥{t} s", "time_to_threshold_s")]
        return cols + [("final eval return", "final_return"), ("best eval return", "best_return")]
    cols = [("wall s", "wall_s"), ("eval s", "eval_s"), ("wall − eval s", "train_s")]
    cols += [("updates", "updates")]
    cols += [("updates/s", "updates_per_sec"), ("steady updates/s", "steady_updates_per_sec")]
    cols += [("updates / CPU s", "updates_per_cpu_sec"), ("final eval return", "final_return")]
    if t is None:
        cols += [("CPU s", "cpu_s"), ("best eval return", "best_return")]
        return cols + [("load avg (1 min) start → end", _load)]
    cols += [(f"≥ {t} reached", lambda r: "yes" if r["steps_to_threshold"] else "no")]
    cols += [(f"env steps to ≥ {t}", "steps_to_threshold")]
    return cols + [(f"time to ≥ {t} s", "time_to_threshold_s")]


def medians_rows(task: Task) -> list[tuple[str, str]]:
    """``(label, key)`` of the medians table (SAC: the keys themselves)."""
    if task.algorithm == "sac":
        keys = ["wall_s", "train_s", "updates_per_sec", "steady_updates_per_sec"]
        keys += ["updates_per_cpu_sec", "final_return"]
        keys += ["best_return", "cpu_s"] if task.threshold is None else THRESHOLD_KEYS
        return [(k, k) for k in keys]
    t = None if task.threshold is None else f"{task.threshold:g}"
    rows = [("wall time s", "wall_s"), ("wall − eval s", "train_s")]
    rows += [("steps/s (wall − eval)", "steps_per_sec")]
    rows += [("steady steps/s (between evals)", "steady_steps_per_sec")]
    rows += [("start-up s (est.)", "startup_s")] * task.startup
    rows += [("own per-iteration steps/s", "loop_steps_per_sec")]
    if t:
        rows += [(f"env steps to eval ≥{t}", "steps_to_threshold")]
        rows += [(f"wall − eval s to eval ≥{t}", "time_to_threshold_s")]
    return rows + [("final eval return", "final_return")]


def markdown(task: Task, runs: list[dict]) -> str:
    """The learning runs' block: per-run and median tables, paired ratios, eval curves."""
    fmt = partial(report.fmt, whole_from=1000 if task.algorithm == "ppo" else None)

    def cell(r, key, digits=1, none="-"):
        return key(r) if callable(key) else fmt(r.get(key), digits, none)

    cols = columns(task)
    per_run = [
        [i, r["framework"], r["seed"]] + [cell(r, *c[1:]) for c in cols]
        for i, r in enumerate(runs, 1)
    ]
    by_fw = {fw: [r for r in runs if r["framework"] == fw] for fw in FRAMEWORKS}
    rows = []
    rss = [("peak RSS MB", "peak_rss_mb")] * any(r.get("peak_rss_mb") for r in runs)
    for label, key in medians_rows(task) + rss:
        alf, sb3 = (report.median(r.get(key) for r in by_fw[fw]) for fw in FRAMEWORKS)
        rows.append([label, fmt(alf), fmt(sb3), fmt(report.ratio(alf, sb3), 2)])
    counts = [sum(r["steps_to_threshold"] is not None for r in by_fw[fw]) for fw in FRAMEWORKS]
    counts = [f"{n}/{len(by_fw[fw])}" for n, fw in zip(counts, FRAMEWORKS)]
    pairs = [(a, b) for a in by_fw["alf"] for b in by_fw["sb3"] if a["seed"] == b["seed"]]

    def paired(key):
        return fmt(report.median(report.ratio(a[key], b[key]) for a, b in pairs), 2)

    if task.algorithm == "ppo":
        if task.threshold is not None:
            rows.append([f"seeds reaching ≥{task.threshold:g}", *counts, ""])
        faster = sum(
            (a["steady_steps_per_sec"] or 0) > (b["steady_steps_per_sec"] or 0) for a, b in pairs
        )
        n = len(pairs)
        paired_text = (
            "Per-seed paired ratios (alf / SB3, each alf run next to its SB3 run), median over "
            f"{n} seeds: steps/s (wall − eval) {paired('steps_per_sec')}, steady steps/s "
            f"{paired('steady_steps_per_sec')}; alf had the higher steady rate in {faster} of "
            f"{n} pairs."
        )
        head = "Per run:", "Medians and alf / SB3 ratios (throughput > 1 and time < 1 favour alf):"
    else:
        paired_text = (
            f"Median of the per-seed paired ratios (alf / SB3): updates/s "
            f"{paired('updates_per_sec')}, steady\nupdates/s {paired('steady_updates_per_sec')}."
        )
        if task.threshold is not None:
            paired_text += (
                f" Eval AverageReturn ≥ {task.threshold:g} within {task.env_steps:,} env\n"
                f"steps: alf {counts[0]} seeds, SB3 {counts[1]}."
            )
        head = "Per run (in the order they ran):", "Medians and alf / SB3 ratios:"
    returns = [{e[0]: e[1] for e in r["evals"]} for r in runs]
    curve = [[fmt(x)] + [fmt(c.get(x)) for c in returns] for x in sorted(set().union(*returns))]
    text = f"""{head[0]}

{report.table(["run", "framework", "seed"] + [c[0] for c in cols], per_run)}

{head[1]}

{report.table(["median", "alf", "SB3", "alf / SB3"], rows)}

{paired_text}

Eval AverageReturn by env steps:

{report.table(["env steps"] + [f"{r['framework']} s{r['seed']}" for r in runs], curve)}"""
    if task.update_stats:
        stats = [(r["framework"], r["seed"], r["update_stats"]) for r in runs]
        stats = [
            [*r, u["iterations"], fmt(u["approx_kl"], 4), fmt(u["clip_fraction"], 3)]
            for *r, u in stats
        ]
        header = ["framework", "seed", "iterations", "approx KL (median)", "clip fraction (median)"]
        text += f"\n\nPPO update diagnostics:\n\n{report.table(header, stats)}"
    return text


def steady_markdown(task: Task, speeds: list[dict]) -> str:
    """The steady-state block: one row per run and alf's median speed-ups over SB3."""
    fmt = partial(report.fmt, whole_from=1000 if task.algorithm == "ppo" else None)
    med, rate = {}, {}  # medians of time per step and of steps per time
    for fw in ("alf", "sb3", "sb3_ftz"):
        for k in ("wall_s", "cpu_s"):
            mine = [r for r in speeds if r["framework"] == fw]
            med[fw, k] = report.median(r[k] / r["env_steps"] for r in mine)
            rate[fw, k] = report.median(r["env_steps"] / r[k] for r in mine)
    if task.algorithm == "ppo":
        header = ["run", "framework", "env steps", "wall s", "CPU s", "steps/s (wall)"]
        header += ["steps per CPU s", "load"]
        rows = [[i, r["framework"], fmt(r["env_steps"])] for i, r in enumerate(speeds, 1)]
        for row, r in zip(rows, speeds):
            row += [f"{r['wall_s']:.2f}", f"{r['cpu_s']:.2f}", fmt(r["env_steps"] / r["wall_s"], 0)]
            row += [fmt(r["env_steps"] / r["cpu_s"], 0), r["load_end"]]
        return f"""{report.table(header, rows)}

Medians: steps per CPU second alf {rate["alf", "cpu_s"]:.0f}, SB3 {rate["sb3", "cpu_s"]:.0f} \
(alf / SB3 **{rate["alf", "cpu_s"] / rate["sb3", "cpu_s"]:.2f}**); steps/s (wall) alf \
{rate["alf", "wall_s"]:.0f}, SB3 {rate["sb3", "wall_s"]:.0f} \
({rate["alf", "wall_s"] / rate["sb3", "wall_s"]:.2f})."""
    header = ["run", "framework", "timed updates", "wall ms/update", "updates/s", "CPU ms/update"]
    header += ["load avg (1 min) start → end"] * (task.steady_starts != task.learning_starts)
    rows = []
    for i, r in enumerate(speeds, 1):
        wall, cpu = 1e3 * r["wall_s"] / r["env_steps"], 1e3 * r["cpu_s"] / r["env_steps"]
        rows.append(
            [i, r["framework"], fmt(r["env_steps"]), fmt(wall, 2), fmt(1e3 / wall), fmt(cpu, 2)]
        )
        rows[-1] += [_load(r)] * (task.steady_starts != task.learning_starts)
    text = f"""{report.table(header, rows)}

Median alf speed-up over SB3: **{med["sb3", "wall_s"] / med["alf", "wall_s"]:.2f}x** in wall \
time per update, **{med["sb3", "cpu_s"] / med["alf", "cpu_s"]:.2f}x** in CPU time per update."""
    if med["sb3_ftz", "wall_s"] is not None:
        text += f"""
Against `sb3_ftz` (SB3 with `torch.set_flush_denormal(True)`, as alf runs by default): \
**{med["sb3_ftz", "wall_s"] / med["alf", "wall_s"]:.2f}x** in wall time and \
**{med["sb3_ftz", "cpu_s"] / med["alf", "cpu_s"]:.2f}x** in CPU time per update."""
    return text


# -- command line ------------------------------------------------------------------------


def main(task: Task, doc: str) -> None:
    """A task's command line: learning runs, a steady-state A/B (``--steady``), or only the
    RESULTS.md block from the saved JSON (``--report_only``)."""
    parser = cli.parser(doc, task.name, task.seeds)
    parser.add_argument("--env_steps", type=int, default=task.env_steps, help="per learning run")
    parser.add_argument("--eval_every", type=int, default=task.eval_every, help="SAC: env steps")
    parser.add_argument("--turn_s", type=float, default=0.0, help="take turns (s); 0: don't")
    parser.add_argument("--steady", type=int, default=0, help="steady-state A/B of N iterations")
    parser.add_argument("--repeats", type=int, default=3, help="steady-state A/B repeats")
    parser.add_argument("--with_sb3_ftz", action="store_true", help="A/B: also SB3 + FTZ")
    parser.add_argument("--only", choices=FRAMEWORKS, help="learning runs of one framework")
    parser.add_argument("--conf_param", action="append", default=[], help="alf: added")
    args = parser.parse_args()
    task = dataclasses.replace(task, env_steps=args.env_steps, eval_every=args.eval_every)
    task = dataclasses.replace(task, conf_params=task.conf_params + tuple(args.conf_param))
    name = task.name + "_steady" * bool(args.steady)
    is_steady = (args.results_json or name).removesuffix(".json").endswith("_steady")
    frameworks = FRAMEWORKS + ("sb3_ftz",) * args.with_sb3_ftz
    if args.steady:
        jobs = [
            partial(speeds, task, frameworks, repeat, args.steady, args.work_dir)
            for repeat in range(args.repeats)
        ]
    else:
        jobs = [
            partial(seed_runs, task, seed, args.work_dir, args.turn_s, args.only)
            for seed in args.seeds
        ]
    render = partial(steady_markdown if is_steady else markdown, task)
    cli.run(args, name, render, jobs)
