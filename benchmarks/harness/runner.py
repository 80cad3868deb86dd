"""Running commands and functions in fresh processes that import this checkout's alf (``cwd``
and ``PYTHONPATH`` at the checkout), one after the other or taking turns on one core; and the
machine's state for a results file.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import time

from benchmarks.harness import memory, report
from benchmarks.harness.interleave import Turns, run_in_turns

REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def checkout_env() -> dict:
    """This process's environment with the checkout first on ``PYTHONPATH``."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=REPO_DIR + (os.pathsep + path if path else ""))


def module_cmd(module: str, *args) -> list[str]:
    """``python -m module args...`` with this interpreter."""
    return [sys.executable, "-m", module, *map(str, args)]


def alf_train_cmd(conf: str, root_dir: str, seed: int, params: list[str]) -> list[str]:
    """alf's training CLI on ``conf`` (relative to the checkout) with ``--conf_param``s."""
    cmd = module_cmd("alf.bin.train", "--conf", conf, "--root_dir", root_dir, "--random_seed", seed)
    return cmd + [arg for param in params for arg in ("--conf_param", param)]


def function_cmd(function: str, out: str, **kwargs) -> list[str]:
    """A command calling ``function`` (``"module:name"``) with ``kwargs`` in a fresh process
    and writing what it returns to ``out`` as JSON."""
    with open(out + ".args", "w") as f:
        json.dump(kwargs, f)  # not rounded: these are hyperparameters
    return module_cmd("benchmarks.harness.runner", function, out)


def call(function: str, out: str, **kwargs) -> dict:
    """``function(**kwargs)`` in a fresh process (see ``function_cmd``): its result."""
    run(function_cmd(function, out, **kwargs), out + ".log")
    return report.read_json(out)


def run(cmd: list[str], log_path: str) -> Turns:
    """Run ``cmd`` alone, output to ``log_path``; raise if it fails."""
    with open(log_path, "w") as log:
        start, cpu = time.time(), _children_cpu_s()
        proc = subprocess.Popen(cmd, cwd=REPO_DIR, env=checkout_env(), stdout=log, stderr=log)
        peak = None
        while True:
            peak = memory.peak_mb(peak, proc.pid)
            try:
                proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                continue
        end, cpu = time.time(), _children_cpu_s() - cpu
    check_exit(cmd, log_path, proc.returncode)
    return Turns(start=start, end=end, cpu_s=cpu, returncode=proc.returncode, peak_rss_mb=peak)


def run_jobs(cmds: list[list[str]], log_paths: list[str], turn_s: float = 0.0) -> list[Turns]:
    """Run ``cmds`` one after the other, or (``turn_s > 0``) at once taking turns on one core."""
    if turn_s <= 0:
        return [run(cmd, log) for cmd, log in zip(cmds, log_paths, strict=True)]
    turns = run_in_turns(cmds, log_paths, turn_s, cwd=REPO_DIR, env=checkout_env())
    for cmd, log, turn in zip(cmds, log_paths, turns):
        check_exit(cmd, log, turn.returncode)
    return turns


def check_exit(cmd: list[str], log_path: str, returncode: int) -> None:
    """Raise with the end of the log when a command failed."""
    if returncode != 0:
        with open(log_path) as f:
            raise RuntimeError(f"{' '.join(cmd)} failed ({returncode}):\n{f.read()[-3000:]}")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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
