"""What ``root_dir`` keeps about how a run was configured, and how to read it back.

``root_dir/alf_config.py``
    the operative configuration as a runnable Python conf (human-readable).
``root_dir/config_files/``
    copies of every conf file the run loaded, plus ``run.json``: the conf file's
    name and the ``--conf_param`` / ``--gin_param`` values. ``play`` and a
    resumed ``train`` without ``--conf`` rebuild the experiment from these.
``root_dir/alf/``
    a snapshot of the ``alf`` package source (for ``play --use_alf_snapshot``).

Everything is written atomically (aside, then renamed), so an interrupted
write never leaves a half-written record.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

from alf import config_util

CONFIG_DIR = "config_files"
RUN_JSON = "run.json"
OPERATIVE_CONF = "alf_config.py"
SNAPSHOT_DIR = "alf"


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


def write_run_record(root_dir: str, conf_file: str, conf_params=(), gin_params=()) -> None:
    """Copy the loaded conf files and write ``run.json`` under ``root_dir/config_files``.

    When ``conf_file`` is the recorded copy itself (a resume without ``--conf``), the
    copies are kept and only the parameters in ``run.json`` are updated.
    """
    conf_dir = os.path.join(root_dir, CONFIG_DIR)
    if os.path.exists(conf_dir) and os.path.realpath(conf_file).startswith(
        os.path.realpath(conf_dir) + os.sep
    ):
        _update_run_json(conf_dir, conf_params, gin_params)
        return
    tmp = tempfile.mkdtemp(dir=root_dir, prefix=".tmp-conf-")
    try:
        for path in config_util.get_loaded_conf_files() or [os.path.realpath(conf_file)]:
            shutil.copy2(path, os.path.join(tmp, os.path.basename(path)))
        record = {
            "conf_file": os.path.basename(conf_file),
            "original_conf_file": os.path.realpath(conf_file),
            "conf_params": list(conf_params),
            "gin_params": list(gin_params),
        }
        with open(os.path.join(tmp, RUN_JSON), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
        _replace_dir(tmp, conf_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _update_run_json(conf_dir: str, conf_params, gin_params) -> None:
    path = os.path.join(conf_dir, RUN_JSON)
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    record["conf_params"] = list(conf_params)
    record["gin_params"] = list(gin_params)
    _atomic_write_text(path, json.dumps(record, indent=2))


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
    """Write the operative configuration as ``root_dir/alf_config.py``."""
    _atomic_write_text(os.path.join(root_dir, OPERATIVE_CONF), config_util.operative_config_str())


def read_run_record(root_dir: str) -> tuple[str, list, list]:
    """``(conf_file, conf_params, gin_params)`` recorded in ``root_dir``.

    Raises:
        FileNotFoundError: ``root_dir`` has no run record.
    """
    record_path = os.path.join(root_dir, CONFIG_DIR, RUN_JSON)
    if not os.path.exists(record_path):
        raise FileNotFoundError(
            f"{root_dir} has no run record ({record_path}); give --conf explicitly"
        )
    with open(record_path, encoding="utf-8") as f:
        record = json.load(f)
    conf_file = os.path.join(root_dir, CONFIG_DIR, record["conf_file"])
    return conf_file, record.get("conf_params", []), record.get("gin_params", [])


def store_snapshot(root_dir: str) -> str:
    """Copy the source of the imported ``alf`` package to ``root_dir/alf``; return that path."""
    import alf

    package_dir = os.path.dirname(os.path.abspath(alf.__file__))
    dst = os.path.join(root_dir, SNAPSHOT_DIR)
    _replace_dir(package_dir, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst
