"""Running commands and functions in fresh processes that import this checkout's alf (``cwd``
and ``PYTHONPATH`` at the checkout), one after the other or taking turns on one core; and the
machine's state for a results file.
"""

from __future__ import annotations

import datetime
import importlib
import json
import math
import os
import platform
import subprocess
import sys

from benchmarks.harness import report
from benchmarks.harness.interleave import Turns, run_in_turns

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env() -> dict:
    """This process's environment with the checkout first on ``PYTHONPATH``."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=REPO_DIR + (os.pathsep + path if path else ""))


def alf_train_cmd(conf: str, root_dir: str, seed: int, params: list[str]) -> list[str]:
    """alf's training CLI on ``conf`` (relative to the checkout) with ``--conf_param``s."""
    cmd = [sys.executable, "-m", "alf.bin.train", "--conf", conf, "--root_dir", root_dir]
    cmd += ["--random_seed", str(seed), "--nostore_snapshot"]
    return cmd + [arg for param in params for arg in ("--conf_param", param)]


def function_cmd(function: str, out: str, **kwargs) -> list[str]:
    """A command calling ``function`` (``"module:name"``) with ``kwargs`` in a fresh process
    and writing what it returns to ``out`` as JSON."""
    with open(out + ".args", "w") as f:
        json.dump(kwargs, f)  # not rounded: these are hyperparameters
    return [sys.executable, "-m", "benchmarks.harness.runner", function, out]


def call(function: str, out: str, **kwargs) -> dict:
    """``function(**kwargs)`` in a fresh process (see ``function_cmd``): its result."""
    run_jobs([function_cmd(function, out, **kwargs)], [out + ".log"])
    return report.read_json(out)


def run_jobs(cmds: list[list[str]], log_paths: list[str], turn_s: float = 0.0) -> list[Turns]:
    """Run ``cmds`` one after the other, or (``turn_s > 0``) at once taking turns on one core
    (``interleave.py``); raise with the end of its log when one fails."""
    turns = run_in_turns(cmds, log_paths, turn_s if turn_s > 0 else math.inf, REPO_DIR, env())
    for cmd, log_path, turn in zip(cmds, log_paths, turns):
        if turn.returncode != 0:
            with open(log_path) as f:
                raise RuntimeError(
                    f"{' '.join(cmd)} failed ({turn.returncode}):\n{f.read()[-3000:]}"
                )
    return turns


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def now() -> str:
    """The UTC time, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def git_commit() -> str:
    """The checkout's commit, marked when its ``alf/`` has uncommitted changes."""
    git = ["git", "-C", REPO_DIR]
    commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(git + ["status", "--porcelain", "--", "alf"], capture_output=True)
    return commit.stdout.strip() + (" + uncommitted changes" if changed.stdout.strip() else "")


def machine_info() -> dict:
    """Date, CPU, cores, load and the versions that matter, for a results file."""
    import gymnasium
    import stable_baselines3
    import torch

    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if "model name" in line), "")
    info = dict(date=now(), cpu=cpu or platform.processor(), nproc=os.cpu_count())
    info.update(load_start=load_average(), python=platform.python_version(), alf=git_commit())
    info.update(torch=torch.__version__, gymnasium=gymnasium.__version__)
    return dict(info, stable_baselines3=stable_baselines3.__version__)


if __name__ == "__main__":
    module_name, function_name = sys.argv[1].split(":")
    kwargs = report.read_json(sys.argv[2] + ".args")
    function = getattr(importlib.import_module(module_name), function_name)
    report.write_json(sys.argv[2], function(**kwargs))
