"""PPO, alf against Stable-Baselines3 with the same hyperparameters (``ppo_cart_pole``,
``ppo_halfcheetah``).

For each seed alf (its training CLI on the task's conf) and SB3 (this module run as a
worker) train in a fresh process each, alternating, one torch thread unless
``--num_threads``, and evaluate the deterministic policy on separate envs at the same env
steps. Per run: ``wall_s`` (the process, start-up included), ``eval_s``, ``train_s = wall_s
- eval_s``, ``steps_per_sec = env_steps / train_s``, ``loop_steps_per_sec`` (each
framework's own per-iteration rate: alf's ``time/env_steps_per_sec`` summary, SB3's
rollout + update time) and the eval curve ``[env_steps, average_return, train_time_s]``.
From the curve, the same way for both: ``steady_rate`` (median env steps/s between
evaluations, the first interval, with the start-up, left out) and ``startup_estimate``.
``--steady_iterations N`` instead alternates steady-state timings: ``N`` training
iterations after 2 untimed ones, process CPU time (alf: ``harness/steady.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile
import time
from functools import partial

from benchmarks.harness import report, runner, steady, tb

FRAMEWORKS = ("alf", "sb3")
fmt = partial(report.fmt, whole_from=1000)


@dataclasses.dataclass(frozen=True)
class PpoTask:
    """One PPO benchmark: ``sb3_spec`` holds the SB3 worker's env, eval and ``ppo`` settings."""

    name: str
    conf: str
    sb3_spec: dict
    num_env_steps: int
    seeds: tuple[int, ...]
    threshold: float | None = None
    conf_params: tuple[str, ...] = ()
    startup: bool = True  # whether the tables show the start-up estimate
    update_stats: bool = False  # whether the report shows PPO's approx KL and clip fraction


# -- the SB3 worker (``python -m benchmarks.harness.ppo --spec S --seed N --out O``) -------


def sb3_model(spec: dict, seed: int, env=None):
    """SB3's PPO for ``spec`` (``{"linear": v}`` schedules, ``activation_fn`` by name)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    kwargs = dict(spec["ppo"])
    for name in ("learning_rate", "clip_range"):
        if isinstance(kwargs[name], dict):
            kwargs[name] = partial(_linear, float(kwargs[name]["linear"]))
    policy_kwargs = dict(kwargs.pop("policy_kwargs", {}))
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = getattr(torch.nn, policy_kwargs["activation_fn"])
    env = env or make_vec_env(spec["env_name"], n_envs=spec["num_envs"], seed=seed)
    return PPO(env=env, seed=seed, device="cpu", policy_kwargs=policy_kwargs, **kwargs)


def _linear(start: float, progress_remaining: float) -> float:
    return start * progress_remaining


def sb3_worker(spec: dict, seed: int, out: str) -> None:
    """Train SB3, evaluating after each update that completes ``eval_every`` env steps and at
    the end on a separate env reseeded each time; write curve, rates and update stats."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(spec["torch_num_threads"] or torch.get_num_threads())
    eval_seed = seed + 999
    eval_env = make_vec_env(spec["env_name"], n_envs=spec["num_eval_envs"], seed=eval_seed)
    evals, rates, stats = [], [], []

    def evaluate(model):
        start = time.time()
        eval_env.seed(eval_seed)
        mean, _ = evaluate_policy(model, eval_env, spec["num_eval_episodes"], deterministic=True)
        evals.append(dict(env_steps=model.num_timesteps, average_return=float(mean)))
        evals[-1].update(duration_s=time.time() - start, end_time=time.time())

    class Iterations(BaseCallback):
        begin, begin_steps, last_eval = None, 0, 0

        def _on_rollout_start(self) -> None:  # the previous iteration's update is done
            logged = self.model.logger.name_to_value
            if "train/clip_fraction" in logged:
                names = ("approx_kl", "clip_fraction")
                stats.append({n: float(logged[f"train/{n}"]) for n in names})
            if self.begin is not None:
                steps = self.num_timesteps - self.begin_steps
                rates.append(steps / max(time.time() - self.begin, 1e-9))
            if self.num_timesteps // spec["eval_every"] > self.last_eval // spec["eval_every"]:
                evaluate(self.model)
                self.last_eval = self.num_timesteps
            self.begin, self.begin_steps = time.time(), self.num_timesteps

        def _on_step(self) -> bool:
            return True

    model = sb3_model(spec, seed)
    model.learn(spec["num_env_steps"], callback=Iterations())
    evaluate(model)
    result = dict(env_steps=model.num_timesteps, evals=evals, iteration_rates=rates)
    result.update(update_stats=stats, torch_num_threads=torch.get_num_threads())
    with open(out, "w") as f:
        json.dump(result, f)


# -- running and measuring ---------------------------------------------------------------


def run_alf(task: PpoTask, seed: int, work_dir: str, num_threads: int, steps: int) -> dict:
    """alf's CLI on the task's conf; results from its summaries and log."""
    root_dir = os.path.join(work_dir, f"alf_seed{seed}")
    shutil.rmtree(root_dir, ignore_errors=True)  # alf would resume an old run
    params = [f"TrainerConfig.num_env_steps={steps}", *task.conf_params]
    cmd = runner.alf_train_cmd(task.conf, root_dir, seed, params)
    cmd += ["--num_threads", str(num_threads)]
    turns = runner.run(cmd, root_dir + ".log")
    eval_dir, train_dir = os.path.join(root_dir, "eval"), os.path.join(root_dir, "train")
    returns = tb.scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    times = tb.scalars(eval_dir, "time/eval")  # written right after each evaluation
    evals = [(s, v, t - turns.start, d) for (s, _, v), (_, t, d) in zip(returns, times)]
    with open(root_dir + ".log") as f:
        checkpoint_s = sum(map(float, re.findall(r"Checkpoint .* written in ([0-9.]+)s", f.read())))
    kl = _per_step(tb.scalars(train_dir, "loss/approx_kl"))
    clip = _per_step(tb.scalars(train_dir, "loss/clip_fraction"))
    stats = [dict(approx_kl=kl[s], clip_fraction=clip[s]) for s in sorted(kl) if s in clip]
    loop = [v for _, _, v in tb.scalars(train_dir, "time/env_steps_per_sec")]
    result = _result("alf", seed, turns.wall_s, evals, evals[-1][0], loop, stats)
    return dict(result, torch_num_threads=num_threads, checkpoint_s=round(checkpoint_s, 3))


def _per_step(values) -> dict:
    """Mean per step (older alf wrote one value per minibatch)."""
    steps = {}
    for step, _, value in values:
        steps.setdefault(step, []).append(value)
    return {s: sum(v) / len(v) for s, v in steps.items()}


def run_sb3(task: PpoTask, seed: int, work_dir: str, num_threads: int, steps: int) -> dict:
    """The SB3 worker in its own process."""
    spec_path, out = (os.path.join(work_dir, f"sb3_seed{seed}.{x}") for x in ("spec", "json"))
    with open(spec_path, "w") as f:
        json.dump(dict(task.sb3_spec, num_env_steps=steps, torch_num_threads=num_threads), f)
    cmd = runner.module_cmd(__name__, "--spec", spec_path, "--seed", seed, "--out", out)
    turns = runner.run(cmd, out + ".log")
    with open(out) as f:
        worker = json.load(f)
    e = worker["evals"]
    evals = [
        (x["env_steps"], x["average_return"], x["end_time"] - turns.start, x["duration_s"])
        for x in e
    ]
    loop = worker["iteration_rates"]
    result = _result(
        "sb3", seed, turns.wall_s, evals, worker["env_steps"], loop, worker["update_stats"]
    )
    return dict(result, torch_num_threads=worker["torch_num_threads"])


def _result(framework, seed, wall, evals, env_steps, loop_rates, update_stats) -> dict:
    """A run's record from ``evals``: ``(env_steps, return, end since start, duration)``."""
    eval_s, curve = 0.0, []
    for steps, value, end, duration in evals:
        eval_s += duration
        curve.append([int(steps), round(float(value), 3), round(end - eval_s, 3)])
    train_s = wall - eval_s
    stats = dict(
        iterations=len(update_stats),
        approx_kl=report.median(s["approx_kl"] for s in update_stats),
        clip_fraction=report.median(s["clip_fraction"] for s in update_stats),
    )
    return dict(
        framework=framework,
        seed=seed,
        env_steps=int(env_steps),
        wall_s=round(wall, 3),
        eval_s=round(eval_s, 3),
        train_s=round(train_s, 3),
        steps_per_sec=round(env_steps / train_s, 1),
        loop_steps_per_sec=report.median(loop_rates),
        final_return=curve[-1][1] if curve else None,
        best_return=max(c[1] for c in curve) if curve else None,
        update_stats=stats,
        evals=curve,
    )


def steady_rate(run: dict) -> float | None:
    """Median env steps/s (wall − eval) between evaluations, the first one excluded."""
    e = run["evals"]
    return report.median((b[0] - a[0]) / (b[2] - a[2]) for a, b in zip(e, e[1:]) if b[2] > a[2])


def startup_estimate(run: dict) -> float | None:
    """Seconds to the first evaluation beyond what its steps take at the steady rate."""
    rate = steady_rate(run)
    return None if rate is None else run["evals"][0][2] - run["evals"][0][0] / rate


def first_reaching(run: dict, threshold: float | None) -> list | None:
    """The first eval point ``[env_steps, return, train_time_s]`` with return >= threshold."""
    if threshold is None:
        return None
    return next((e for e in run["evals"] if e[1] >= threshold), None)


def sb3_steady(spec: dict, seed: int, iterations: int) -> dict:
    """SB3's steady state: 2 untimed iterations, then ``iterations`` in one ``learn``."""
    import torch

    torch.set_num_threads(1)
    model = sb3_model(spec, seed)
    steps = iterations * model.n_steps * model.n_envs
    model.learn(2 * model.n_steps * model.n_envs)

    def train() -> int:
        model.learn(steps, reset_num_timesteps=False)
        return steps

    return steady.time_calls(train, 0, 1)


# -- tables ------------------------------------------------------------------------------


def summarize(runs: list[dict], threshold: float | None) -> dict:
    """Medians per framework, alf / SB3 ratios, and per-seed paired ratios."""
    summary = {}
    for fw in FRAMEWORKS:
        mine = [r for r in runs if r["framework"] == fw]
        hits = [h for h in (first_reaching(r, threshold) for r in mine) if h]
        med = {k: report.median(r[k] for r in mine) for k in ("wall_s", "train_s", "final_return")}
        med.update(steps_per_sec=report.median(r["steps_per_sec"] for r in mine))
        med.update(steady=report.median(map(steady_rate, mine)))
        med.update(startup=report.median(map(startup_estimate, mine)))
        med.update(loop=report.median(r["loop_steps_per_sec"] for r in mine))
        med.update(
            steps_to=report.median(h[0] for h in hits), time_to=report.median(h[2] for h in hits)
        )
        summary[fw] = dict(med, num_runs=len(mine), num_reached=len(hits))
    summary["ratio"] = {
        k: report.ratio(summary["alf"][k], summary["sb3"][k]) for k in summary["alf"]
    }
    by_seed = {(r["framework"], r["seed"]): r for r in runs}
    pairs = [
        (a, by_seed[("sb3", s)])
        for (fw, s), a in by_seed.items()
        if fw == "alf" and ("sb3", s) in by_seed
    ]
    summary["paired_speed"] = report.median(
        report.ratio(a["steps_per_sec"], b["steps_per_sec"]) for a, b in pairs
    )
    summary["paired_steady"] = report.median(
        report.ratio(steady_rate(a), steady_rate(b)) for a, b in pairs
    )
    summary["alf_faster"] = sum((steady_rate(a) or 0) > (steady_rate(b) or 0) for a, b in pairs)
    summary["num_pairs"] = len(pairs)
    return summary


def per_run_table(runs: list[dict], threshold: float | None, startup: bool = True) -> str:
    """One row per run, in the order they ran."""
    header = ["run", "framework", "seed", "env steps", "wall s", "eval s", "wall − eval s"]
    header += ["steps/s (wall − eval)", "steady steps/s (between evals)"]
    header += ["start-up s (est.)"] * startup + ["own per-iteration steps/s (median)"]
    if threshold is not None:
        header += [f"steps to ≥{threshold:g}", f"time to ≥{threshold:g} s"]
    rows = []
    for i, r in enumerate(runs, 1):
        row = [i, r["framework"], r["seed"]] + [
            fmt(r[k]) for k in ("env_steps", "wall_s", "eval_s", "train_s")
        ]
        row += [fmt(r["steps_per_sec"], 0), fmt(steady_rate(r), 0)]
        row += [fmt(startup_estimate(r))] * startup + [fmt(r["loop_steps_per_sec"], 0)]
        if threshold is not None:
            hit = first_reaching(r, threshold)
            row += [fmt(hit[0]), fmt(hit[2])] if hit else ["never", "-"]
        rows.append(row + [fmt(r["final_return"]), fmt(r["best_return"])])
    return report.table(header + ["final eval return", "best eval return"], rows)


def medians_table(summary: dict, threshold: float | None, startup: bool = True) -> str:
    """Both frameworks' medians and the alf / SB3 ratios, one metric per row."""
    names = [("wall_s", "wall time s"), ("train_s", "wall − eval s")]
    names += [
        ("steps_per_sec", "steps/s (wall − eval)"),
        ("steady", "steady steps/s (between evals)"),
    ]
    names += [("startup", "start-up s (est.)")] * startup + [("loop", "own per-iteration steps/s")]
    if threshold is not None:
        names += [("steps_to", f"env steps to eval ≥{threshold:g}")]
        names += [("time_to", f"wall − eval s to eval ≥{threshold:g}")]
    names += [("final_return", "final eval return")]
    alf, sb3, ratio = summary["alf"], summary["sb3"], summary["ratio"]
    rows = [[label, fmt(alf[k]), fmt(sb3[k]), fmt(ratio[k], 2)] for k, label in names]
    if threshold is not None:
        reached = [f"{s['num_reached']}/{s['num_runs']}" for s in (alf, sb3)]
        rows.append([f"seeds reaching ≥{threshold:g}", *reached, ""])
    return report.table(["median", "alf", "SB3", "alf / SB3"], rows)


def curves_table(runs: list[dict]) -> str:
    """Eval return by env steps, one column per run."""
    returns = [{e[0]: e[1] for e in r["evals"]} for r in runs]
    rows = [[fmt(s)] + [fmt(c.get(s)) for c in returns] for s in sorted(set().union(*returns))]
    return report.table(["env steps"] + [f"{r['framework']} s{r['seed']}" for r in runs], rows)


def update_stats_table(runs: list[dict]) -> str:
    """Median approx KL and clip fraction over each run's iterations."""
    rows = [[r["framework"], r["seed"]] for r in runs]
    for row, r in zip(rows, runs):
        s = r["update_stats"]
        row += [s["iterations"], fmt(s["approx_kl"], 4), fmt(s["clip_fraction"], 3)]
    header = ["framework", "seed", "iterations", "approx KL (median)", "clip fraction (median)"]
    return report.table(header, rows)


def markdown(task: PpoTask, record: dict) -> str:
    """The generated block: per-run and median tables, paired ratios, curves."""
    runs, s = record["runs"], summarize(record["runs"], task.threshold)
    notes = "".join(f"- Note: {n}\n" for n in record.get("notes", []))
    text = f"""{notes}
Per run:

{per_run_table(runs, task.threshold, task.startup)}

Medians and ratios (alf / SB3 of the medians; throughput > 1 and time < 1 favour alf):

{medians_table(s, task.threshold, task.startup)}

Per-seed paired ratios (alf / SB3, each alf run next to its SB3 run), median over \
{s["num_pairs"]} seeds: steps/s (wall − eval) {fmt(s["paired_speed"], 2)}, steady steps/s \
{fmt(s["paired_steady"], 2)}; alf had the higher steady rate in {s["alf_faster"]} of \
{s["num_pairs"]} pairs.

Eval AverageReturn by env steps:

{curves_table(runs)}
"""
    if task.update_stats:
        text += f"\nPPO update diagnostics:\n\n{update_stats_table(runs)}\n"
    return text


def steady_markdown(record: dict) -> str:
    """The steady-state timings: one row per run and the medians."""
    rows = []
    for i, r in enumerate(record["runs"], 1):
        steps = r["env_steps"]
        rows.append([i, r["framework"], fmt(steps), f"{r['wall_s']:.2f}", f"{r['cpu_s']:.2f}"])
        rows[-1] += [fmt(steps / r["wall_s"], 0), fmt(steps / r["cpu_s"], 0), r["load"]]
    header = ["run", "framework", "env steps", "wall s", "CPU s", "steps/s (wall)"]
    med = {
        (fw, k): report.median(
            r["env_steps"] / r[k] for r in record["runs"] if r["framework"] == fw
        )
        for fw in FRAMEWORKS
        for k in ("wall_s", "cpu_s")
    }
    cpu, wall = (med[("alf", k)] / med[("sb3", k)] for k in ("cpu_s", "wall_s"))
    return f"""{report.table(header + ["steps per CPU s", "load"], rows)}

Medians: steps per CPU second alf {med[("alf", "cpu_s")]:.0f}, SB3 {med[("sb3", "cpu_s")]:.0f} \
(alf / SB3 **{cpu:.2f}**); steps/s (wall) alf {med[("alf", "wall_s")]:.0f}, SB3 \
{med[("sb3", "wall_s")]:.0f} ({wall:.2f})."""


# -- command line ------------------------------------------------------------------------


def parse_args(task: PpoTask, doc: str):
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(task.seeds))
    parser.add_argument("--num_env_steps", type=int, default=task.num_env_steps)
    parser.add_argument("--quick", action="store_true", help="1 seed, 20k steps, no RESULTS.md")
    parser.add_argument("--num_threads", type=int, default=1, help="torch threads (0: default)")
    parser.add_argument("--work_dir", default=None, help="run directories (default: a temp dir)")
    parser.add_argument("--note", action="append", default=[], help="a remark for the JSON")
    parser.add_argument("--report_only", action="store_true", help="RESULTS.md from the JSON")
    parser.add_argument("--no_write", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument("--results_json", default=None, help="default: results/<task>.json")
    parser.add_argument("--steady_iterations", type=int, default=0, help="steady-state A/B")
    parser.add_argument("--repeats", type=int, default=3, help="A/B pairs (steady state)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.num_env_steps = args.seeds[:1], 20_000
    suffix = "_steady" if args.steady_iterations else ""
    suffix += "_quick" * args.quick + f"_threads{args.num_threads}" * (args.num_threads != 1)
    args.no_write = args.no_write or "_quick" in suffix or "_threads" in suffix
    args.name = task.name + suffix
    default = os.path.join(report.RESULTS_DIR, f"{args.name}.json")
    args.results_json = args.results_json or default
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix=f"{task.name}_")
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def main(task: PpoTask, doc: str) -> None:
    """A PPO benchmark's command line: learning runs, steady-state A/B, or the report only."""
    args = parse_args(task, doc)
    record = report.read_json(args.results_json) if args.report_only else None
    if record is None:
        command = " ".join(["python -m", f"benchmarks.{task.name}", *sys.argv[1:]])
        record = dict(command=command, machine=runner.machine_info(), runs=[])
        record.update(num_env_steps=args.num_env_steps, num_threads=args.num_threads)
    record["notes"] = record.get("notes", []) + [
        n for n in args.note if n not in record.get("notes", [])
    ]
    steady_run = args.steady_iterations or "_steady" in args.results_json
    render = steady_markdown if steady_run else partial(markdown, task)
    if args.report_only:
        _write(args, record, render)
        return
    for seed in range(args.repeats) if args.steady_iterations else args.seeds:
        for fw in FRAMEWORKS:
            print(f"[{fw} seed {seed}] load {runner.load_average()}", flush=True)
            record["runs"].append(_one_run(task, args, fw, seed))
            record.update(end=runner.now(), load_end=runner.load_average())
            print(
                json.dumps({k: v for k, v in record["runs"][-1].items() if k != "evals"}),
                flush=True,
            )
            _write(args, record, render)
    print(render(record))


def _one_run(task: PpoTask, args, fw: str, seed: int) -> dict:
    if not args.steady_iterations:
        run = run_alf if fw == "alf" else run_sb3
        return run(task, seed, args.work_dir, args.num_threads, args.num_env_steps)
    if fw == "alf":
        result = steady.measure(runner.REPO_DIR, task.conf, seed, 2, args.steady_iterations)
    else:
        out = os.path.join(args.work_dir, f"sb3_steady_{seed}.json")
        with open(out + ".spec", "w") as f:
            json.dump(task.sb3_spec, f)
        cmd = runner.module_cmd(__name__, "--spec", out + ".spec", "--seed", seed, "--out", out)
        runner.run(cmd + ["--steady", str(args.steady_iterations)], out + ".log")
        result = report.read_json(out)
    keep = ("env_steps", "wall_s", "cpu_s")
    return dict(framework=fw, seed=seed, **{k: result[k] for k in keep}, load=runner.load_average())


def _write(args, record: dict, render) -> None:
    report.write_json(args.results_json, record)
    if not args.no_write and {r["framework"] for r in record["runs"]} >= set(FRAMEWORKS):
        report.write_block(args.name, render(record))


def _worker() -> None:
    parser = argparse.ArgumentParser(description="SB3 PPO in its own process")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steady", type=int, default=0, help="steady-state iterations")
    args = parser.parse_args()
    spec = report.read_json(args.spec)
    if args.steady:
        report.write_json(args.out, sb3_steady(spec, args.seed, args.steady))
    else:
        sb3_worker(spec, args.seed, args.out)


if __name__ == "__main__":
    _worker()
