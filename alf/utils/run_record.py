"""What ``root_dir`` keeps about how a run was configured, and how to read it back.

``root_dir/alf_config.py``
    the operative configuration as a runnable Python conf (human-readable),
    headed by comment lines giving the command line, conf file, every
    ``--conf_param`` / ``--gin_param``, the flags, the random seed used and the
    versions (alf and its git commit, python, torch, gymnasium, numpy).
``root_dir/config_files/``
    copies of every conf file the run loaded, plus ``run.json``, the
    machine-readable record (below). ``play``, a resumed ``train`` without
    ``--conf`` and ``train --from_record`` rebuild the experiment from these.
``root_dir/pbt/hyperparameters.json``
    a PBT member's hyperparameter values in force and their history
    (``alf.pbt.member``); ``alf_config.py``'s header then quotes its ``note``.
``root_dir/alf/``
    a snapshot of the ``alf`` package source (for ``play --use_alf_snapshot``).

``run.json`` (``RECORD_FORMAT`` 2) holds::

    format           2
    conf_file        name of the main conf file (in config_files/ and conf_files)
    original_conf_file   where it was loaded from
    algorithm_class  the fully qualified class of the algorithm trained (for an ``Agent``
                     conf, the RL algorithm it built); a record without it (older runs)
                     leaves the algorithm unknown (``alf.utils.checkpoint_utils``)
    conf_files       {name: text} of every conf file loaded, in loading order
    conf_params      the --conf_param values, in order (first wins)
    gin_params       the --gin_param values, in order
    random_seed      the seed the run used (drawn and recorded when none was given)
    flags            {random_seed, num_threads, init_from, store_snapshot} as given
    init_from_checkpoint   the checkpoint file the weights came from (or null)
    command_line     sys.argv; cwd: the working directory
    start_time       UTC, ISO 8601
    versions         {alf, alf_git_commit, alf_git_dirty, python, torch, gymnasium, numpy}
    recreated_from   the record this run was recreated from (``--from_record``) or null
    resumed          [{time, command_line, conf_params, gin_params}] for each resume

It is self-contained: ``conf_files`` lets ``recreate_conf_files`` rebuild the conf
files anywhere, so ``train --from_record run.json`` needs nothing else. A record
written before format 2 (only ``conf_file``, ``original_conf_file``,
``conf_params``, ``gin_params``) still serves resume and play.

Everything is written atomically (aside, then renamed), so an interrupted
write never leaves a half-written record.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile

from alf import config_util

CONFIG_DIR = "config_files"
RUN_JSON = "run.json"
OPERATIVE_CONF = "alf_config.py"
SNAPSHOT_DIR = "alf"
RECORD_FORMAT = 2
#: a PBT member's record of its changing hyperparameters (``alf.pbt.member``)
PBT_HYPERPARAMETERS = os.path.join("pbt", "hyperparameters.json")


def _atomic_write_text(path: str, text: str) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _replace_dir(src_dir: str, dst: str, ignore=None) -> None:
    """Copy ``src_dir`` to ``dst`` via a temporary sibling, then swap it in."""
    parent = os.path.dirname(dst)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-")
    staged = os.path.join(tmp, "content")
    shutil.copytree(src_dir, staged, ignore=ignore)
    old = None
    if os.path.exists(dst):
        old = os.path.join(tmp, "old")
        os.replace(dst, old)
    os.replace(staged, dst)
    shutil.rmtree(tmp, ignore_errors=True)


def write_run_record(
    root_dir: str,
    conf_file: str,
    conf_params=(),
    gin_params=(),
    details: dict | None = None,
    resuming: bool = False,
) -> None:
    """Copy the loaded conf files and write ``run.json`` under ``root_dir/config_files``.

    Args:
        root_dir: the run's root directory.
        conf_file: the main conf file loaded.
        conf_params: the ``--conf_param`` values, in order.
        gin_params: the ``--gin_param`` values, in order.
        details: more fields of the record (``algorithm_class``, ``random_seed``,
            ``flags``, ``init_from_checkpoint``, ``recreated_from``, ``original_conf_file``);
            the command line, start time and versions are added here.
        resuming: the run resumes from its own checkpoint: an existing record is
            kept (its seed, start time, versions, algorithm class: a record without one
            takes ``details``') and the resume is appended to its ``resumed`` list, with
            the new parameters.
    """
    conf_dir = os.path.join(root_dir, CONFIG_DIR)
    previous = _read_json_or_none(os.path.join(conf_dir, RUN_JSON)) if resuming else None
    if os.path.exists(conf_dir) and os.path.realpath(conf_file).startswith(
        os.path.realpath(conf_dir) + os.sep
    ):
        if resuming:
            record = _resumed(previous or {}, conf_params, gin_params, details)
        else:
            record = _read_json_or_none(os.path.join(conf_dir, RUN_JSON)) or {}
            record.update(details or {}, conf_params=list(conf_params), gin_params=list(gin_params))
        _atomic_write_text(os.path.join(conf_dir, RUN_JSON), _dumps(record))
        return
    conf_files = config_util.get_loaded_conf_files() or [os.path.realpath(conf_file)]
    if previous is not None:
        record = _resumed(previous, conf_params, gin_params, details)
        record.update(conf_file=os.path.basename(conf_file), conf_files=_read_texts(conf_files))
    else:
        record = new_record(conf_file, conf_files, conf_params, gin_params, details)
    tmp = tempfile.mkdtemp(dir=root_dir, prefix=".tmp-conf-")
    try:
        for path in conf_files:
            shutil.copy2(path, os.path.join(tmp, os.path.basename(path)))
        with open(os.path.join(tmp, RUN_JSON), "w", encoding="utf-8") as f:
            f.write(_dumps(record))
        _replace_dir(tmp, conf_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def new_record(conf_file: str, conf_files, conf_params, gin_params, details=None) -> dict:
    """The ``run.json`` content of a run starting now (see the module doc)."""
    record = {
        "format": RECORD_FORMAT,
        "conf_file": os.path.basename(conf_file),
        "original_conf_file": os.path.realpath(conf_file),
        "conf_files": _read_texts(conf_files),
        "conf_params": list(conf_params),
        "gin_params": list(gin_params),
        "random_seed": None,
        "flags": {},
        "init_from_checkpoint": None,
        "command_line": list(sys.argv),
        "cwd": os.getcwd(),
        "start_time": _now(),
        "versions": versions(),
        "recreated_from": None,
        "resumed": [],
    }
    record.update(details or {})
    return record


def _resumed(previous: dict, conf_params, gin_params, details=None) -> dict:
    record = dict(previous)
    record["conf_params"] = list(conf_params)
    record["gin_params"] = list(gin_params)
    entry = {
        "time": _now(),
        "command_line": (details or {}).get("command_line", list(sys.argv)),
        "conf_params": list(conf_params),
        "gin_params": list(gin_params),
    }
    record["resumed"] = list(previous.get("resumed", [])) + [entry]
    if record.get("algorithm_class") is None and (details or {}).get("algorithm_class"):
        record["algorithm_class"] = details["algorithm_class"]  # a record older than the field
    return record


def _read_texts(paths) -> dict:
    texts = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            texts[os.path.basename(path)] = f.read()
    return texts


def _read_json_or_none(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _dumps(record: dict) -> str:
    return json.dumps(record, indent=2) + "\n"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def versions() -> dict:
    """Versions of alf (with its git commit when it is a git checkout), python and libraries."""
    import alf

    result = {"alf": getattr(alf, "__version__", None)}
    result.update(_git_state(os.path.dirname(os.path.abspath(alf.__file__))))
    result["python"] = platform.python_version()
    for name in ("torch", "gymnasium", "numpy"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = importlib.import_module(name)
            except ImportError:
                module = None
        result[name] = getattr(module, "__version__", None)
    return result


def _git_state(directory: str) -> dict:
    """``{alf_git_commit, alf_git_dirty}`` of the checkout holding ``directory`` (None: no git)."""

    def git(*args):
        out = subprocess.run(
            ["git", "-C", directory, *args], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() if out.returncode == 0 else None

    try:
        commit = git("rev-parse", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=no", ".") if commit else None
    except (OSError, subprocess.SubprocessError):
        commit = status = None
    return {"alf_git_commit": commit, "alf_git_dirty": None if status is None else bool(status)}


def merge_conf_params(recorded, overrides) -> list:
    """``overrides`` followed by the ``recorded`` ``--conf_param`` values they do not replace.

    Command-line values are immutable and the first one set wins, so the new values
    must come first; a recorded value for the same name is dropped.

    Raises:
        ValueError: a malformed value in either list.
    """
    overrides = list(overrides)
    replaced = {config_util.parse_conf_param(p)[0] for p in overrides}
    kept = [p for p in recorded if config_util.parse_conf_param(p)[0] not in replaced]
    return overrides + kept


def write_operative_config(root_dir: str) -> None:
    """Write the operative configuration as ``root_dir/alf_config.py``.

    When ``root_dir`` has a run record, the file starts with comment lines that
    give its command line, parameters, flags, seed and versions (``record_comment``).
    """
    record = _read_json_or_none(os.path.join(root_dir, CONFIG_DIR, RUN_JSON))
    header = record_comment(record) if record else ""
    header += _pbt_comment(root_dir)
    path = os.path.join(root_dir, OPERATIVE_CONF)
    _atomic_write_text(path, header + config_util.operative_config_str())


def _pbt_comment(root_dir: str) -> str:
    """The ``note`` lines of a PBT member's ``pbt/hyperparameters.json`` as comments (a PBT
    member changes its hyperparameters while it trains: ``alf.pbt.member``); empty if none."""
    record = _read_json_or_none(os.path.join(root_dir, PBT_HYPERPARAMETERS))
    note = record.get("note") if record else None
    if not isinstance(note, list):
        return ""
    lines = [f"# {str(line)}".replace("\n", " ") for line in note]
    return "\n".join(lines) + "\n\n"


def record_comment(record: dict) -> str:
    """The run record as comment lines (the header of ``alf_config.py``), ending with a blank."""
    lines = [
        "# Run record (machine-readable: config_files/run.json).",
        f"# command_line: {shlex.join(record.get('command_line') or [])}",
        f"# conf_file: {record.get('original_conf_file')}",
    ]
    lines += [f"# conf_param: {p}" for p in record.get("conf_params", [])]
    lines += [f"# gin_param: {p}" for p in record.get("gin_params", [])]
    keys = ("algorithm_class", "random_seed", "init_from_checkpoint", "recreated_from")
    for key in (*keys, "start_time"):
        if record.get(key) is not None:
            lines.append(f"# {key}: {record[key]}")
    for name, value in sorted((record.get("flags") or {}).items()):
        lines.append(f"# flag {name}: {value}")
    for name, value in (record.get("versions") or {}).items():
        lines.append(f"# version {name}: {value}")
    lines += [f"# resumed: {r.get('time')}" for r in record.get("resumed", [])]
    return "\n".join(line.replace("\n", " ") for line in lines) + "\n\n"


def read_run_record(root_dir: str) -> tuple[str, list, list]:
    """``(conf_file, conf_params, gin_params)`` recorded in ``root_dir``.

    Raises:
        FileNotFoundError: ``root_dir`` has no run record.
        ValueError: the record is not valid JSON or lacks fields (naming the file).
    """
    record_path = os.path.join(root_dir, CONFIG_DIR, RUN_JSON)
    if not os.path.exists(record_path):
        raise FileNotFoundError(
            f"{root_dir} has no run record ({record_path}); give --conf explicitly"
        )
    _, record = load_record(record_path)
    conf_file = os.path.join(root_dir, CONFIG_DIR, record["conf_file"])
    return conf_file, record.get("conf_params", []), record.get("gin_params", [])


def read_record(root_dir: str) -> dict | None:
    """The content of ``root_dir``'s ``run.json`` (None when missing or unreadable)."""
    return _read_json_or_none(os.path.join(root_dir, CONFIG_DIR, RUN_JSON))


def load_record(path: str) -> tuple[str, dict]:
    """Read a run record for ``--from_record``: a ``run.json`` file or a run's ``root_dir``.

    Returns:
        ``(record_path, record)``.
    Raises:
        ValueError: no record there, or one that is not valid JSON or lacks the
            fields needed to recreate the run (the message names the file).
    """
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(path):
        path = os.path.join(path, CONFIG_DIR, RUN_JSON)
    if not os.path.isfile(path):
        raise ValueError(f"run record {path} does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"run record {path} is not valid JSON: {e}") from e
    if not isinstance(record, dict):
        raise ValueError(f"run record {path} does not hold a JSON object")
    _check_record(path, record)
    return path, record


def _check_record(path: str, record: dict) -> None:
    conf_files = record.get("conf_files")
    if not isinstance(conf_files, dict) or not conf_files:
        raise ValueError(
            f"run record {path} holds no conf file contents (format < {RECORD_FORMAT}); "
            "run with --conf and its conf_params instead"
        )
    if record.get("conf_file") not in conf_files:
        raise ValueError(f"run record {path}: conf_file {record.get('conf_file')!r} not recorded")
    for key in ("conf_params", "gin_params"):
        value = record.get(key, [])
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise ValueError(f"run record {path}: {key} must be a list of strings")
    for name, text in conf_files.items():
        if not isinstance(text, str) or os.path.basename(name) != name:
            raise ValueError(f"run record {path}: bad conf file entry {name!r}")


def recreate_conf_files(record: dict, directory: str) -> str:
    """Write the record's conf files into ``directory``; return the main conf file's path."""
    for name, text in record["conf_files"].items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(text)
    return os.path.join(directory, record["conf_file"])


def store_snapshot(root_dir: str) -> str:
    """Copy the source of the imported ``alf`` package to ``root_dir/alf``; return that path."""
    import alf

    package_dir = os.path.dirname(os.path.abspath(alf.__file__))
    dst = os.path.join(root_dir, SNAPSHOT_DIR)
    _replace_dir(package_dir, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst
