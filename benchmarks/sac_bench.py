"""Shared machinery of the SAC benchmarks: alf vs Stable-Baselines3, alternating runs.

A task (``SacTask``: ``sac_pendulum.py``, ``sac_halfcheetah.py``) names the env, the
alf conf, the budget, the evaluation schedule and SB3's hyperparameters; ``main(task)``
is the command line of its script. For every seed, alf (``python -m alf.bin.train`` on
the task's conf) and then SB3 (the task's script with ``--worker sb3``) train in fresh
subprocesses, one env, one gradient step per env step, one torch thread each (alf:
``TrainerConfig.num_threads`` = 1, its default; SB3: ``torch.set_num_threads(1)``).
Deterministic evaluation on separate envs every ``eval_interval`` env steps is timed and
excluded from throughput. Subprocesses run in this checkout (``cwd`` and ``PYTHONPATH``),
so they import its alf, not another installed copy. With ``--turn_s S`` alf and SB3 of a
seed run at the same time but take turns of ``S`` seconds on one core (``interleave.py``:
the waiting one is stopped), so slow spells of the shared machine, and any other load,
fall on both; their times are then running times (stopped periods removed).

Measured per run: ``wall_s`` (subprocess wall time, start-up included), ``eval_s``,
``train_s = wall_s - eval_s``, ``updates`` (gradient steps),
``updates_per_sec = updates / train_s``, ``steady_updates_per_sec`` (median over the
intervals between evaluations, which excludes start-up), the eval curve, the final and
best eval return, the load average at start and end, and (for tasks with a threshold) the
first env step at which eval AverageReturn reaches it. ``--steady_updates N`` instead
times ``N`` env steps with one update each after a warm-up, alternating alf and SB3.
Raw results go to ``benchmarks/results/<task>.json`` and a summary into
``benchmarks/RESULTS.md`` (only the task's ``##`` section is replaced).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from interleave import Turns, run_in_turns
from ppo_bench_utils import cpu_model

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
RESULTS_MD = os.path.join(BENCH_DIR, "RESULTS.md")

#: ``stable_baselines3.SAC`` keyword arguments at SB3's defaults (the zoo's entries
#: change a few: ``dict(SB3_SAC_DEFAULTS, learning_rate=..., learning_starts=...)``).
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
    """One SAC benchmark: what both frameworks run and how the report describes it.

    Attributes:
        name: results file stem (``benchmarks/results/<name>.json``).
        script: the task's script, run again as the SB3 and steady-state workers.
        heading: the ``##`` heading of the task's RESULTS.md section.
        env_name: the Gymnasium env id.
        conf: alf conf, relative to the repository root.
        env_steps: env steps per learning run.
        eval_interval: env steps between evaluations.
        num_eval_episodes: deterministic episodes per evaluation (alf: one env each).
        learning_starts: env steps before the first update (alf:
            ``initial_collect_steps``); alf makes ``env_steps - learning_starts + 1``
            updates, SB3 ``env_steps - learning_starts``.
        sb3_hyperparameters: keyword arguments of ``stable_baselines3.SAC``.
        setup_text: the report's bullet on hyperparameters and set-up; a ``str.format``
            template over the run info plus ``env_steps``, ``eval_interval``,
            ``num_eval_episodes``, ``learning_starts``.
        threshold: eval AverageReturn for "steps to threshold" columns (None: report
            the best eval return and the load per run instead).
        steady_learning_starts: ``learning_starts`` of the steady-state A/B runs, for
            both frameworks (None: ``learning_starts``).
    """

    name: str
    script: str
    heading: str
    env_name: str
    conf: str
    env_steps: int
    eval_interval: int
    num_eval_episodes: int
    learning_starts: int
    sb3_hyperparameters: dict
    setup_text: str
    threshold: float | None = None
    steady_learning_starts: int | None = None

    @property
    def steady_starts(self) -> int:
        if self.steady_learning_starts is None:
            return self.learning_starts
        return self.steady_learning_starts

    def fields(self) -> dict:
        return dict(
            env_steps=self.env_steps,
            eval_interval=self.eval_interval,
            num_eval_episodes=self.num_eval_episodes,
            learning_starts=self.learning_starts,
        )


# -- workers ---------------------------------------------------------------------------


def sb3_worker(task: SacTask, seed: int, out: str) -> None:
    """Train SB3 SAC in this process and write its eval curve and timings to ``out``."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)
    eval_env = gym.make(task.env_name)
    evals = []

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % task.eval_interval == 0:
                t0 = time.time()
                eval_env.reset(seed=seed + 999)
                mean, _ = evaluate_policy(
                    self.model, eval_env, n_eval_episodes=task.num_eval_episodes, deterministic=True
                )
                evals.append(  # wall-clock times: the caller maps them to running time
                    dict(
                        env_steps=self.num_timesteps,
                        average_return=float(mean),
                        eval_start=t0,
                        eval_end=time.time(),
                    )
                )
            return True

    model = SAC(
        "MlpPolicy", gym.make(task.env_name), seed=seed, device="cpu", **task.sb3_hyperparameters
    )
    model.learn(task.env_steps, callback=Evaluate())
    result = dict(
        evals=evals,
        updates=int(model._n_updates),
        torch_num_threads=torch.get_num_threads(),
        env_steps=int(model.num_timesteps),
    )
    with open(out, "w") as f:
        json.dump(result, f)


def _sb3_speed_model(task: SacTask, seed: int):
    import gymnasium as gym
    from stable_baselines3 import SAC

    hyperparameters = dict(task.sb3_hyperparameters, learning_starts=task.steady_starts)
    return SAC("MlpPolicy", gym.make(task.env_name), seed=seed, device="cpu", **hyperparameters)


def _alf_speed_algorithm(task: SacTask, seed: int, out: str):
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    root_dir = out + ".alf_root"
    if os.path.exists(root_dir):
        shutil.rmtree(root_dir)
    params = [
        f"TrainerConfig.root_dir={root_dir!r}",
        f"TrainerConfig.random_seed={seed}",
        f"TrainerConfig.initial_collect_steps={task.steady_starts}",
        "TrainerConfig.evaluate=False",
    ]
    common.parse_conf_file(os.path.join(REPO_DIR, task.conf), params, [])
    return PolicyTrainer(TrainerConfig()).algorithm  # sets the thread count too


def speed_worker(
    task: SacTask, framework: str, seed: int, num_updates: int, out: str, flush_denormal: bool
) -> None:
    """Steady-state speed: after a warm-up, time ``num_updates`` env steps, each with one
    gradient step, in this process (no evaluation, no start-up); wall and CPU time.
    ``flush_denormal`` (SB3 only; alf follows its ``TrainerConfig.flush_denormal``): run SB3
    with ``torch.set_flush_denormal(True)``, reported as framework ``sb3_ftz``."""
    import torch

    warmup = task.steady_starts + 200
    module_file = None
    if framework == "sb3":
        torch.set_num_threads(1)
        if flush_denormal:
            torch.set_flush_denormal(True)
            framework = "sb3_ftz"
        model = _sb3_speed_model(task, seed)
        model.learn(warmup)

        def train():
            model.learn(num_updates, reset_num_timesteps=False)
    else:
        import alf

        module_file = alf.__file__
        algorithm = _alf_speed_algorithm(task, seed, out)
        for _ in range(warmup):
            algorithm.train_iter()

        def train():
            for _ in range(num_updates):
                algorithm.train_iter()

    wall, cpu = time.time(), time.process_time()
    train()
    wall, cpu = time.time() - wall, time.process_time() - cpu
    result = dict(
        framework=framework,
        updates=num_updates,
        wall_ms_per_update=1e3 * wall / num_updates,
        cpu_ms_per_update=1e3 * cpu / num_updates,
        torch_num_threads=torch.get_num_threads(),
    )
    if module_file:
        result["alf_module"] = module_file
    with open(out, "w") as f:
        json.dump(result, f)


# -- runners ---------------------------------------------------------------------------


def _worker_cmd(task: SacTask, worker: str, seed: int, out: str, *extra: str) -> list[str]:
    script = os.path.join(REPO_DIR, task.script)
    cmd = [sys.executable, script, "--worker", worker, "--seed", str(seed), "--out", out]
    return cmd + list(extra)


def run_speed(task: SacTask, framework: str, seed: int, num_updates: int, work_dir: str) -> dict:
    """One steady-state run of ``framework``: ``alf``, ``sb3`` or ``sb3_ftz`` (SB3 with
    subnormal floats flushed to zero, like alf's default)."""
    out = os.path.join(work_dir, f"speed_{framework}_{seed}.json")
    extra = ["--flush_denormal"] if framework == "sb3_ftz" else []
    worker = "sb3_speed" if framework == "sb3_ftz" else f"{framework}_speed"
    cmd = _worker_cmd(task, worker, seed, out, "--steady_updates", str(num_updates), *extra)
    start, load = _now(), _load()
    _run(cmd, out + ".log")
    with open(out) as f:
        result = dict(json.load(f), seed=seed)
    return dict(result, start=start, load_start=load, end=_now(), load_end=_load())


def _scalars(event_dir: str, tag: str) -> list[tuple[int, float, float]]:
    """``[(step, wall_time, value)]`` of a tensorboard scalar."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(event_dir, size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags()["scalars"]:
        return []
    return [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]


@dataclasses.dataclass
class _Job:
    """One learning run: its command, its log file, and how to read its results once it
    ran (``collect(turns)``, with the run's ``Turns``: wall-clock times of the process are
    read as its running time)."""

    framework: str
    cmd: list[str]
    log_path: str
    collect: Callable[[Turns], dict]


def _alf_job(task: SacTask, seed: int, work_dir: str) -> _Job:
    """``alf.bin.train`` on the task's conf; results from its tensorboard summaries.

    A run directory left by an earlier benchmark run is removed first: alf would resume it.
    """
    root_dir = os.path.join(work_dir, f"alf_seed{seed}")
    if os.path.exists(root_dir):
        shutil.rmtree(root_dir)
    params = [
        # No mid-run checkpoint: it restarts the training env (cutting an episode);
        # the final checkpoint is still written.
        "TrainerConfig.num_checkpoints=1",
        f"TrainerConfig.num_env_steps={task.env_steps}",
        f"TrainerConfig.eval_interval={task.eval_interval}",
        f"TrainerConfig.num_eval_episodes={task.num_eval_episodes}",
        f"TrainerConfig.num_eval_environments={task.num_eval_episodes}",
        f"TrainerConfig.initial_collect_steps={task.learning_starts}",
    ]
    cmd = [sys.executable, "-m", "alf.bin.train", "--conf", os.path.join(REPO_DIR, task.conf)]
    cmd += ["--root_dir", root_dir, "--random_seed", str(seed), "--nostore_snapshot"]
    for param in params:
        cmd += ["--conf_param", param]

    def collect(turns: Turns) -> dict:
        eval_dir = os.path.join(root_dir, "eval")
        returns = _scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
        durations = _scalars(eval_dir, "time/eval")
        evals = [  # an event's time is when the eval ended
            dict(
                env_steps=int(s),
                average_return=float(v),
                eval_s=turns.running_s(t - d, t),
                end_s=turns.running_s(turns.start, t),
            )
            for (s, _, v), (_, t, d) in zip(returns, durations)
        ]
        env_steps = evals[-1]["env_steps"] if evals else task.env_steps
        updates = env_steps - task.learning_starts + 1
        result = _result(task, "alf", seed, turns.wall_s, evals, updates, 1)
        return dict(result, **_cpu(turns.cpu_s, updates))

    return _Job("alf", cmd, root_dir + ".log", collect)


def _sb3_job(task: SacTask, seed: int, work_dir: str) -> _Job:
    """This script's ``--worker sb3``; results from the JSON it writes."""
    out = os.path.join(work_dir, f"sb3_seed{seed}.json")
    cmd = _worker_cmd(task, "sb3", seed, out, "--env_steps", str(task.env_steps))
    cmd += ["--eval_interval", str(task.eval_interval)]

    def collect(turns: Turns) -> dict:
        with open(out) as f:
            worker = json.load(f)
        evals = [
            dict(
                env_steps=e["env_steps"],
                average_return=e["average_return"],
                eval_s=turns.running_s(e["eval_start"], e["eval_end"]),
                end_s=turns.running_s(turns.start, e["eval_end"]),
            )
            for e in worker["evals"]
        ]
        updates, num_threads = worker["updates"], worker["torch_num_threads"]
        result = _result(task, "sb3", seed, turns.wall_s, evals, updates, num_threads)
        return dict(result, **_cpu(turns.cpu_s, updates))

    return _Job("sb3", cmd, out + ".log", collect)


def seed_runs(task: SacTask, seed: int, work_dir: str, turn_s: float = 0.0):
    """Run alf and then SB3 on ``seed``; yield each result when it is ready.

    With ``turn_s > 0`` the two run at the same time taking turns of ``turn_s`` seconds
    on one core (``interleave.run_in_turns``), so a slow spell of the shared machine
    falls on both; their times are running times (stopped periods removed).
    """
    jobs = [_alf_job(task, seed, work_dir), _sb3_job(task, seed, work_dir)]
    if turn_s > 0:
        start, load = _now(), _load()
        all_turns = run_in_turns(
            [job.cmd for job in jobs],
            [job.log_path for job in jobs],
            turn_s,
            cwd=REPO_DIR,
            env=_subprocess_env(),
        )
        end = dict(end=_now(), load_end=_load())
        for job, turns in zip(jobs, all_turns):
            _check_exit(job.cmd, job.log_path, turns.returncode)
        for job, turns in zip(jobs, all_turns):
            yield dict(job.collect(turns), start=start, load_start=load, turn_s=turn_s, **end)
        return
    for job in jobs:
        start, load = _now(), _load()
        result = job.collect(_run(job.cmd, job.log_path))
        yield dict(result, start=start, load_start=load, end=_now(), load_end=_load())


def _cpu(cpu_s: float, updates: int) -> dict:
    """The run's CPU time (evaluation included) and updates per CPU second: less
    sensitive than wall time to other jobs on a shared machine."""
    return dict(cpu_s=round(cpu_s, 2), updates_per_cpu_sec=round(updates / cpu_s, 1))


def _subprocess_env() -> dict:
    """This checkout first on ``PYTHONPATH``: an editable install elsewhere must not win."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=REPO_DIR + (os.pathsep + path if path else ""))


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], log_path: str) -> Turns:
    """Run ``cmd`` alone: its start, end and CPU time (user + system) as a ``Turns``."""
    with open(log_path, "w") as log:
        start, cpu = time.time(), _children_cpu_s()
        proc = subprocess.run(
            cmd, cwd=REPO_DIR, env=_subprocess_env(), stdout=log, stderr=subprocess.STDOUT
        )
        end, cpu = time.time(), _children_cpu_s() - cpu
    _check_exit(cmd, log_path, proc.returncode)
    return Turns(start=start, end=end, cpu_s=cpu, returncode=proc.returncode)


def _check_exit(cmd: list[str], log_path: str, returncode: int) -> None:
    if returncode != 0:
        with open(log_path) as f:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{f.read()[-3000:]}")


def _result(task, framework, seed, wall, evals, updates, num_threads) -> dict:
    eval_s = sum(e["eval_s"] for e in evals)
    done = 0.0
    for e in evals:  # training time up to each evaluation (start-up included)
        done += e["eval_s"]
        e["train_time_s"] = round(e["end_s"] - done, 3)
    rates = [  # between evaluations after learning starts: one update per env step
        (b["env_steps"] - a["env_steps"]) / (b["train_time_s"] - a["train_time_s"])
        for a, b in zip(evals, evals[1:])
        if a["env_steps"] >= task.learning_starts
    ]
    threshold = task.threshold
    hit = None
    if threshold is not None:
        hit = next((e for e in evals if e["average_return"] >= threshold), None)
    return dict(
        framework=framework,
        seed=seed,
        wall_s=round(wall, 2),
        eval_s=round(eval_s, 2),
        train_s=round(wall - eval_s, 2),
        updates=updates,
        updates_per_sec=round(updates / (wall - eval_s), 1),
        steady_updates_per_sec=round(statistics.median(rates), 1) if rates else None,
        final_return=evals[-1]["average_return"] if evals else None,
        best_return=max(e["average_return"] for e in evals) if evals else None,
        steps_to_threshold=hit["env_steps"] if hit else None,
        time_to_threshold_s=hit["train_time_s"] if hit else None,
        torch_num_threads=num_threads,
        evals=evals,
    )


# -- report ----------------------------------------------------------------------------


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value, digits=1) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def _table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def _load_range(r: dict) -> str:
    if "load_start" not in r:
        return "-"
    return f"{r['load_start'][0]:.2f} → {r['load_end'][0]:.2f}"


def _run_columns(task: SacTask) -> list[tuple[str, object]]:
    """``(header, cell(run))`` of the per-run table."""
    columns = [
        ("framework", lambda r: r["framework"]),
        ("seed", lambda r: r["seed"]),
        ("wall s", lambda r: _fmt(r["wall_s"])),
        ("eval s", lambda r: _fmt(r["eval_s"])),
        ("wall − eval s", lambda r: _fmt(r["train_s"])),
        ("updates", lambda r: _fmt(r["updates"])),
        ("updates/s", lambda r: _fmt(r["updates_per_sec"])),
        ("steady updates/s", lambda r: _fmt(r["steady_updates_per_sec"])),
        ("updates / CPU s", lambda r: _fmt(r.get("updates_per_cpu_sec"))),
        ("final eval return", lambda r: _fmt(r["final_return"])),
    ]
    if task.threshold is None:
        return columns + [
            ("CPU s", lambda r: _fmt(r.get("cpu_s"))),
            ("best eval return", lambda r: _fmt(r.get("best_return"))),
            ("load avg (1 min) start → end", _load_range),
        ]
    threshold = f"{task.threshold:g}"
    return columns + [
        (f"≥ {threshold} reached", lambda r: "yes" if r["steps_to_threshold"] else "no"),
        (f"env steps to ≥ {threshold}", lambda r: _fmt(r["steps_to_threshold"])),
        (f"time to ≥ {threshold} s", lambda r: _fmt(r["time_to_threshold_s"])),
    ]


def _median_keys(task: SacTask) -> list[str]:
    keys = ["wall_s", "train_s", "updates_per_sec", "steady_updates_per_sec"]
    keys += ["updates_per_cpu_sec", "final_return"]
    if task.threshold is None:
        return keys + ["best_return", "cpu_s"]
    return keys + ["steps_to_threshold", "time_to_threshold_s"]


def _pairs(runs):
    return [
        (a, b)
        for a in runs
        for b in runs
        if a["framework"] == "alf" and b["framework"] == "sb3" and a["seed"] == b["seed"]
    ]


def summarize(task: SacTask, runs: list[dict]) -> dict:
    """Medians per framework, their ratios and the medians of per-seed paired ratios."""
    keys = _median_keys(task)
    med = {
        fw: {k: _median(r.get(k) for r in runs if r["framework"] == fw) for k in keys}
        for fw in ("alf", "sb3")
    }
    ratios = {
        k: med["alf"][k] / med["sb3"][k] if med["alf"][k] is not None and med["sb3"][k] else None
        for k in keys
    }
    pairs = _pairs(runs)
    paired = {
        k: _median(a[k] / b[k] for a, b in pairs if a.get(k) and b.get(k))
        for k in (
            "updates_per_sec",
            "steady_updates_per_sec",
            "updates_per_cpu_sec",
            "final_return",
            "wall_s",
        )
    }
    return dict(median=med, ratio=ratios, paired=paired, keys=keys)


def _curve_table(runs: list[dict]) -> str:
    curve_steps = sorted({e["env_steps"] for r in runs for e in r["evals"]})
    curve = [
        [_fmt(s)]
        + [
            _fmt(next((e["average_return"] for e in r["evals"] if e["env_steps"] == s), None))
            for r in runs
        ]
        for s in curve_steps
    ]
    return _table(["env steps"] + [f"{r['framework']} s{r['seed']}" for r in runs], curve)


def _threshold_text(task: SacTask, runs: list[dict]) -> str:
    reached = {
        fw: sum(1 for r in runs if r["framework"] == fw and r["steps_to_threshold"])
        for fw in ("alf", "sb3")
    }
    counts = {fw: sum(1 for r in runs if r["framework"] == fw) for fw in ("alf", "sb3")}
    return (
        f" Eval AverageReturn ≥ {task.threshold:g} within {task.env_steps:,} env\n"
        f"steps: alf {reached['alf']}/{counts['alf']} seeds, "
        f"SB3 {reached['sb3']}/{counts['sb3']}."
    )


def _targets_text(task: SacTask, runs: list[dict], summary: dict) -> str:
    """One sentence per issue-4 target, from the measured medians (no threshold tasks)."""
    med, ratio, paired = summary["median"], summary["ratio"], summary["paired"]
    if ratio["updates_per_sec"] is None or med["alf"]["final_return"] is None:
        return ""
    returns = {
        fw: [r["final_return"] for r in runs if r["framework"] == fw] for fw in ("alf", "sb3")
    }
    alf_final, sb3_final = med["alf"]["final_return"], med["sb3"]["final_return"]

    def verdict(value) -> str:
        return "-" if value is None else ("met" if value >= 1.3 else "not met")

    speed = ratio["updates_per_sec"]
    steady, cpu = ratio["steady_updates_per_sec"], ratio["updates_per_cpu_sec"]
    lines = [
        "",
        "Targets (issue 4), from the learning runs above:",
        "",
        f"- alf ≥ 1.3x SB3's updates/s: **{verdict(speed)}** on the issue's measure (median "
        f"updates/s, wall − eval, alf / SB3 = {_fmt(speed, 2)}; median of the per-seed "
        f"paired ratios {_fmt(paired['updates_per_sec'], 2)}). Steady updates/s between "
        f"evaluations: {_fmt(steady, 2)} ({verdict(steady)}); updates per CPU second: "
        f"{_fmt(cpu, 2)} ({verdict(cpu)}).",
        f"- Returns no worse than SB3: **{'met' if alf_final >= sb3_final else 'not met'}** "
        f"(median final eval return alf {_fmt(alf_final)} vs SB3 {_fmt(sb3_final)}; per "
        f"seed alf {', '.join(_fmt(v) for v in returns['alf'])}, SB3 "
        f"{', '.join(_fmt(v) for v in returns['sb3'])}; {len(returns['alf'])} alf and "
        f"{len(returns['sb3'])} SB3 runs).",
    ]
    return "\n".join(lines) + "\n"


def report(task: SacTask, runs: list[dict], info: dict) -> str:
    columns = _run_columns(task)
    per_run = [[i + 1] + [cell(r) for _, cell in columns] for i, r in enumerate(runs)]
    summary = summarize(task, runs)
    med, ratio = summary["median"], summary["ratio"]
    rows = [
        [k, _fmt(med["alf"][k]), _fmt(med["sb3"][k]), _fmt(ratio[k], 2)] for k in summary["keys"]
    ]
    paired = summary["paired"]
    paired_speed = _fmt(paired["updates_per_sec"], 2)
    definitions = _threshold_definition(task) + _cpu_definition()
    note = f"\n- **Note:** {info['note']}" if info.get("note") else ""
    setup = task.setup_text.format(**info, **task.fields())
    threshold = _threshold_text(task, runs) if task.threshold is not None else ""
    targets = _targets_text(task, runs, summary) if task.threshold is None else ""
    turns = f" --turn_s {info['turn_s']:g}" if info.get("turn_s") else ""
    return f"""
- Date: {info["start"]} (start) — {info["end"]} (end); load average at start
  {info["load_start"]}, at end {info["load_end"]}. Machine: {info["cpu"]}, `nproc` =
  {info["nproc"]}, **shared and busy** (other engineers' benchmarks and tests ran at the same
  time), so absolute rates move from run to run; {_order_text(info)}
- Software: Python {info["python"]}, torch {info["torch"]}, gymnasium {info["gymnasium"]},
  stable-baselines3 {info["sb3"]}. torch intra-op threads: **1 for both** (alf's
  `TrainerConfig.num_threads` default; SB3 `torch.set_num_threads(1)`).
- Command: `python {task.script} --seeds {" ".join(map(str, info["seeds"]))}{turns}`.
{setup}
- "updates/s" = gradient steps / (wall − eval), start-up (imports) included; "steady" =
  median over the intervals between evaluations (no start-up).{definitions}
- Raw data: `benchmarks/results/{task.name}.json`.{note}

Per run (in the order they ran):

{_table(["run"] + [h for h, _ in columns], per_run)}

Medians and alf / SB3 ratios:

{_table(["median", "alf", "SB3", "alf / SB3"], rows)}

Median of the per-seed paired ratios (alf / SB3): updates/s {paired_speed}, steady
updates/s {_fmt(paired["steady_updates_per_sec"], 2)}.{threshold}
{targets}
Eval AverageReturn by env steps:

{_curve_table(runs)}
"""


def _order_text(info: dict) -> str:
    if not info.get("turn_s"):
        return "alf and SB3 alternate per seed so the noise\n  falls on both."
    return (
        f"alf and SB3 of a seed ran at the same time,\n  taking turns of {info['turn_s']:g} s "
        "on one core (the other process stopped, `benchmarks/interleave.py`), so a slow\n"
        "  spell of the machine falls on both; wall, eval and updates/s are each process's "
        "running\n  time (stopped periods removed)."
    )


def _cpu_definition() -> str:
    return (
        '\n  "updates / CPU s" = updates / user + system CPU time of the run\'s process\n'
        '  (evaluation and start-up included; the "CPU s" column where shown), which other\n'
        "  jobs on the machine disturb less than wall time."
    )


def _threshold_definition(task: SacTask) -> str:
    if task.threshold is None:
        return ""
    t = f"{task.threshold:g}"
    return (
        f' "time to ≥{t}" = wall −\n'
        f"  eval seconds from process start to the end of the first eval with "
        f"AverageReturn ≥ {t}."
    )


def speed_report(task: SacTask, speeds: list[dict], info: dict) -> str:
    """The steady-state A/B table (``--steady_updates``)."""
    rows = []
    for i, r in enumerate(speeds):
        rows.append(
            [
                i + 1,
                r["framework"],
                _fmt(r["updates"]),
                _fmt(r["wall_ms_per_update"], 2),
                _fmt(1e3 / r["wall_ms_per_update"]),
                _fmt(r["cpu_ms_per_update"], 2),
            ]
        )
    med = {
        fw: {
            k: _median(r[k] for r in speeds if r["framework"] == fw)
            for k in ("wall_ms_per_update", "cpu_ms_per_update")
        }
        for fw in dict.fromkeys(r["framework"] for r in speeds)
    }
    wall = med["sb3"]["wall_ms_per_update"] / med["alf"]["wall_ms_per_update"]
    cpu = med["sb3"]["cpu_ms_per_update"] / med["alf"]["cpu_ms_per_update"]
    repeats = sum(r["framework"] == "alf" for r in speeds)
    ftz = ""
    if "sb3_ftz" in med:
        ftz_wall = med["sb3_ftz"]["wall_ms_per_update"] / med["alf"]["wall_ms_per_update"]
        ftz_cpu = med["sb3_ftz"]["cpu_ms_per_update"] / med["alf"]["cpu_ms_per_update"]
        ftz = f"""
`sb3_ftz` is SB3 run with `torch.set_flush_denormal(True)`, as alf runs by default
(`TrainerConfig.flush_denormal`): against it alf's median speed-up is **{ftz_wall:.2f}x** in
wall time and **{ftz_cpu:.2f}x** in CPU time per update, the part of the speed-up that does
not come from flushing subnormal floats (`--with_sb3_ftz`).
"""
    header = ["run", "framework", "timed updates", "wall ms/update", "updates/s", "CPU ms/update"]
    if task.steady_starts != task.learning_starts:
        header.append("load avg (1 min) start → end")
        for row, r in zip(rows, speeds):
            row.append(_load_range(r))
    starts = ""
    if task.steady_starts != task.learning_starts:
        starts = (
            f" (learning_starts lowered to {task.steady_starts:,} for both, alf\n"
            f"`TrainerConfig.initial_collect_steps={task.steady_starts}`, to shorten the "
            "warm-up)"
        )
    return f"""
Steady-state A/B ({info["speed_start"]} — {info["speed_end"]}; load average at start
{info["speed_load_start"]}, at end {info["speed_load_end"]};
`python {task.script} --steady_updates {speeds[0]["updates"]} --repeats
{repeats}{" --with_sb3_ftz" if ftz else ""}`): each run warms up for
{task.steady_starts + 200} env steps{starts},
then times env steps with one gradient step each, in the training process (no
evaluation, no start-up), alternating alf (`train_iter` of the conf's algorithm) and SB3
(`learn`). CPU time is the process's own, so it is less sensitive to other jobs than
wall time.

{_table(header, rows)}

Median alf speed-up over SB3: **{wall:.2f}x** in wall time per update, **{cpu:.2f}x** in CPU
time per update. Target (issue 4: ≥ 1.3x SB3's updates/s) in this steady-state comparison:
**{"met" if min(wall, cpu) >= 1.3 else "not met"}**.
{ftz}"""


def replace_section(heading: str, body: str, path: str = RESULTS_MD) -> None:
    """Replace (or append) the ``heading`` section of ``path``, re-reading it first."""
    text = "# Benchmark results\n"
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    lines = text.splitlines()
    section = [heading, *body.rstrip("\n").splitlines(), ""]
    if heading in lines:
        begin = lines.index(heading)
        end = next(
            (i for i in range(begin + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        lines[begin:end] = section
    else:
        if lines and lines[-1].strip():
            lines.append("")
        lines += section
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")
    os.replace(path + ".tmp", path)


def _machine() -> dict:
    import gymnasium
    import stable_baselines3
    import torch

    return dict(
        cpu=cpu_model(),
        nproc=os.cpu_count(),
        python=platform.python_version(),
        torch=torch.__version__,
        gymnasium=gymnasium.__version__,
        sb3=stable_baselines3.__version__,
    )


def _alf_checkout() -> dict:
    """Which alf the subprocesses import (same ``cwd`` and env) and this checkout's commit."""
    probe = subprocess.run(
        [sys.executable, "-c", "import alf; print(alf.__file__)"],
        cwd=REPO_DIR,
        env=_subprocess_env(),
        capture_output=True,
        text=True,
    )
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_DIR, capture_output=True, text=True
    )
    return dict(alf_module=probe.stdout.strip(), alf_commit=commit.stdout.strip())


# -- command line ----------------------------------------------------------------------


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (0: one run after the other), got {text}")
    return value


def parse_args(task: SacTask, doc: str, default_seeds: list[int]):
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=default_seeds)
    parser.add_argument("--work_dir", default=f"/tmp/{task.name}_bench")
    parser.add_argument(
        "--worker", choices=["sb3", "sb3_speed", "alf_speed"], help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--steady_updates",
        type=int,
        default=0,
        help="instead of learning runs: time this many updates per run in steady state",
    )
    parser.add_argument("--repeats", type=int, default=3, help="A/B pairs of --steady_updates")
    parser.add_argument(
        "--turn_s",
        type=_non_negative,
        default=0.0,
        help="run alf and SB3 of a seed at the same time, taking turns of this many seconds "
        "on one core (interleave.py); 0: one after the other",
    )
    parser.add_argument(
        "--with_sb3_ftz",
        action="store_true",
        help="steady A/B: also time SB3 with subnormal floats flushed to zero (alf's default)",
    )
    parser.add_argument("--flush_denormal", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--note", default="", help="a remark printed with the results")
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument(
        "--env_steps",
        type=int,
        default=task.env_steps,
        help=f"env steps per run (smoke tests only; the report assumes {task.env_steps:,})",
    )
    parser.add_argument(
        "--eval_interval",
        type=int,
        default=task.eval_interval,
        help="env steps between evaluations (smoke tests only)",
    )
    parser.add_argument(
        "--report_only",
        action="store_true",
        help="only rewrite the RESULTS.md section from the saved JSON (and --note, if given)",
    )
    parser.add_argument(
        "--no_results_md", action="store_true", help="do not touch benchmarks/RESULTS.md"
    )
    parser.add_argument(
        "--results_json",
        default=os.path.join(BENCH_DIR, "results", f"{task.name}.json"),
        help="where the raw results go (smoke tests: a scratch file)",
    )
    parser.add_argument(
        "--results_md", default=RESULTS_MD, help="the results table to update (default: ours)"
    )
    return parser.parse_args()


def main(task: SacTask, doc: str, default_seeds: list[int]) -> None:
    args = parse_args(task, doc, default_seeds)
    task = dataclasses.replace(task, env_steps=args.env_steps, eval_interval=args.eval_interval)
    if args.worker == "sb3":
        sb3_worker(task, args.seed, args.out)
        return
    if args.worker in ("sb3_speed", "alf_speed"):
        framework = args.worker.split("_")[0]
        speed_worker(task, framework, args.seed, args.steady_updates, args.out, args.flush_denormal)
        return
    if args.report_only:
        saved = _saved(args)
        if args.note:
            saved["info"]["note"] = args.note
        _write(task, args, saved["runs"], saved["info"], saved.get("steady"))
        return
    os.makedirs(args.work_dir, exist_ok=True)
    if args.steady_updates:
        steady_main(task, args)
        return
    saved = _saved(args)
    info = dict(_machine(), seeds=args.seeds, start=_now(), load_start=_load(), note=args.note)
    info.update(_alf_checkout())
    # Keep an earlier steady-state A/B's description with its table.
    info.update({k: v for k, v in saved.get("info", {}).items() if k.startswith("speed_")})
    print(f"alf imported from {info['alf_module']} (commit {info['alf_commit']})", flush=True)
    info["turn_s"] = args.turn_s
    runs = []
    for seed in args.seeds:
        for result in seed_runs(task, seed, args.work_dir, args.turn_s):
            runs.append(result)
            print(
                f"{result['framework']} seed {seed}: {result['updates_per_sec']} updates/s, "
                f"final {result['final_return']}",
                flush=True,
            )
            info.update(end=_now(), load_end=_load())
            _write(task, args, runs, info)


def steady_main(task: SacTask, args) -> None:
    """Alternate steady-state speed runs; add their table to the saved results."""
    info = dict(speed_start=_now(), speed_load_start=_load())
    speeds = []
    frameworks = ("alf", "sb3", "sb3_ftz") if args.with_sb3_ftz else ("alf", "sb3")
    for i in range(args.repeats):
        for framework in frameworks:
            speeds.append(run_speed(task, framework, i, args.steady_updates, args.work_dir))
            print(speeds[-1], flush=True)
    info.update(speed_end=_now(), speed_load_end=_load())
    saved = _saved(args)
    saved.setdefault("info", {}).update(info)
    if args.note:
        saved["info"]["note"] = args.note
    _write(task, args, saved.get("runs", []), saved["info"], speeds)


def _saved(args) -> dict:
    if os.path.exists(args.results_json):
        with open(args.results_json) as f:
            return json.load(f)
    return {}


def _write(task: SacTask, args, runs, info, speeds=None) -> None:
    path = args.results_json
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if speeds is None:
        speeds = _saved(args).get("steady")
    with open(path + ".tmp", "w") as f:
        json.dump(dict(info=info, runs=runs, steady=speeds or []), f, indent=1)
    os.replace(path + ".tmp", path)
    if args.no_results_md or not any(r["framework"] == "sb3" for r in runs):
        return
    body = report(task, runs, info)
    if speeds:
        body += speed_report(task, speeds, info)
    replace_section(task.heading, body, args.results_md)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]
