"""Whole training runs, side by side: in-process vs remote samplers vs data-parallel ranks.

    python -m benchmarks.scale_out_runs [--rounds 3] [--tasks cartpole halfcheetah]
        [--variants in-process ddp-2 ...]

Each variant is one ``python -m alf.bin.train`` command (a real process tree: launcher,
ranks, samplers, env workers) on the same conf with the same global batch; the variants
of a task run in turns, in a new random order each round, so the machine's drift falls
on all of them. From each run's tensorboard file the steady rate is read: env steps per
second between the first and the last training summary (start-up, the first iteration
and the final checkpoint excluded); the process's wall time is reported too. Medians
over the rounds are printed as a table (and with ``--json FILE`` written out).

``benchmarks.scale_out`` times the acting and training of samplers inside one process
and the costs of a weight broadcast and of an inference round trip; this script times
the CLI as a user runs it, which is the only way to time several learner ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = ["TrainerConfig.evaluate=False", "TrainerConfig.summary_interval=1"]
TASKS = {
    # conf, conf params (the same global batch for every variant), env steps per run
    "cartpole": ("ppo_cart_pole_conf.py", [], 30_000),
    "halfcheetah": (
        "ppo_mujoco_conf.py",
        ["create_environment.num_parallel_environments=2", "TrainerConfig.unroll_length=256"],
        16_384,
    ),
}
SAMPLERS = ["SamplerConfig.num_samplers=2"]
VARIANTS = {
    # flags, conf params
    "in-process": ([], []),
    "2 samplers, local": ([], SAMPLERS + ["SamplerConfig.inference='local'"]),
    "2 samplers, server": ([], SAMPLERS + ["SamplerConfig.inference='server'"]),
    "2 Ray samplers": ([], SAMPLERS + ["SamplerConfig.backend='ray'"]),
    "2 DDP ranks": (["--num_processes", "2"], []),
}


def run(task: str, variant: str, root: str) -> dict:
    conf, params, steps = TASKS[task]
    flags, variant_params = VARIANTS[variant]
    command = [sys.executable, "-m", "alf.bin.train", "--conf"]
    command += [os.path.join(REPO, "alf", "examples", conf), "--root_dir", root]
    command += ["--nostore_snapshot", "--random_seed", "1", *flags]
    for param in COMMON + params + variant_params + [f"TrainerConfig.num_env_steps={steps}"]:
        command += ["--conf_param", param]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{task} / {variant} failed:\n{proc.stderr[-2000:]}")
    return {"steady": steady_rate(os.path.join(root, "train")), "wall": wall}


def steady_rate(train_dir: str) -> float:
    """Env steps per second between the first and the last EnvironmentSteps summary."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(train_dir, size_guidance={"scalars": 0})
    acc.Reload()
    events = acc.Scalars("Metrics/EnvironmentSteps")
    first, last = events[0], events[-1]
    return (last.value - first.value) / (last.wall_time - first.wall_time)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args()
    results = {task: {v: [] for v in args.variants} for task in args.tasks}
    with tempfile.TemporaryDirectory(prefix="alf-scale-out-") as tmp:
        for round_index in range(args.rounds):
            for task in args.tasks:
                order = list(args.variants)
                random.Random(round_index).shuffle(order)
                for variant in order:
                    root = os.path.join(tmp, f"{task}-{round_index}-{order.index(variant)}")
                    measured = run(task, variant, root)
                    results[task][variant].append(measured)
                    print(
                        f"round {round_index} {task:12s} {variant:20s} "
                        f"{measured['steady']:8.0f} steps/s  {measured['wall']:6.1f} s",
                        flush=True,
                    )
    print()
    for task, variants in results.items():
        base = statistics.median(m["steady"] for m in variants[args.variants[0]])
        print(f"{task}: median steady env steps/s (ratio to {args.variants[0]}), wall s")
        for variant, runs in variants.items():
            steady = statistics.median(m["steady"] for m in runs)
            wall = statistics.median(m["wall"] for m in runs)
            print(f"  {variant:20s} {steady:8.0f} ({steady / base:4.2f}x)  {wall:6.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
