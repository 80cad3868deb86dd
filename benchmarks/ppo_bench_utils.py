"""Shared pieces of the PPO benchmarks (``ppo_cart_pole.py``, ``ppo_halfcheetah.py``).

Both frameworks are trained in a fresh subprocess each, so both pay the same Python
start-up and import cost, and are measured the same way from the outside:

* ``wall_s``: wall time of the subprocess (start to exit).
* ``eval_s``: time spent in periodic evaluation (alf: its ``time/eval`` summaries;
  SB3: timed by ``sb3_ppo_worker.py``'s callback). ``train_s = wall_s - eval_s``.
* ``steps_per_sec = env_steps / train_s`` (collection + updates + start-up).
* ``loop_steps_per_sec``: median per-iteration rate each framework reports from
  inside its loop (alf: its ``time/env_steps_per_sec``, written on summary iterations
  only; SB3: rollout + update time of every iteration, timed by the worker).
* the eval curve ``[(env_steps, average_return, seconds_since_start_minus_eval)]``.
* ``steady_rate``: measured the same way for both from the eval curve: the median
  over the intervals between consecutive evaluations (the first, which holds the
  start-up, excluded) of env steps / (wall − eval) seconds; ``startup_estimate``: the
  time to the first evaluation minus what its steps take at the steady rate.

A run's results are a plain dict, so they go straight into the JSON files.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
RESULTS_MD = os.path.join(BENCH_DIR, "RESULTS.md")
RESULTS_DIR = os.path.join(BENCH_DIR, "results")
SB3_WORKER = os.path.join(BENCH_DIR, "sb3_ppo_worker.py")

_CKPT_LINE = re.compile(r"Checkpoint .* written in ([0-9.]+)s")


# -- machine ---------------------------------------------------------------------------


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def now() -> str:
    """The output of ``date``."""
    return subprocess.run(["date"], capture_output=True, text=True).stdout.strip()


def alf_version() -> str:
    """The repository's commit, marked when the working tree has uncommitted changes."""

    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO_DIR, capture_output=True, text=True).stdout

    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return commit + (" + uncommitted changes" if git("status", "--porcelain").strip() else "")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor()


def machine_info() -> dict:
    """Date, CPU, core count, load and library versions (for the results header)."""
    import gymnasium
    import stable_baselines3
    import torch

    return {
        "date": now(),
        "iso_date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "nproc": int(subprocess.run(["nproc"], capture_output=True, text=True).stdout),
        "python": platform.python_version(),
        "alf": alf_version(),
        "torch": torch.__version__,
        "torch_default_num_threads": torch.get_num_threads(),
        "gymnasium": gymnasium.__version__,
        "stable_baselines3": stable_baselines3.__version__,
    }


# -- running one training -------------------------------------------------------------


def _run(cmd: list[str], log_path: str) -> tuple[float, float, float]:
    """Run ``cmd`` with output to ``log_path``; return (start, end, wall seconds)."""
    with open(log_path, "w") as log:
        start = time.time()
        proc = subprocess.run(cmd, cwd=REPO_DIR, stdout=log, stderr=subprocess.STDOUT)
        end = time.time()
    if proc.returncode != 0:
        with open(log_path) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{tail}")
    return start, end, end - start


def run_alf(conf: str, root_dir: str, seed: int, conf_params: list[str], num_threads: int) -> dict:
    """Train with ``python -m alf.bin.train`` and read the results from its summaries.

    ``num_threads`` goes to ``--num_threads`` (0: torch's default). A ``root_dir``
    left by an earlier benchmark run is removed first: alf would resume from it.
    """
    if os.path.exists(root_dir):
        shutil.rmtree(root_dir)
    cmd = [
        sys.executable,
        "-m",
        "alf.bin.train",
        "--conf",
        conf,
        "--root_dir",
        root_dir,
        "--random_seed",
        str(seed),
        "--num_threads",
        str(num_threads),
    ]
    for param in conf_params:
        cmd += ["--conf_param", param]
    log_path = root_dir.rstrip("/") + ".log"
    start, _, wall = _run(cmd, log_path)
    evals = _alf_evals(os.path.join(root_dir, "eval"), start)
    with open(log_path) as f:
        checkpoint_s = sum(float(m.group(1)) for m in _CKPT_LINE.finditer(f.read()))
    loop_rates = [
        value for _, _, value in _scalars(os.path.join(root_dir, "train"), "time/env_steps_per_sec")
    ]
    steps = _scalars(os.path.join(root_dir, "train"), "Metrics/EnvironmentSteps")
    env_steps = evals[-1]["env_steps"] if evals else int(steps[-1][2])
    return _result(
        "alf",
        seed,
        wall,
        evals,
        env_steps,
        loop_rates,
        torch_num_threads=num_threads,
        checkpoint_s=round(checkpoint_s, 3),
        log=log_path,
        root_dir=root_dir,
    )


def run_sb3(spec: dict, seed: int, out_path: str) -> dict:
    """Train with ``sb3_ppo_worker.py`` (``spec``: env, hyperparameters, budget, eval)."""
    spec_path = out_path + ".spec.json"
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=1)
    cmd = [sys.executable, SB3_WORKER, "--spec", spec_path, "--seed", str(seed), "--out", out_path]
    start, _, wall = _run(cmd, out_path + ".log")
    with open(out_path) as f:
        worker = json.load(f)
    evals = []
    eval_so_far = 0.0
    for e in worker["evals"]:
        eval_so_far += e["duration_s"]
        evals.append(
            _eval_point(
                e["env_steps"],
                e["average_return"],
                e["end_time"] - start,
                e["duration_s"],
                eval_so_far,
            )
        )
    return _result(
        "sb3",
        seed,
        wall,
        evals,
        worker["env_steps"],
        worker["iteration_rates"],
        torch_num_threads=worker["torch_num_threads"],
        log=out_path + ".log",
        update_stats=worker.get("train_stats", []),
    )


def _eval_point(env_steps, average_return, since_start_s, duration_s, eval_so_far_s) -> dict:
    return {
        "env_steps": int(env_steps),
        "average_return": round(float(average_return), 3),
        "eval_s": round(duration_s, 4),
        # Training time to this point: wall time since the subprocess started, minus
        # the time spent evaluating up to and including this evaluation.
        "train_time_s": round(since_start_s - eval_so_far_s, 3),
    }


def _scalars(event_dir: str, tag: str) -> list[tuple[int, float, float]]:
    """``[(step, wall_time, value)]`` of one tensorboard scalar tag (empty if absent)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(event_dir, size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags()["scalars"]:
        return []
    return [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]


def _alf_evals(eval_dir: str, start: float) -> list[dict]:
    """alf's eval curve; ``time/eval`` is written right after each evaluation."""
    returns = _scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    durations = _scalars(eval_dir, "time/eval")
    if len(returns) != len(durations):
        raise RuntimeError(f"{eval_dir}: {len(returns)} eval returns, {len(durations)} times")
    evals = []
    eval_so_far = 0.0
    for (env_steps, _, value), (_, end_time, duration) in zip(returns, durations):
        eval_so_far += duration
        evals.append(_eval_point(env_steps, value, end_time - start, duration, eval_so_far))
    return evals


def _result(framework, seed, wall, evals, env_steps, loop_rates, **extra) -> dict:
    eval_s = sum(e["eval_s"] for e in evals)
    train_s = wall - eval_s
    return {
        "framework": framework,
        "seed": seed,
        "env_steps": int(env_steps),
        "wall_s": round(wall, 3),
        "eval_s": round(eval_s, 3),
        "train_s": round(train_s, 3),
        "steps_per_sec": round(env_steps / train_s, 1),
        "loop_steps_per_sec": round(statistics.median(loop_rates), 1) if loop_rates else None,
        "final_return": evals[-1]["average_return"] if evals else None,
        "best_return": max(e["average_return"] for e in evals) if evals else None,
        "evals": evals,
        **extra,
    }


def steady_rate(run: dict) -> float | None:
    """Median env steps/s over the intervals between evaluations (see the module doc)."""
    evals = run["evals"]
    rates = [
        (b["env_steps"] - a["env_steps"]) / (b["train_time_s"] - a["train_time_s"])
        for a, b in zip(evals, evals[1:])
        if b["train_time_s"] > a["train_time_s"]
    ]
    return statistics.median(rates) if rates else None


def startup_estimate(run: dict) -> float | None:
    """Seconds to the first evaluation beyond what its steps take at the steady rate."""
    rate = steady_rate(run)
    if rate is None:
        return None
    first = run["evals"][0]
    return first["train_time_s"] - first["env_steps"] / rate


def first_reaching(run: dict, threshold: float) -> dict | None:
    """The first eval point with ``average_return >= threshold`` (None if never)."""
    return next((e for e in run["evals"] if e["average_return"] >= threshold), None)


# -- tables ------------------------------------------------------------------------------


def median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def fmt(value, digits: int = 1) -> str:
    """A table cell: ``-`` for None, thousands separators for big numbers."""
    if value is None:
        return "-"
    if isinstance(value, int) or (isinstance(value, float) and abs(value) >= 1000):
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -- output ------------------------------------------------------------------------------


def write_json(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def replace_section(heading: str, body: str, path: str = RESULTS_MD) -> None:
    """Put ``heading`` + ``body`` into ``path``, replacing only that ``## `` section.

    The file is re-read right before writing; every other section (other engineers'
    benchmarks) is kept as it is. A missing section is appended.
    """
    text = "# Benchmark results\n"
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    lines = text.splitlines()
    section = [heading, "", *body.strip("\n").splitlines(), ""]
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
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")
    os.replace(tmp, path)


# -- summaries shared by the PPO benchmarks -------------------------------------------

FRAMEWORKS = ("alf", "sb3")


def summarize(runs: list[dict], threshold: float | None) -> dict:
    """Medians per framework and alf/SB3 ratios (of medians, and median of paired ratios)."""
    summary = {}
    for fw in FRAMEWORKS:
        mine = [r for r in runs if r["framework"] == fw]
        hits = [first_reaching(r, threshold) for r in mine] if threshold is not None else []
        summary[fw] = {
            "num_runs": len(mine),
            "wall_s": median(r["wall_s"] for r in mine),
            "train_s": median(r["train_s"] for r in mine),
            "steps_per_sec": median(r["steps_per_sec"] for r in mine),
            "loop_steps_per_sec": median(r["loop_steps_per_sec"] for r in mine),
            "steady_steps_per_sec": median(steady_rate(r) for r in mine),
            "startup_s": median(startup_estimate(r) for r in mine),
            "final_return": median(r["final_return"] for r in mine),
            "num_reached": sum(h is not None for h in hits),
            "steps_to_threshold": median(h["env_steps"] for h in hits if h),
            "time_to_threshold_s": median(h["train_time_s"] for h in hits if h),
        }
    alf, sb3 = summary["alf"], summary["sb3"]
    keys = [
        "wall_s",
        "train_s",
        "steps_per_sec",
        "loop_steps_per_sec",
        "steady_steps_per_sec",
        "startup_s",
        "steps_to_threshold",
        "time_to_threshold_s",
        "final_return",
    ]
    summary["alf_over_sb3"] = {k: ratio(alf[k], sb3[k]) for k in keys}
    pairs = list(_pairs(runs))
    summary["paired_steps_per_sec_ratio"] = median(
        ratio(a["steps_per_sec"], b["steps_per_sec"]) for a, b in pairs
    )
    summary["paired_steady_ratio"] = median(ratio(steady_rate(a), steady_rate(b)) for a, b in pairs)
    summary["pairs_alf_faster"] = sum(
        (steady_rate(a) or 0) > (steady_rate(b) or 0) for a, b in pairs
    )
    summary["num_pairs"] = len(pairs)
    return summary


def _pairs(runs):
    by_key = {(r["framework"], r["seed"]): r for r in runs}
    for seed in sorted({r["seed"] for r in runs}):
        if ("alf", seed) in by_key and ("sb3", seed) in by_key:
            yield by_key[("alf", seed)], by_key[("sb3", seed)]


def per_run_table(runs: list[dict], threshold: float | None, startup: bool = True) -> str:
    """One row per run, in the order they ran."""
    header = [
        "run",
        "framework",
        "seed",
        "env steps",
        "wall s",
        "eval s",
        "wall − eval s",
        "steps/s (wall − eval)",
        "steady steps/s (between evals)",
        "start-up s (est.)",
        "own per-iteration steps/s (median)",
    ]
    if not startup:
        header.remove("start-up s (est.)")
    if threshold is not None:
        header += [f"steps to ≥{threshold:g}", f"time to ≥{threshold:g} s"]
    header += ["final eval return", "best eval return"]
    rows = []
    for i, r in enumerate(runs, 1):
        row = [
            i,
            r["framework"],
            r["seed"],
            fmt(r["env_steps"]),
            fmt(r["wall_s"]),
            fmt(r["eval_s"]),
            fmt(r["train_s"]),
            fmt(r["steps_per_sec"], 0),
            fmt(steady_rate(r), 0),
            *([fmt(startup_estimate(r))] if startup else []),
            fmt(r["loop_steps_per_sec"], 0),
        ]
        if threshold is not None:
            hit = first_reaching(r, threshold)
            row += [
                fmt(hit["env_steps"]) if hit else "never",
                fmt(hit["train_time_s"]) if hit else "-",
            ]
        row += [fmt(r["final_return"]), fmt(r["best_return"])]
        rows.append(row)
    return markdown_table(header, rows)


def medians_table(summary: dict, threshold: float | None, startup: bool = True) -> str:
    """Medians of both frameworks and the alf/SB3 ratios, one metric per row."""
    names = [
        ("wall_s", "wall time s"),
        ("train_s", "wall − eval s"),
        ("steps_per_sec", "steps/s (wall − eval)"),
        ("steady_steps_per_sec", "steady steps/s (between evals)"),
        ("startup_s", "start-up s (est.)"),
        ("loop_steps_per_sec", "own per-iteration steps/s"),
    ]
    if not startup:
        names = [n for n in names if n[0] != "startup_s"]
    if threshold is not None:
        names += [
            ("steps_to_threshold", f"env steps to eval ≥{threshold:g}"),
            ("time_to_threshold_s", f"wall − eval s to eval ≥{threshold:g}"),
        ]
    names += [("final_return", "final eval return")]
    rows = [
        [label, fmt(summary["alf"][k]), fmt(summary["sb3"][k]), fmt(summary["alf_over_sb3"][k], 2)]
        for k, label in names
    ]
    if threshold is not None:
        rows.append(
            [
                f"seeds reaching ≥{threshold:g}",
                f"{summary['alf']['num_reached']}/{summary['alf']['num_runs']}",
                f"{summary['sb3']['num_reached']}/{summary['sb3']['num_runs']}",
                "",
            ]
        )
    return markdown_table(["median", "alf", "SB3", "alf / SB3"], rows)


def eval_curves_table(runs: list[dict]) -> str:
    """Eval return by env steps, one column per run."""
    steps = sorted({e["env_steps"] for r in runs for e in r["evals"]})
    header = ["env steps"] + [f"{r['framework']} s{r['seed']}" for r in runs]
    rows = []
    for s in steps:
        row = [fmt(s)]
        for r in runs:
            value = next((e["average_return"] for e in r["evals"] if e["env_steps"] == s), None)
            row.append(fmt(value))
        rows.append(row)
    return markdown_table(header, rows)


# -- the driver shared by the PPO benchmarks ------------------------------------------


def add_common_args(parser, default_seeds: list[int], full_steps: int) -> None:
    """``--seeds --num_env_steps --quick --num_threads --work_dir --no_write --report_only``."""
    parser.add_argument("--seeds", type=int, nargs="+", default=default_seeds)
    parser.add_argument(
        "--num_env_steps",
        type=int,
        default=None,
        help=f"training budget (default {full_steps:,}; 20k with --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1 seed, 20k env steps, RESULTS.md untouched",
    )
    parser.add_argument(
        "--num_threads",
        type=int,
        default=1,
        help="torch intra-op threads of BOTH frameworks (alf --num_threads, "
        "SB3 torch.set_num_threads); 0: torch's default. 1 (alf's "
        "default) unless comparing; only 1 updates RESULTS.md",
    )
    parser.add_argument(
        "--work_dir", default=None, help="where run directories and logs go (default: a temp dir)"
    )
    parser.add_argument("--no_write", action="store_true", help="do not touch RESULTS.md")
    parser.add_argument(
        "--note",
        action="append",
        default=[],
        help="a remark to print in the RESULTS.md section (repeatable; kept in the JSON)",
    )
    parser.add_argument(
        "--report_only",
        action="store_true",
        help="rewrite the RESULTS.md section from the saved JSON, no training",
    )


def finish_args(args, name: str, full_steps: int):
    """Apply ``--quick``; choose the JSON file (suffixed unless the main configuration)."""
    if args.quick:
        args.seeds = args.seeds[:1]
    if args.num_env_steps is None:
        args.num_env_steps = 20_000 if args.quick else full_steps
    suffix = "_quick" if args.quick else ""
    if args.num_threads != 1:
        suffix += f"_threads{args.num_threads}"
    args.no_write = args.no_write or bool(suffix)
    args.json_path = os.path.join(RESULTS_DIR, f"{name}{suffix}.json")
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix=f"{name}_")
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def new_record(args, name: str, **extra) -> dict:
    return {
        "benchmark": name,
        "command": " ".join(["python", f"benchmarks/{name}.py", *sys.argv[1:]]),
        "machine": machine_info(),
        "load_start": load_average(),
        "num_env_steps": args.num_env_steps,
        "num_threads": args.num_threads,
        "work_dir": args.work_dir,
        "runs": [],
        **extra,
    }


def run_all(args, record: dict, report) -> None:
    """Alternate alf and SB3 per seed; save the JSON after every run, ``report`` after each seed.

    ``record`` holds ``alf_conf``, ``alf_conf_params`` and ``sb3_spec``.
    """
    for seed in args.seeds:
        for framework in FRAMEWORKS:
            print(f"[{framework} seed {seed}] load {load_average()}", flush=True)
            name = os.path.join(args.work_dir, f"{framework}_seed{seed}")
            if framework == "alf":
                run = run_alf(
                    record["alf_conf"], name, seed, record["alf_conf_params"], args.num_threads
                )
            else:
                run = run_sb3(record["sb3_spec"], seed, name + ".json")
            record["runs"].append(run)
            print(
                f"[{framework} seed {seed}] wall {run['wall_s']:.1f}s, "
                f"{run['steps_per_sec']:.0f} steps/s, final return {run['final_return']}",
                flush=True,
            )
            write_json(args.json_path, record)
        report(args, record)


def paired_text(summary: dict) -> str:
    """One sentence on the per-seed alf/SB3 throughput ratios."""
    return (
        f"Per-seed paired ratios (alf / SB3, each alf run next to its SB3 run), median over "
        f"{summary['num_pairs']} seeds: steps/s (wall − eval) "
        f"{fmt(summary['paired_steps_per_sec_ratio'], 2)}, steady steps/s "
        f"{fmt(summary['paired_steady_ratio'], 2)}; alf had the higher steady rate in "
        f"{summary['pairs_alf_faster']} of {summary['num_pairs']} pairs."
    )


def add_notes(record: dict, notes: list[str]) -> None:
    """Keep ``--note`` remarks in the record (once each)."""
    record.setdefault("notes", [])
    record["notes"] += [n for n in notes if n not in record["notes"]]


def notes_text(record: dict) -> str:
    """The record's notes as markdown bullets (empty when there are none)."""
    return "".join(f"- Note: {note}\n" for note in record.get("notes", []))


def threads_text(record: dict) -> str:
    n = record["num_threads"]
    default = record["machine"]["torch_default_num_threads"]
    used = f"{n}" if n > 0 else f"torch's default ({default})"
    return (
        f"torch intra-op threads: {used} for both (alf `--num_threads {n}`, SB3 "
        f"`torch.set_num_threads`); torch's default here is {default}, alf's "
        f"`TrainerConfig.num_threads` default is 1"
    )


# -- PPO update diagnostics -----------------------------------------------------------


def _alf_update_stats(root_dir: str, num_epochs: int) -> list[dict]:
    """Per summary iteration: alf's loss summaries of ``approx_kl`` and ``clip_fraction``.

    alf writes one value per name and iteration: the mean over all the iteration's
    minibatches (``alf.summary.average_scalars``). That is SB3's definition of the
    clip fraction; SB3's logged approx KL is the mean over the last epoch only (KL
    grows over the epochs, so SB3's figure is the larger of the two definitions).
    Older runs wrote one value per minibatch: those are averaged the same way.
    ``num_epochs`` is kept for the callers' signature.
    """
    del num_epochs
    train_dir = os.path.join(root_dir, "train")
    per_step = {}
    for name in ("approx_kl", "clip_fraction"):
        for step, _, value in _scalars(train_dir, f"loss/{name}"):
            per_step.setdefault(step, {}).setdefault(name, []).append(value)
    stats = []
    for step, values in sorted(per_step.items()):
        kl, clip = values.get("approx_kl", []), values.get("clip_fraction", [])
        if not kl or not clip:
            continue
        stats.append(
            {
                "iteration": step,
                "approx_kl": statistics.fmean(kl),
                "clip_fraction": statistics.fmean(clip),
            }
        )
    return stats


def update_stats(run: dict, num_epochs: int) -> list[dict]:
    """PPO update statistics of a run (read back from its files when not in ``run``)."""
    if "update_stats" in run:
        return run["update_stats"]
    if run["framework"] == "alf":
        root_dir = run.get("root_dir")
        if root_dir and os.path.isdir(root_dir):
            run["update_stats"] = _alf_update_stats(root_dir, num_epochs)
    else:
        worker_json = run.get("log", "")[: -len(".log")]
        if os.path.exists(worker_json):
            with open(worker_json) as f:
                run["update_stats"] = json.load(f).get("train_stats", [])
    return run.get("update_stats", [])


def update_stats_table(runs: list[dict], num_epochs: int) -> str:
    """Median over iterations of approx KL and clip fraction, one row per run."""
    rows = []
    for r in runs:
        stats = update_stats(r, num_epochs)
        rows.append(
            [
                r["framework"],
                r["seed"],
                len(stats),
                fmt(median(s["approx_kl"] for s in stats), 4),
                fmt(median(s["clip_fraction"] for s in stats), 3),
            ]
        )
    header = ["framework", "seed", "iterations", "approx KL (median)", "clip fraction (median)"]
    return markdown_table(header, rows)


def main(args, new_record, report, markdown) -> None:
    """A PPO benchmark's command: run (or, with ``--report_only``, reload) and report.

    Args:
        args: the parsed command line (``report_only``, ``json_path``, ``note``,
            ``work_dir``, ``no_write``).
        new_record: ``new_record(args) -> record`` for a fresh run.
        report: ``report(args, record, refresh)`` writes the JSON and RESULTS.md.
        markdown: ``markdown(record) -> str``, printed at the end.
    """
    if args.report_only:
        with open(args.json_path) as f:
            record = json.load(f)
        add_notes(record, args.note)
    else:
        record = new_record(args)
        add_notes(record, args.note)
        print(f"Runs in {args.work_dir}", flush=True)
        run_all(args, record, report)
    report(args, record, refresh=not args.report_only)
    print(markdown(record))
    print(f"Results: {args.json_path}" + ("" if args.no_write else f", {RESULTS_MD}"))
