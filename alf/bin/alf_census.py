r"""A census of ALF's example confs: which of them alf runs, and what blocks the others.

    python -m alf.bin.alf_census --alf_dir PATH/TO/ALF [--output census.md] [--json census.json]
        [--timeout 180] [--jobs 2] [--only REGEX]

Every ``.py`` and ``.gin`` file under ``PATH/TO/ALF/alf/examples`` is copied (unchanged) to a
temporary directory outside the repository, which ``ALF_CONFIG_PATH`` points at (so a conf's
``from alf.examples import atari_conf`` finds ALF's other confs after alf's own base confs), and
each conf is trained for 3 iterations by ``python -m alf.bin.train`` in its own process, with a
time limit (gym ids are renamed as ``alf.environments.gym_ids`` does for every run). A Python
file that configures nothing (no ``alf.config``, ``TrainerConfig``, ``import_config`` or
imported conf) is a module the confs import, not a conf, and is not run.

Each conf gets one verdict: ``runs``; ``needs an env suite`` (an environment package or alf
suite that is missing); ``needs an algorithm`` (an ALF algorithm alf lacks); ``refused`` (any
other error: its first line); ``timed out``. The blocker, what the first error line names (a
module, a class, ``Class.argument``), groups the confs, counted, so that the next steps can be
ranked by how many confs each unblocks. The table goes to ``--output`` (markdown) and
``--json`` (one record per file), and a summary to stdout.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

#: what 3 iterations of any conf need to be short (the census runs, not trains)
SHRINK = (
    "TrainerConfig.num_iterations=3",
    "TrainerConfig.num_env_steps=0",
    "TrainerConfig.initial_collect_steps=16",
    "TrainerConfig.eval_interval=1",
    "TrainerConfig.num_eval_episodes=1",
    "TrainerConfig.replay_buffer_length=64",
    "TrainerConfig.mini_batch_size=4",
)
_CONFIGURES = re.compile(
    r"alf\.config1?\(|TrainerConfig|import_config|from alf\.examples(?:\.\w+)* import \w*conf"
)
_ENV_HINTS = re.compile(
    r"suite_\w+|DependencyNotInstalled|No module named '(?:social_bot|pybullet\w*|carla|procgen|"
    r"metadrive|safety_gym|dm_control|dmc2gym|gym_minigrid|minigrid|babyai|mario|nes_py|"
    r"deepmind_lab|gym_super_mario_bros|robosuite|metaworld|highway_env)'|Box2D|mujoco_py"
)
_ALGORITHM_HINTS = re.compile(
    r"No module named 'alf\.algorithms\.|Cannot import 'alf\.algorithms\.|"
    r"cannot import name '\w+Algorithm'|Unknown configurable '[\w.]*Algorithm'"
)
_BLOCKER_PATTERNS = (
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"cannot import name '(\w+)' from '([\w.]+)'"),
    re.compile(r"cannot import name '(\w+)'"),
    re.compile(r"Cannot import '([\w.]+)'"),
    re.compile(r"'(?:[\w.]+\.)?(\w+)' has no configurable argument '(\w+)'"),
    re.compile(r"Unknown configurable '([\w.]+)'"),
    re.compile(r"has no attribute '(\w+)'"),
    re.compile(r"got an unexpected keyword argument '(\w+)'"),
)


@dataclasses.dataclass
class Verdict:
    file: str  # relative to alf/examples
    verdict: (
        str  # runs | needs an env suite | needs an algorithm | refused | timed out | not a conf
    )
    blocker: str = ""
    error: str = ""
    seconds: float = 0.0


def example_files(alf_dir: str) -> list[str]:
    """The ``.py`` / ``.gin`` files under ``alf_dir/alf/examples``, relative, sorted."""
    root = os.path.join(alf_dir, "alf", "examples")
    if not os.path.isdir(root):
        raise ValueError(f"--alf_dir {alf_dir}: no alf/examples directory in it")
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            if name.endswith((".py", ".gin")) and name != "__init__.py":
                found.append(os.path.relpath(os.path.join(directory, name), root))
    return sorted(found)


def is_conf(path: str) -> bool:
    """A gin file, or a Python file that configures something or imports a conf."""
    if path.endswith(".gin"):
        return True
    with open(path, encoding="utf-8", errors="replace") as f:
        return bool(_CONFIGURES.search(f.read()))


def first_error_line(output: str) -> str:
    """The line ``alf.bin.train`` printed for its error (else the last line of a traceback)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("alf.bin.train: error: "):
            return line[len("alf.bin.train: error: ") :]
    errors = [line for line in lines if re.match(r"[\w.]+(Error|Exception|Exit)\b", line)]
    return (errors or lines or ["(no output)"])[-1][:400]


def blocker_of(error: str) -> str:
    """What the error line names: a module, a class, ``Class.argument`` (else the line)."""
    for pattern in _BLOCKER_PATTERNS:
        match = pattern.search(error)
        if match:
            groups = match.groups()
            if len(groups) == 2 and pattern is _BLOCKER_PATTERNS[1]:  # name from module
                return f"{groups[1]}.{groups[0]}"
            return ".".join(groups)
    return error[:120]


def classify(returncode: int | None, output: str) -> tuple[str, str, str]:
    """``(verdict, blocker, first error line)`` of one run (None: it timed out)."""
    if returncode is None:
        return "timed out", "time limit", ""
    if returncode == 0:
        return "runs", "", ""
    error = first_error_line(output)
    blocker = blocker_of(error)
    if _ENV_HINTS.search(error):
        return "needs an env suite", blocker, error
    if _ALGORITHM_HINTS.search(error):
        return "needs an algorithm", blocker, error
    return "refused", blocker, error


def run_one(stage: str, rel: str, timeout: float) -> Verdict:
    """Train ``rel`` (staged under ``stage``) for 3 iterations; its verdict."""
    path = os.path.join(stage, rel)
    if not is_conf(path):
        return Verdict(rel, "not a conf", "a module the confs import")
    root_dir = tempfile.mkdtemp(prefix="census_run_")
    cmd = [
        sys.executable,
        "-m",
        "alf.bin.train",
        "--conf",
        path,
        "--root_dir",
        root_dir,
        "--random_seed",
        "0",
        "--nostore_snapshot",
    ]
    for param in SHRINK:
        cmd += ["--conf_param", param]
    env = dict(os.environ, ALF_CONFIG_PATH=stage, PYTHONWARNINGS="ignore")
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        returncode, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        returncode, output = None, ""
    finally:
        shutil.rmtree(root_dir, ignore_errors=True)
    verdict, blocker, error = classify(returncode, output.replace(stage + os.sep, ""))
    return Verdict(rel, verdict, blocker, error, round(time.monotonic() - start, 1))


def stage_examples(alf_dir: str, files: list[str]) -> str:
    """A copy of the example files in a new temporary directory (its path)."""
    stage = tempfile.mkdtemp(prefix="alf_census_")
    for rel in files:
        target = os.path.join(stage, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(alf_dir, "alf", "examples", rel), target)
    return stage


def markdown(verdicts: list[Verdict]) -> str:
    """Counts by verdict, blockers ranked by the confs they block, and every file."""
    counts = collections.Counter(v.verdict for v in verdicts)
    lines = [
        f"{len(verdicts)} files: " + ", ".join(f"{n} {k}" for k, n in counts.most_common()),
        "",
    ]
    blocked = collections.defaultdict(list)
    for v in verdicts:
        if v.verdict not in ("runs", "not a conf"):
            blocked[(v.verdict, v.blocker)].append(v.file)
    lines += ["| blocker | kind | confs | files |", "|---|---|---|---|"]
    for (kind, blocker), files in sorted(blocked.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| `{blocker}` | {kind} | {len(files)} | {', '.join(files)} |")
    lines += ["", "| file | verdict | first error line | s |", "|---|---|---|---|"]
    for v in verdicts:
        error = v.error.replace("|", "\\|")
        lines.append(f"| `{v.file}` | {v.verdict} | {error or '-'} | {v.seconds:g} |")
    return "\n".join(lines) + "\n"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, as every alf command line
        print(f"alf_census: error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv=None) -> int:
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--alf_dir", required=True, help="a checkout of HorizonRobotics/alf")
    parser.add_argument("--output", help="markdown table")
    parser.add_argument("--json", help="one record per file")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per conf")
    parser.add_argument("--jobs", type=int, default=2, help="confs run at once")
    parser.add_argument("--only", help="a regular expression the file names must match")
    args = parser.parse_args(argv)
    try:
        files = example_files(args.alf_dir)
        only = re.compile(args.only) if args.only else None
    except (ValueError, re.error) as e:
        parser.error(str(e))
    # Every file is staged (a selected conf imports others, e.g. ``from alf.examples
    # import ac_breakout_conf``); only the selected ones are run.
    stage = stage_examples(args.alf_dir, files)
    files = [f for f in files if only is None or only.search(f)]
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            verdicts = list(pool.map(lambda rel: run_one(stage, rel, args.timeout), files))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    table = markdown(verdicts)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(table)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([dataclasses.asdict(v) for v in verdicts], f, separators=(",", ":"))
    print(table.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
