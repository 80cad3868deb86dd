"""SAC, alf against Stable-Baselines3 with the same hyperparameters (``sac_pendulum``,
``sac_halfcheetah``).

For every seed alf (its training CLI on the task's conf) and SB3 (this module as a worker)
train in fresh processes: one env, one gradient step per env step, one torch thread each,
one after the other or (``--turn_s S``) at the same time taking turns of ``S`` seconds on one
core (``interleave.py``), times then being each process's running time. Deterministic
evaluation on separate envs every ``eval_interval`` env steps is timed and left out of the
rates. Per run: ``wall_s``, ``eval_s``, ``train_s``, ``updates``, ``updates_per_sec =
updates / train_s``, ``steady_updates_per_sec`` (median between evaluations),
``updates_per_cpu_sec`` (process CPU time), the eval curve ``[env_steps, return,
train_time_s]`` and the first env step reaching the task's threshold. ``--steady_updates N``
instead alternates steady-state timings of ``N`` updates after a warm-up (alf:
``harness/steady.py``; ``--with_sb3_ftz`` adds SB3 with subnormal floats flushed to zero).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import time

from benchmarks.harness import report, runner, steady, tb

FRAMEWORKS = ("alf", "sb3")
fmt = report.fmt

#: ``stable_baselines3.SAC`` keyword arguments at SB3's defaults.
SB3_SAC_DEFAULTS = dict(
    learning_rate=3e-4,
    buffer_size=1_000_000,
    learning_starts=100,
    batch_size=256,
    tau=0.005,
    gamma=0.99,
    train_freq=1,
    gradient_steps=1,
    ent_coef="auto",
    target_entropy="auto",
    policy_kwargs=dict(net_arch=[256, 256]),
)


@dataclasses.dataclass(frozen=True)
class SacTask:
    """One SAC benchmark. alf makes ``env_steps - learning_starts + 1`` updates (it trains on
    the step that fills ``initial_collect_steps``), SB3 ``env_steps - learning_starts``.
    ``steady_starts``: ``learning_starts`` of both in the steady-state runs."""

    name: str
    env_name: str
    conf: str
    env_steps: int
    eval_interval: int
    num_eval_episodes: int
    learning_starts: int
    sb3_hyperparameters: dict
    seeds: tuple[int, ...]
    steady_starts: int
    threshold: float | None = None


# -- SB3 workers (``python -m benchmarks.harness.sac --task_json T --seed S --out O``) --------


def sb3_worker(task: SacTask, seed: int, out: str) -> None:
    """Train SB3 SAC; write its eval curve (wall-clock eval start and end) and update count."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)
    eval_env, evals = gym.make(task.env_name), []

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % task.eval_interval == 0:
                start = time.time()
                eval_env.reset(seed=seed + 999)
                n = task.num_eval_episodes
                mean, _ = evaluate_policy(
                    self.model, eval_env, n_eval_episodes=n, deterministic=True
                )
                evals.append([self.num_timesteps, float(mean), start, time.time()])
            return True

    env = gym.make(task.env_name)
    model = SAC("MlpPolicy", env, seed=seed, device="cpu", **task.sb3_hyperparameters)
    model.learn(task.env_steps, callback=Evaluate())
    report.write_json(out, dict(evals=evals, updates=int(model._n_updates)))


def sb3_steady(task: SacTask, seed: int, num_updates: int, flush_denormal: bool) -> dict:
    """SB3's steady state: ``steady_starts + 200`` untimed steps, then ``num_updates``."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import SAC

    torch.set_num_threads(1)
    torch.set_flush_denormal(flush_denormal)
    hyper = dict(task.sb3_hyperparameters, learning_starts=task.steady_starts)
    model = SAC("MlpPolicy", gym.make(task.env_name), seed=seed, device="cpu", **hyper)
    model.learn(task.steady_starts + 200)

    def train() -> int:
        model.learn(num_updates, reset_num_timesteps=False)
        return num_updates

    return steady.time_calls(train, 0, 1)


# -- learning runs -----------------------------------------------------------------------


def seed_runs(task: SacTask, seed: int, work_dir: str, turn_s: float) -> list[dict]:
    """alf and SB3 on ``seed`` (one after the other, or taking turns): their results."""
    root_dir = os.path.join(work_dir, f"alf_seed{seed}")
    shutil.rmtree(root_dir, ignore_errors=True)  # alf would resume an old run
    params = [
        "TrainerConfig.num_checkpoints=1",  # a mid-run checkpoint restarts the env
        f"TrainerConfig.num_env_steps={task.env_steps}",
        f"TrainerConfig.eval_interval={task.eval_interval}",
        f"TrainerConfig.num_eval_episodes={task.num_eval_episodes}",
        f"TrainerConfig.num_eval_environments={task.num_eval_episodes}",
        f"TrainerConfig.initial_collect_steps={task.learning_starts}",
    ]
    alf_cmd = runner.alf_train_cmd(task.conf, root_dir, seed, params) + ["--nostore_snapshot"]
    out = os.path.join(work_dir, f"sb3_seed{seed}.json")
    sb3_cmd = _worker_cmd(task, seed, out)
    start, load = runner.now(), runner.load_average()
    alf_turns, sb3_turns = runner.run_jobs(
        [alf_cmd, sb3_cmd], [root_dir + ".log", out + ".log"], turn_s
    )
    end = dict(start=start, load_start=load, end=runner.now(), load_end=runner.load_average())
    eval_dir = os.path.join(root_dir, "eval")
    returns = tb.scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    times = tb.scalars(eval_dir, "time/eval")  # an event's time is when the eval ended
    alf_evals = [[s, v, t - d, t] for (s, _, v), (_, t, d) in zip(returns, times)]
    updates = (alf_evals[-1][0] if alf_evals else task.env_steps) - task.learning_starts + 1
    sb3 = report.read_json(out)
    return [
        dict(_result(task, "alf", seed, alf_turns, alf_evals, updates), **end),
        dict(_result(task, "sb3", seed, sb3_turns, sb3["evals"], sb3["updates"]), **end),
    ]


def _worker_cmd(task: SacTask, seed: int, out: str, *extra) -> list[str]:
    with open(out + ".task", "w") as f:
        json.dump(dataclasses.asdict(task), f)
    return runner.module_cmd(
        __name__, "--task_json", out + ".task", "--seed", seed, "--out", out, *extra
    )


def _result(task: SacTask, framework: str, seed: int, turns, evals: list, updates: int) -> dict:
    """A run's record from ``evals``: ``[env_steps, return, wall-clock start, end]``."""
    eval_s, curve = 0.0, []
    for steps, value, begin, end in evals:
        eval_s += turns.running_s(begin, end)
        curve.append(
            [
                int(steps),
                round(float(value), 3),
                round(turns.running_s(turns.start, end) - eval_s, 3),
            ]
        )
    rates = [
        (b[0] - a[0]) / (b[2] - a[2])
        for a, b in zip(curve, curve[1:])
        if a[0] >= task.learning_starts
    ]
    hit = next((e for e in curve if task.threshold is not None and e[1] >= task.threshold), None)
    wall = turns.wall_s
    return dict(
        framework=framework,
        seed=seed,
        wall_s=round(wall, 2),
        eval_s=round(eval_s, 2),
        train_s=round(wall - eval_s, 2),
        updates=updates,
        updates_per_sec=round(updates / (wall - eval_s), 1),
        steady_updates_per_sec=round(report.median(rates), 1) if rates else None,
        cpu_s=round(turns.cpu_s, 2),
        updates_per_cpu_sec=round(updates / turns.cpu_s, 1),
        final_return=curve[-1][1] if curve else None,
        best_return=max(e[1] for e in curve) if curve else None,
        steps_to_threshold=hit[0] if hit else None,
        time_to_threshold_s=hit[2] if hit else None,
        evals=curve,
    )


# -- tables ------------------------------------------------------------------------------


def _load_range(r: dict) -> str:
    return f"{r['load_start'][0]:.2f} → {r['load_end'][0]:.2f}" if "load_start" in r else "-"


def run_columns(task: SacTask) -> list[tuple[str, object]]:
    """``(header, cell(run))`` of the per-run table."""
    columns = [("framework", lambda r: r["framework"]), ("seed", lambda r: r["seed"])]
    for header, key in [
        ("wall s", "wall_s"),
        ("eval s", "eval_s"),
        ("wall − eval s", "train_s"),
        ("updates", "updates"),
        ("updates/s", "updates_per_sec"),
        ("steady updates/s", "steady_updates_per_sec"),
        ("updates / CPU s", "updates_per_cpu_sec"),
        ("final eval return", "final_return"),
    ] + (
        [("CPU s", "cpu_s"), ("best eval return", "best_return")] if task.threshold is None else []
    ):
        columns.append((header, lambda r, key=key: fmt(r.get(key))))
    if task.threshold is None:
        return columns + [("load avg (1 min) start → end", _load_range)]
    t = f"{task.threshold:g}"
    return columns + [
        (f"≥ {t} reached", lambda r: "yes" if r["steps_to_threshold"] else "no"),
        (f"env steps to ≥ {t}", lambda r: fmt(r["steps_to_threshold"])),
        (f"time to ≥ {t} s", lambda r: fmt(r["time_to_threshold_s"])),
    ]


def summarize(task: SacTask, runs: list[dict]) -> dict:
    """Medians per framework, their ratios and the medians of per-seed paired ratios."""
    keys = ["wall_s", "train_s", "updates_per_sec", "steady_updates_per_sec"]
    keys += ["updates_per_cpu_sec", "final_return"]
    keys += (
        ["best_return", "cpu_s"]
        if task.threshold is None
        else ["steps_to_threshold", "time_to_threshold_s"]
    )
    med = {
        fw: {k: report.median(r.get(k) for r in runs if r["framework"] == fw) for k in keys}
        for fw in FRAMEWORKS
    }
    pairs = [
        (a, b)
        for a in runs
        for b in runs
        if (a["framework"], b["framework"]) == FRAMEWORKS and a["seed"] == b["seed"]
    ]
    paired = {
        k: report.median(a[k] / b[k] for a, b in pairs if a.get(k) and b.get(k))
        for k in ("updates_per_sec", "steady_updates_per_sec")
    }
    ratios = {k: report.ratio(med["alf"][k], med["sb3"][k]) for k in keys}
    return dict(median=med, ratio=ratios, paired=paired, keys=keys)


def markdown(task: SacTask, runs: list[dict]) -> str:
    """The learning runs' block: per-run and median tables, paired ratios, curves."""
    columns = run_columns(task)
    per_run = [[i] + [cell(r) for _, cell in columns] for i, r in enumerate(runs, 1)]
    s = summarize(task, runs)
    med, ratio, paired = s["median"], s["ratio"], s["paired"]
    rows = [[k, fmt(med["alf"][k]), fmt(med["sb3"][k]), fmt(ratio[k], 2)] for k in s["keys"]]
    threshold = ""
    if task.threshold is not None:
        reached = {
            fw: sum(1 for r in runs if r["framework"] == fw and r["steps_to_threshold"])
            for fw in FRAMEWORKS
        }
        counts = {fw: sum(1 for r in runs if r["framework"] == fw) for fw in FRAMEWORKS}
        threshold = (
            f" Eval AverageReturn ≥ {task.threshold:g} within {task.env_steps:,} env\nsteps: "
            f"alf {reached['alf']}/{counts['alf']} seeds, SB3 {reached['sb3']}/{counts['sb3']}."
        )
    returns = [{e[0]: e[1] for e in r["evals"]} for r in runs]
    curve = [[fmt(x)] + [fmt(c.get(x)) for c in returns] for x in sorted(set().union(*returns))]
    return f"""Per run (in the order they ran):

{report.table(["run"] + [h for h, _ in columns], per_run)}

Medians and alf / SB3 ratios:

{report.table(["median", "alf", "SB3", "alf / SB3"], rows)}

Median of the per-seed paired ratios (alf / SB3): updates/s \
{fmt(paired["updates_per_sec"], 2)}, steady
updates/s {fmt(paired["steady_updates_per_sec"], 2)}.{threshold}

Eval AverageReturn by env steps:

{report.table(["env steps"] + [f"{r['framework']} s{r['seed']}" for r in runs], curve)}"""


def steady_markdown(task: SacTask, speeds: list[dict]) -> str:
    """The steady-state A/B block: one row per run and alf's median speed-ups."""
    header = ["run", "framework", "timed updates", "wall ms/update", "updates/s", "CPU ms/update"]
    rows = []
    for i, r in enumerate(speeds, 1):
        wall, cpu = r["wall_ms_per_update"], r["cpu_ms_per_update"]
        rows.append(
            [i, r["framework"], fmt(r["updates"]), fmt(wall, 2), fmt(1e3 / wall), fmt(cpu, 2)]
        )
    if task.steady_starts != task.learning_starts:
        header.append("load avg (1 min) start → end")
        for row, r in zip(rows, speeds):
            row.append(_load_range(r))
    keys = ("wall_ms_per_update", "cpu_ms_per_update")
    med = {
        (fw, k): report.median(r[k] for r in speeds if r["framework"] == fw)
        for fw in ("alf", "sb3", "sb3_ftz")
        for k in keys
    }
    text = f"""{report.table(header, rows)}

Median alf speed-up over SB3: **{med[("sb3", keys[0])] / med[("alf", keys[0])]:.2f}x** in wall \
time per update, **{med[("sb3", keys[1])] / med[("alf", keys[1])]:.2f}x** in CPU time per update."""
    if med[("sb3_ftz", keys[0])] is not None:
        text += f"""
Against `sb3_ftz` (SB3 with `torch.set_flush_denormal(True)`, as alf runs by default): \
**{med[("sb3_ftz", keys[0])] / med[("alf", keys[0])]:.2f}x** in wall time and \
**{med[("sb3_ftz", keys[1])] / med[("alf", keys[1])]:.2f}x** in CPU time per update."""
    return text


# -- command line ------------------------------------------------------------------------


def _non_negative(text: str) -> float:
    if float(text) < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (0: one run after the other), got {text}")
    return float(text)


def parse_args(task: SacTask, doc: str):
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(task.seeds))
    parser.add_argument("--work_dir", default=f"/tmp/{task.name}_bench")
    parser.add_argument("--turn_s", type=_non_negative, default=0.0, help="take turns (s)")
    parser.add_argument("--steady_updates", type=int, default=0, help="steady-state A/B")
    parser.add_argument("--repeats", type=int, default=3, help="steady-state A/B repeats")
    parser.add_argument("--with_sb3_ftz", action="store_true", help="A/B: also SB3 + FTZ")
    parser.add_argument("--note", default="", help="a remark kept in the JSON")
    parser.add_argument("--env_steps", type=int, default=task.env_steps, help="smoke tests")
    parser.add_argument("--eval_interval", type=int, default=task.eval_interval)
    parser.add_argument("--report_only", action="store_true", help="RESULTS.md from the JSON")
    parser.add_argument("--no_results_md", action="store_true", help="leave RESULTS.md alone")
    default_json = os.path.join(report.RESULTS_DIR, f"{task.name}.json")
    parser.add_argument("--results_json", default=default_json)
    return parser.parse_args()


def main(task: SacTask, doc: str) -> None:
    """A SAC benchmark's command line: learning runs, steady-state A/B, or the report only."""
    args = parse_args(task, doc)
    task = dataclasses.replace(task, env_steps=args.env_steps, eval_interval=args.eval_interval)
    saved = report.read_json(args.results_json)
    saved.setdefault("info", {}).update({"note": args.note} if args.note else {})
    if args.report_only:
        _write(task, args, saved, steady_too=True)
        return
    os.makedirs(args.work_dir, exist_ok=True)
    if args.steady_updates:
        saved["steady"] = []
        frameworks = FRAMEWORKS + ("sb3_ftz",) * args.with_sb3_ftz
        for i in range(args.repeats):
            for fw in frameworks:
                saved["steady"].append(_speed(task, fw, i, args.steady_updates, args.work_dir))
                print(saved["steady"][-1], flush=True)
        _write(task, args, saved, steady_too=True)
        return
    saved["info"].update(runner.machine_info(), seeds=args.seeds, turn_s=args.turn_s)
    saved["runs"] = []
    for seed in args.seeds:
        saved["runs"] += seed_runs(task, seed, args.work_dir, args.turn_s)
        print(
            json.dumps([{k: v for k, v in r.items() if k != "evals"} for r in saved["runs"][-2:]])
        )
        _write(task, args, saved)


def _speed(task: SacTask, framework: str, seed: int, num_updates: int, work_dir: str) -> dict:
    """One steady-state run: ``alf``, ``sb3`` or ``sb3_ftz``."""
    start, load = runner.now(), runner.load_average()
    if framework == "alf":
        params = [f"TrainerConfig.initial_collect_steps={task.steady_starts}"]
        warmup = task.steady_starts + 200
        result = steady.measure(runner.REPO_DIR, task.conf, seed, warmup, num_updates, params)
    else:
        out = os.path.join(work_dir, f"speed_{framework}_{seed}.json")
        extra = ["--steady", num_updates] + ["--flush_denormal"] * (framework == "sb3_ftz")
        runner.run(_worker_cmd(task, seed, out, *extra), out + ".log")
        result = report.read_json(out)
    ms = {f"{k}_ms_per_update": 1e3 * result[f"{k}_s"] / num_updates for k in ("wall", "cpu")}
    return dict(
        framework=framework,
        seed=seed,
        updates=num_updates,
        **ms,
        start=start,
        load_start=load,
        end=runner.now(),
        load_end=runner.load_average(),
    )


def _write(task: SacTask, args, saved: dict, steady_too: bool = False) -> None:
    report.write_json(args.results_json, saved)
    if args.no_results_md:
        return
    if any(r["framework"] == "sb3" for r in saved.get("runs", [])):
        report.write_block(task.name, markdown(task, saved["runs"]))
    if steady_too and saved.get("steady"):
        report.write_block(task.name + "_steady", steady_markdown(task, saved["steady"]))


def _worker() -> None:
    parser = argparse.ArgumentParser(description="SB3 SAC in its own process")
    parser.add_argument("--task_json", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steady", type=int, default=0, help="steady-state updates")
    parser.add_argument("--flush_denormal", action="store_true")
    args = parser.parse_args()
    fields = report.read_json(args.task_json)
    task = SacTask(**dict(fields, seeds=tuple(fields["seeds"])))
    if args.steady:
        report.write_json(args.out, sb3_steady(task, args.seed, args.steady, args.flush_denormal))
    else:
        sb3_worker(task, args.seed, args.out)


if __name__ == "__main__":
    _worker()
