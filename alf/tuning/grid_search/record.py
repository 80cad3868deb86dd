"""``root_dir/grid_search.json``: the search and the state of each of its runs.

The record holds::

    format              1
    search_config_file  the search config's path
    search_config       its content
    conf, conf_params   the conf file and the user's --conf_param values
    store_snapshot      whether runs store an alf snapshot
    runs                one entry per run, in launch order:
        name            its directory under root_dir
        parameters      {name: value} of its grid point
        repeat          0 .. repeats - 1
        random_seed     the seed the grid search gave it (null: the conf's or drawn)
        conf_params     its own --conf_param values (parameters, then seed)
        command         the command line that trains it
        status          pending | running | finished | failed | interrupted
        exit_code       the trainer's exit status (negative: killed by that signal)
        start_time, end_time   UTC, ISO 8601, of its latest attempt
        pid             the process id of its latest trainer
        objective, objective_source   its final Metrics/AverageReturn, and
                        whether it came from the eval or the train events

It is rewritten atomically (aside, then renamed) whenever a run starts or ends.
``finished`` means the trainer exited 0 by itself; a run the grid search stopped is
``interrupted`` whatever its exit status, and is resumed by the next search.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile

from alf.tuning.grid_search.spec import Run

RECORD_FILE = "grid_search.json"
SUMMARY_FILE = "summary.md"
LOG_DIR = "logs"
STDERR_TAIL_FILE = "grid_search_stderr.txt"
RECORD_FORMAT = 1
TAIL_LINES = 60

PENDING, RUNNING, FINISHED, FAILED, INTERRUPTED = (
    "pending",
    "running",
    "finished",
    "failed",
    "interrupted",
)


def now() -> str:
    """The current UTC time, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def record_path(root_dir: str) -> str:
    """Where the record of the grid search in ``root_dir`` is."""
    return os.path.join(root_dir, RECORD_FILE)


def run_entry(run: Run, command: list[str]) -> dict:
    """A new record entry for ``run``, not started yet."""
    return {
        "name": run.name,
        "parameters": run.parameters,
        "repeat": run.repeat,
        "random_seed": run.random_seed,
        "conf_params": run.conf_params,
        "command": command,
        "status": PENDING,
        "exit_code": None,
        "start_time": None,
        "end_time": None,
    }


def _grid_key(entry: dict) -> str:
    """What makes a run the same run: its name, grid point, repeat and seed."""
    return json.dumps(
        [entry["name"], list(entry["parameters"].items()), entry["repeat"], entry["random_seed"]]
    )


def read_record(root_dir: str) -> dict | None:
    """The record in ``root_dir`` (None when there is none).

    Raises:
        ValueError: the file is not valid JSON or not a grid search record (the message
            names it).
    """
    path = record_path(root_dir)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"grid search record {path} is unreadable: {e}") from e
    runs = record.get("runs") if isinstance(record, dict) else None
    keys = ("name", "parameters", "repeat", "random_seed", "status")
    if not isinstance(runs, list) or not all(
        isinstance(r, dict) and all(k in r for k in keys) and isinstance(r["parameters"], dict)
        for r in runs
    ):
        raise ValueError(f"grid search record {path} is not a grid search record")
    return record


def write_record(root_dir: str, record: dict) -> None:
    """Write ``record`` to ``root_dir/grid_search.json`` atomically."""
    write_text_atomically(record_path(root_dir), json.dumps(record, indent=2) + "\n")


def write_text_atomically(path: str, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it to ``path``."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def check_same_grid(previous: dict, entries: list[dict], path: str) -> None:
    """Refuse to continue the search recorded at ``path`` with a different grid.

    The grid is the same when the runs have the same names, parameters, repeats and
    seeds, in the same order (``desc`` or ``max_worker_num`` may differ).

    Raises:
        ValueError: naming the file and the first run that differs.
    """
    old = [_grid_key(e) for e in previous["runs"]]
    new = [_grid_key(e) for e in entries]
    if old == new:
        return
    where = f"{len(old)} runs there, {len(new)} here"
    for index, (a, b) in enumerate(zip(old, new)):
        if a != b:
            there, here = previous["runs"][index], entries[index]
            if there["name"] != here["name"]:
                where = f"run {index} is {there['name']!r} there, {here['name']!r} here"
            elif there["random_seed"] != here["random_seed"]:
                where = f"run {here['name']!r} has seed {there['random_seed']} there, "
                where += f"{here['random_seed']} here"
            else:
                where = f"run {here['name']!r} has other parameters there"
            break
    raise ValueError(
        f"{path} records a different grid ({where}); give the same search config, conf and "
        "--conf_param values, or another --root_dir"
    )


def merge_previous(entries: list[dict], previous: dict | None) -> list[dict]:
    """``entries`` with the state (status, exit code, times, objective) recorded before."""
    if previous is None:
        return entries
    old = {entry["name"]: entry for entry in previous["runs"]}
    state_keys = ("status", "exit_code", "start_time", "end_time", "pid")
    state_keys += ("objective", "objective_source")
    for entry in entries:
        for key in state_keys:
            if key in old.get(entry["name"], {}):
                entry[key] = old[entry["name"]][key]
    return entries


def is_done(entry: dict, root_dir: str) -> bool:
    """A run that finished by itself (exit 0) and whose directory still exists."""
    return (
        entry["status"] == FINISHED
        and entry.get("exit_code") == 0
        and os.path.isdir(os.path.join(root_dir, entry["name"]))
    )


def save_output_tail(log_path: str, offset: int, run_dir: str) -> str:
    """Copy the last ``TAIL_LINES`` lines written to ``log_path`` after ``offset`` (one
    attempt's output) to ``run_dir/grid_search_stderr.txt``; return that path."""
    with open(log_path, "rb") as f:
        f.seek(max(offset, os.path.getsize(log_path) - 64 * 1024))
        data = f.read()
    lines = data.decode("utf-8", errors="replace").splitlines()[-TAIL_LINES:]
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, STDERR_TAIL_FILE)
    write_text_atomically(path, "\n".join(lines) + "\n")
    return path
