"""SAC on Pendulum-v1: alf vs Stable-Baselines3, same hyperparameters, alternating runs.

    python benchmarks/sac_pendulum.py --seeds 0 1 2 3 4 --work_dir /tmp/sac_bench

For every seed, alf (``python -m alf.bin.train`` on ``alf/examples/sac_pendulum_conf.py``)
and then SB3 (this script with ``--worker sb3``) train in fresh subprocesses for
20,000 env steps: one env, one gradient step per env step, rl-baselines3-zoo's
Pendulum-v1 hyperparameters (SB3 SAC defaults + lr 1e-3: batch 256, gamma 0.99,
tau 0.005, 256x256 ReLU actor and twin critics, automatic entropy tuning from
α = 1, target entropy -1, 100 steps before the first update). Both use one torch
thread (alf: ``TrainerConfig.num_threads`` = 1, its default; SB3:
``torch.set_num_threads(1)``). Every 2,000 env steps 10 deterministic episodes are
evaluated on a separate env (alf: 10 envs in the main process; SB3: one env,
``evaluate_policy``); evaluation time is measured and excluded from throughput.

Measured per run: ``wall_s`` (subprocess wall time, start-up included), ``eval_s``,
``train_s = wall_s - eval_s``, ``updates`` (gradient steps),
``updates_per_sec = updates / train_s``, ``steady_updates_per_sec`` (median over
the intervals between evaluations, which excludes start-up), the eval curve, the
final eval return and the first env step at which eval AverageReturn >= -200.
Raw results go to ``benchmarks/results/sac_pendulum.json`` and a summary into
``benchmarks/RESULTS.md`` (only this benchmark's ``##`` section is replaced).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
CONF = os.path.join(REPO_DIR, "alf", "examples", "sac_pendulum_conf.py")
RESULTS_MD = os.path.join(BENCH_DIR, "RESULTS.md")
RESULTS_JSON = os.path.join(BENCH_DIR, "results", "sac_pendulum.json")
HEADING = "## SAC Pendulum-v1: alf vs Stable-Baselines3 (issue 4)"

ENV_STEPS = 20_000
EVAL_INTERVAL = 2_000
NUM_EVAL_EPISODES = 10
LEARNING_STARTS = 100
THRESHOLD = -200.0
SB3_HYPERPARAMETERS = dict(
    learning_rate=1e-3,
    buffer_size=1_000_000,
    learning_starts=LEARNING_STARTS,
    batch_size=256,
    tau=0.005,
    gamma=0.99,
    train_freq=1,
    gradient_steps=1,
    ent_coef="auto",
    target_entropy="auto",
    policy_kwargs=dict(net_arch=[256, 256]),
)


# -- workers ---------------------------------------------------------------------------


def sb3_worker(seed: int, out: str) -> None:
    """Train SB3 SAC in this process and write its eval curve and timings to ``out``."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)
    start = time.time()
    eval_env = gym.make("Pendulum-v1")
    evals = []

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % EVAL_INTERVAL == 0:
                t0 = time.time()
                eval_env.reset(seed=seed + 999)
                mean, _ = evaluate_policy(
                    self.model, eval_env, n_eval_episodes=NUM_EVAL_EPISODES, deterministic=True
                )
                t1 = time.time()
                evals.append(
                    dict(
                        env_steps=self.num_timesteps,
                        average_return=float(mean),
                        eval_s=t1 - t0,
                        end_s=t1 - start,
                    )
                )
            return True

    model = SAC(
        "MlpPolicy", gym.make("Pendulum-v1"), seed=seed, device="cpu", **SB3_HYPERPARAMETERS
    )
    model.learn(ENV_STEPS, callback=Evaluate())
    result = dict(
        evals=evals,
        updates=int(model._n_updates),
        torch_num_threads=torch.get_num_threads(),
        env_steps=int(model.num_timesteps),
    )
    with open(out, "w") as f:
        json.dump(result, f)


def speed_worker(framework: str, seed: int, num_updates: int, out: str) -> None:
    """Steady-state speed: after a warm-up, time ``num_updates`` env steps, each with one
    gradient step, in this process (no evaluation, no start-up); wall and CPU time."""
    import torch

    warmup = LEARNING_STARTS + 200
    if framework == "sb3":
        import gymnasium as gym
        from stable_baselines3 import SAC

        torch.set_num_threads(1)
        model = SAC(
            "MlpPolicy", gym.make("Pendulum-v1"), seed=seed, device="cpu", **SB3_HYPERPARAMETERS
        )
        model.learn(warmup)

        def train():
            model.learn(num_updates, reset_num_timesteps=False)
    else:
        from alf.algorithms.config import TrainerConfig
        from alf.trainers.policy_trainer import PolicyTrainer
        from alf.utils import common

        root_dir = out + ".alf_root"
        params = [f"TrainerConfig.root_dir={root_dir!r}", f"TrainerConfig.random_seed={seed}"]
        common.parse_conf_file(CONF, params + ["TrainerConfig.evaluate=False"], [])
        algorithm = PolicyTrainer(TrainerConfig()).algorithm  # sets the thread count too
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
    with open(out, "w") as f:
        json.dump(result, f)


def run_speed(framework: str, seed: int, num_updates: int, work_dir: str) -> dict:
    out = os.path.join(work_dir, f"speed_{framework}_{seed}.json")
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        f"{framework}_speed",
        "--seed",
        str(seed),
        "--out",
        out,
        "--steady_updates",
        str(num_updates),
    ]
    _run(cmd, out + ".log")
    with open(out) as f:
        return dict(json.load(f), seed=seed)


def speed_report(speeds: list[dict], info: dict) -> str:
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
        for fw in ("alf", "sb3")
    }
    wall = med["sb3"]["wall_ms_per_update"] / med["alf"]["wall_ms_per_update"]
    cpu = med["sb3"]["cpu_ms_per_update"] / med["alf"]["cpu_ms_per_update"]
    header = ["run", "framework", "timed updates", "wall ms/update", "updates/s", "CPU ms/update"]
    return f"""
Steady-state A/B ({info["speed_start"]} — {info["speed_end"]}; load average at start
{info["speed_load_start"]}, at end {info["speed_load_end"]};
`python benchmarks/sac_pendulum.py --steady_updates {speeds[0]["updates"]} --repeats
{len(speeds) // 2}`): each run warms up for {LEARNING_STARTS + 200} env steps, then times
env steps with one gradient step each, in the training process (no evaluation, no
start-up), alternating alf (`train_iter` of the conf's algorithm) and SB3 (`learn`). CPU
time is the process's own, so it is less sensitive to other jobs than wall time.

{_table(header, rows)}

Median alf speed-up over SB3: **{wall:.2f}x** in wall time per update, **{cpu:.2f}x** in CPU
time per update. Target (issue 4: ≥ 1.3x SB3's updates/s) in this steady-state comparison:
**{"met" if min(wall, cpu) >= 1.3 else "not met"}**.
"""


def _scalars(event_dir: str, tag: str) -> list[tuple[int, float, float]]:
    """``[(step, wall_time, value)]`` of a tensorboard scalar."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(event_dir, size_guidance={"scalars": 0})
    acc.Reload()
    if tag not in acc.Tags()["scalars"]:
        return []
    return [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]


def run_alf(seed: int, work_dir: str) -> dict:
    """``alf.bin.train`` on the example conf; results from its tensorboard summaries.

    A run directory left by an earlier benchmark run is removed first: alf would resume it.
    """
    root_dir = os.path.join(work_dir, f"alf_seed{seed}")
    if os.path.exists(root_dir):
        shutil.rmtree(root_dir)
    cmd = [
        sys.executable,
        "-m",
        "alf.bin.train",
        "--conf",
        CONF,
        "--root_dir",
        root_dir,
        "--random_seed",
        str(seed),
        "--nostore_snapshot",
        # No mid-run checkpoint: it restarts the training env (cutting an episode);
        # the final checkpoint is still written.
        "--conf_param",
        "TrainerConfig.num_checkpoints=1",
        "--conf_param",
        f"TrainerConfig.num_env_steps={ENV_STEPS}",
        "--conf_param",
        f"TrainerConfig.eval_interval={EVAL_INTERVAL}",
        "--conf_param",
        f"TrainerConfig.num_eval_episodes={NUM_EVAL_EPISODES}",
    ]
    start, wall = _run(cmd, root_dir + ".log")
    eval_dir = os.path.join(root_dir, "eval")
    returns = _scalars(eval_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    durations = _scalars(eval_dir, "time/eval")
    evals = [
        dict(env_steps=int(s), average_return=float(v), eval_s=float(d), end_s=t - start)
        for (s, _, v), (_, t, d) in zip(returns, durations)
    ]
    env_steps = evals[-1]["env_steps"] if evals else ENV_STEPS
    return _result("alf", seed, wall, evals, env_steps - LEARNING_STARTS + 1, 1)


def run_sb3(seed: int, work_dir: str) -> dict:
    out = os.path.join(work_dir, f"sb3_seed{seed}.json")
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        "sb3",
        "--seed",
        str(seed),
        "--out",
        out,
        "--env_steps",
        str(ENV_STEPS),
    ]
    _, wall = _run(cmd, out + ".log")
    with open(out) as f:
        worker = json.load(f)
    return _result(
        "sb3", seed, wall, worker["evals"], worker["updates"], worker["torch_num_threads"]
    )


def _run(cmd: list[str], log_path: str) -> tuple[float, float]:
    with open(log_path, "w") as log:
        start = time.time()
        proc = subprocess.run(cmd, cwd=REPO_DIR, stdout=log, stderr=subprocess.STDOUT)
        wall = time.time() - start
    if proc.returncode != 0:
        with open(log_path) as f:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{f.read()[-3000:]}")
    return start, wall


def _result(framework, seed, wall, evals, updates, num_threads) -> dict:
    eval_s = sum(e["eval_s"] for e in evals)
    done = 0.0
    for e in evals:  # training time up to each evaluation (start-up included)
        done += e["eval_s"]
        e["train_time_s"] = round(e["end_s"] - done, 3)
    rates = [
        (b["env_steps"] - a["env_steps"]) / (b["train_time_s"] - a["train_time_s"])
        for a, b in zip(evals, evals[1:])
    ]
    hit = next((e for e in evals if e["average_return"] >= THRESHOLD), None)
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


PER_RUN_HEADER = [
    "run",
    "framework",
    "seed",
    "wall s",
    "eval s",
    "wall − eval s",
    "updates",
    "updates/s",
    "steady updates/s",
    "final eval return",
    "≥ -200 reached",
    "env steps to ≥ -200",
    "time to ≥ -200 s",
]


def report(runs: list[dict], info: dict) -> str:
    per_run = [
        [
            i + 1,
            r["framework"],
            r["seed"],
            _fmt(r["wall_s"]),
            _fmt(r["eval_s"]),
            _fmt(r["train_s"]),
            _fmt(r["updates"]),
            _fmt(r["updates_per_sec"]),
            _fmt(r["steady_updates_per_sec"]),
            _fmt(r["final_return"]),
            "yes" if r["steps_to_threshold"] else "no",
            _fmt(r["steps_to_threshold"]),
            _fmt(r["time_to_threshold_s"]),
        ]
        for i, r in enumerate(runs)
    ]
    keys = [
        "wall_s",
        "train_s",
        "updates_per_sec",
        "steady_updates_per_sec",
        "final_return",
        "steps_to_threshold",
        "time_to_threshold_s",
    ]
    med = {
        fw: {k: _median(r[k] for r in runs if r["framework"] == fw) for k in keys}
        for fw in ("alf", "sb3")
    }
    rows = []
    for k in keys:
        a, b = med["alf"][k], med["sb3"][k]
        rows.append([k, _fmt(a), _fmt(b), _fmt(a / b, 2) if a is not None and b else "-"])
    pairs = [
        (a, b)
        for a in runs
        for b in runs
        if a["framework"] == "alf" and b["framework"] == "sb3" and a["seed"] == b["seed"]
    ]
    paired = _median(a["updates_per_sec"] / b["updates_per_sec"] for a, b in pairs)
    paired_steady = _median(
        a["steady_updates_per_sec"] / b["steady_updates_per_sec"]
        for a, b in pairs
        if a["steady_updates_per_sec"] and b["steady_updates_per_sec"]
    )
    reached = {
        fw: sum(1 for r in runs if r["framework"] == fw and r["steps_to_threshold"])
        for fw in ("alf", "sb3")
    }
    counts = {fw: sum(1 for r in runs if r["framework"] == fw) for fw in ("alf", "sb3")}
    note = f"\n- **Note:** {info['note']}" if info.get("note") else ""
    curve_steps = sorted({e["env_steps"] for r in runs for e in r["evals"]})
    curve = [
        [_fmt(s)]
        + [
            _fmt(next((e["average_return"] for e in r["evals"] if e["env_steps"] == s), None))
            for r in runs
        ]
        for s in curve_steps
    ]
    return f"""
- Date: {info["start"]} (start) — {info["end"]} (end); load average at start
  {info["load_start"]}, at end {info["load_end"]}. Machine: {info["cpu"]}, `nproc` =
  {info["nproc"]}, **shared and busy** (other engineers' benchmarks and tests ran at the same
  time), so absolute rates move from run to run; alf and SB3 alternate per seed so the noise
  falls on both.
- Software: Python {info["python"]}, torch {info["torch"]}, gymnasium {info["gymnasium"]},
  stable-baselines3 {info["sb3"]}. torch intra-op threads: **1 for both** (alf's
  `TrainerConfig.num_threads` default; SB3 `torch.set_num_threads(1)`).
- Command: `python benchmarks/sac_pendulum.py --seeds {" ".join(map(str, info["seeds"]))}`.
- Both: rl-baselines3-zoo Pendulum-v1 SAC = SB3 SAC defaults + lr 1e-3 (batch 256, gamma
  0.99, tau 0.005, 256x256 ReLU actor and twin critics, Adam lr 1e-3 for actor, critics and
  α, α learned from 1 with target entropy -1, {LEARNING_STARTS} steps before the first
  update, 1 env, 1 gradient step per env step), {ENV_STEPS:,} env steps; eval =
  {NUM_EVAL_EPISODES} deterministic episodes on separate envs every {EVAL_INTERVAL:,} env
  steps. alf runs the CLI on `alf/examples/sac_pendulum_conf.py` (replay buffer 100k vs
  SB3's 1e6: both hold all 20k steps) with only the final checkpoint (a mid-run checkpoint
  restarts the env). Network initialization is each framework's own.
- "updates/s" = gradient steps / (wall − eval), start-up (imports) included; "steady" =
  median over the intervals between evaluations (no start-up). "time to ≥-200" = wall −
  eval seconds from process start to the end of the first eval with AverageReturn ≥ -200.
- Raw data: `benchmarks/results/sac_pendulum.json`.{note}

Per run (in the order they ran):

{_table(PER_RUN_HEADER, per_run)}

Medians and alf / SB3 ratios:

{_table(["median", "alf", "SB3", "alf / SB3"], rows)}

Median of the per-seed paired ratios (alf / SB3): updates/s {_fmt(paired, 2)}, steady
updates/s {_fmt(paired_steady, 2)}. Eval AverageReturn ≥ -200 within {ENV_STEPS:,} env
steps: alf {reached["alf"]}/{counts["alf"]} seeds, SB3 {reached["sb3"]}/{counts["sb3"]}.

Eval AverageReturn by env steps:

{_table(["env steps"] + [f"{r['framework']} s{r['seed']}" for r in runs], curve)}
"""


def replace_section(body: str) -> None:
    """Replace (or append) this benchmark's section of RESULTS.md, re-reading it first."""
    text = "# Benchmark results\n"
    if os.path.exists(RESULTS_MD):
        with open(RESULTS_MD) as f:
            text = f.read()
    lines = text.splitlines()
    section = [HEADING, *body.rstrip("\n").splitlines(), ""]
    if HEADING in lines:
        begin = lines.index(HEADING)
        end = next(
            (i for i in range(begin + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        lines[begin:end] = section
    else:
        if lines and lines[-1].strip():
            lines.append("")
        lines += section
    with open(RESULTS_MD + ".tmp", "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")
    os.replace(RESULTS_MD + ".tmp", RESULTS_MD)


def _machine() -> dict:
    import gymnasium
    import stable_baselines3
    import torch

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    return dict(
        cpu=cpu,
        nproc=os.cpu_count(),
        python=platform.python_version(),
        torch=torch.__version__,
        gymnasium=gymnasium.__version__,
        sb3=stable_baselines3.__version__,
    )


def main() -> None:
    global ENV_STEPS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--work_dir", default="/tmp/sac_pendulum_bench")
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
    parser.add_argument("--note", default="", help="a remark printed with the results")
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument(
        "--env_steps",
        type=int,
        default=ENV_STEPS,
        help="env steps per run (smoke tests only; the report assumes 20k)",
    )
    parser.add_argument(
        "--no_results_md", action="store_true", help="do not touch benchmarks/RESULTS.md"
    )
    args = parser.parse_args()
    ENV_STEPS = args.env_steps
    if args.worker == "sb3":
        sb3_worker(args.seed, args.out)
        return
    if args.worker in ("sb3_speed", "alf_speed"):
        speed_worker(args.worker.split("_")[0], args.seed, args.steady_updates, args.out)
        return
    os.makedirs(args.work_dir, exist_ok=True)
    if args.steady_updates:
        steady_main(args)
        return
    info = dict(_machine(), seeds=args.seeds, start=_now(), load_start=_load(), note=args.note)
    runs = []
    for seed in args.seeds:
        for framework, run in (("alf", run_alf), ("sb3", run_sb3)):
            result = run(seed, args.work_dir)
            runs.append(result)
            print(
                f"{framework} seed {seed}: {result['updates_per_sec']} updates/s, "
                f"final {result['final_return']}",
                flush=True,
            )
            info.update(end=_now(), load_end=_load())
            _write(runs, info, not args.no_results_md)


def steady_main(args) -> None:
    """Alternate steady-state speed runs; add their table to the saved results."""
    info = dict(speed_start=_now(), speed_load_start=_load())
    speeds = []
    for i in range(args.repeats):
        for framework in ("alf", "sb3"):
            speeds.append(run_speed(framework, i, args.steady_updates, args.work_dir))
            print(speeds[-1], flush=True)
    info.update(speed_end=_now(), speed_load_end=_load())
    saved = {}
    if os.path.exists(RESULTS_JSON):
        with open(RESULTS_JSON) as f:
            saved = json.load(f)
    saved.setdefault("info", {}).update(info)
    if args.note:
        saved["info"]["note"] = args.note
    saved["steady"] = speeds
    _write(saved.get("runs", []), saved["info"], not args.no_results_md, speeds)


def _write(runs, info, results_md: bool, speeds=None) -> None:
    os.makedirs(os.path.dirname(RESULTS_JSON), exist_ok=True)
    if speeds is None and os.path.exists(RESULTS_JSON):
        with open(RESULTS_JSON) as f:
            speeds = json.load(f).get("steady")
    with open(RESULTS_JSON + ".tmp", "w") as f:
        json.dump(dict(info=info, runs=runs, steady=speeds or []), f, indent=1)
    os.replace(RESULTS_JSON + ".tmp", RESULTS_JSON)
    if results_md and any(r["framework"] == "sb3" for r in runs):
        body = report(runs, info)
        if speeds:
            body += speed_report(speeds, info)
        replace_section(body)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


if __name__ == "__main__":
    main()
