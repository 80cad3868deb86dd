"""Steady-state training speed of an alf conf: time ``train_iter`` after a warm-up.

As a script, the worker: it imports only alf, torch and the standard library, so it times the
checkout on ``PYTHONPATH`` (``alf_ab``: an older revision); it builds the conf's algorithm
through ``PolicyTrainer`` and prints ``RESULT {json}``: env steps, wall and process CPU seconds
of ``iterations`` calls after ``warmup``. ``measure`` runs it in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def alf_algorithm(conf: str, seed: int, root_dir: str, params: list[str]):
    """The conf's algorithm as ``PolicyTrainer`` builds it (one torch thread by default)."""
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    own = [f"TrainerConfig.root_dir={root_dir!r}", f"TrainerConfig.random_seed={seed}"]
    common.parse_conf_file(conf, [*own, "TrainerConfig.evaluate=False", *params], [])
    return PolicyTrainer(TrainerConfig()).algorithm


def time_calls(step, warmup: int, iterations: int) -> dict:
    """Call ``step()`` ``warmup`` times, then time ``iterations`` calls (summing what they
    return: env steps per ``train_iter``)."""
    for _ in range(warmup):
        step()
    wall, cpu = time.perf_counter(), time.process_time()
    env_steps = sum(step() for _ in range(iterations))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return dict(iterations=iterations, env_steps=int(env_steps), wall_s=wall, cpu_s=cpu)


def worker(checkout: str, conf: str, seed: int, warmup: int, iterations: int, params=()):
    """The command running this worker on ``checkout``'s alf and ``conf`` (relative to it), and
    its fresh root_dir (alf resumes from an old one)."""
    root_dir = tempfile.mkdtemp(prefix="steady_")
    args = dict(conf=os.path.join(checkout, conf), seed=seed, root_dir=root_dir)
    args.update(params=list(params), warmup=warmup, iterations=iterations)
    cmd = ["env", f"PYTHONPATH={checkout}", sys.executable, os.path.abspath(__file__)]
    return [*cmd, json.dumps(args)], root_dir


def result(output: str) -> dict:
    """The worker's result in its output."""
    return json.loads(next(x for x in output.splitlines() if x.startswith("RESULT "))[7:])


def measure(checkout: str, conf: str, seed: int, warmup: int, iterations: int, params=()) -> dict:
    """Run the worker (see ``worker``) alone; its result."""
    cmd, root_dir = worker(checkout, conf, seed, warmup, iterations, params)
    out = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True)
    shutil.rmtree(root_dir, ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return result(out.stdout)


def main() -> None:
    args = json.loads(sys.argv[1])  # as ``worker`` writes them
    algorithm = alf_algorithm(args["conf"], args["seed"], args["root_dir"], args["params"])
    result = time_calls(algorithm.train_iter, args["warmup"], args["iterations"])
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
