r"""Grid search: ``python -m alf.bin.grid_search --conf CONF --search_config SEARCH.json
--root_dir DIR``.

Trains one run per point of the grid given by ``SEARCH.json`` (ALF's format; see
``alf.tuning.grid_search.spec``) and per repeat, each as ``python -m alf.bin.train --conf
CONF --root_dir DIR/<run name> --conf_param Name.arg=<value> ...`` in its own subprocess.

* ``--conf_param 'Name.arg=value'``: passed to every run (repeatable); it may not set a
  parameter the search varies.
* ``--max_worker_num N``: most runs at once (default: the config's ``max_worker_num``,
  else the number of CPUs).
* ``--nostore_snapshot``: the runs do not copy the alf source into their root_dir.
* ``--dry_run``: print each run's command (a comment for those finished before); run
  and write nothing.
* ``--status``: print the summary of the search in DIR; run and write nothing.
* ``--stop_timeout S``: after SIGTERM / Ctrl-C, the seconds to wait for the trainers to
  checkpoint and exit before killing them (default 120).

Run names are made of the values, e.g. ``lr=0.001-units=64-r0`` (``r<repeat>`` last).

Seeds: a ``TrainerConfig.random_seed`` set by the search config or by ``--conf_param`` is
used as given, by every repeat. Otherwise, when the conf configures a seed ``S``, repeat
``r`` of every point runs with seed ``S + r``; when it configures none, each run draws its
own (and records it in its ``config_files/run.json``).

``DIR`` holds ``grid_search.json`` (the search and each run's status, exit status and
times, rewritten atomically), ``summary.md`` (the table also printed at the end),
``logs/<run name>.log`` (each run's output) and one root_dir per run. Running the same
command again skips the runs that finished (exit status 0, root_dir present) and runs the
others again; ``alf.bin.train`` resumes them from their checkpoints. A different grid for
an existing ``grid_search.json`` is an error.

Bad input (a missing or invalid search config, an unknown key, a string value ALF would
``eval``, a bad conf or ``--conf_param``, a different grid) prints one error line and exits
with status 2 before anything is written. The exit status is 1 when a run failed, else 0
(also after a stop signal: the summary tells what is left to do).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import sys

from absl import app, flags

from alf.bin import (
    SetupError,
    child_env,
    deferred_logs,
    flags_parser,
    lock_directory,
    one_line,
    refuse_stray_arguments,
)
from alf.tuning.grid_search import record as rec
from alf.tuning.grid_search import spec as grid_spec

flags.DEFINE_string("conf", None, "Conf file (.py or .gin) of every run.")
flags.DEFINE_string("search_config", None, "The search config (JSON, ALF's format).")
flags.DEFINE_string("root_dir", None, "Directory of the search: one root_dir per run in it.")
flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' for every run.")
flags.DEFINE_integer("max_worker_num", None, "Most runs at once (default: the number of CPUs).")
flags.DEFINE_bool("dry_run", False, "Print the commands without running them.")
flags.DEFINE_bool("status", False, "Print the summary of the search in root_dir.")
flags.DEFINE_bool("store_snapshot", True, "Each run stores a snapshot of the alf source.")
flags.DEFINE_float("stop_timeout", 120.0, "Seconds to wait for stopped runs before killing.")

FLAGS = flags.FLAGS
PROGRAM = "alf.bin.grid_search"


@dataclasses.dataclass
class Plan:
    """The checked search: what to run and how."""

    root_dir: str
    conf: str
    spec: grid_spec.SearchSpec
    conf_params: list[str]
    entries: list[dict]
    max_workers: int
    warnings: list[str]


def _user_conf_param_names(spec: grid_spec.SearchSpec) -> list[str]:
    """The names the ``--conf_param`` flags set (none of which the search may vary)."""
    from alf import config_util

    varied = set(spec.names)
    names = []
    for param in FLAGS.conf_param:
        try:
            name, _ = config_util.parse_conf_param(param)
        except ValueError as e:
            raise SetupError(one_line(e)) from e
        if name in varied:
            raise SetupError(f"--conf_param {param!r} sets {name}, which {spec.path} varies")
        names.append(name)
    return names


def _configured_seed(conf: str, conf_params: list[str]) -> int | None:
    """The ``TrainerConfig.random_seed`` the conf configures with ``conf_params`` (also a
    check that the conf loads and that every configured name exists)."""
    import alf
    from alf.utils import common

    logging.disable(logging.WARNING)  # the runs log how they load the conf
    try:
        common.parse_conf_file(conf, conf_params)
        seed = alf.config_util.get_config_value(grid_spec.SEED_NAME)
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(one_line(e)) from e
    finally:
        logging.disable(logging.NOTSET)
        alf.config_util.reset_configs()
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise SetupError(f"{conf}: {grid_spec.SEED_NAME} must be an int, got {seed!r}")
    return seed


def _command(conf: str, run_dir: str, conf_params: list[str]) -> list[str]:
    command = [sys.executable, "-m", "alf.bin.train", "--conf", conf, "--root_dir", run_dir]
    for param in conf_params:
        command += ["--conf_param", param]
    if not FLAGS.store_snapshot:
        command.append("--nostore_snapshot")
    return command


def _max_workers(spec: grid_spec.SearchSpec) -> int:
    if FLAGS.max_worker_num is not None:
        if FLAGS.max_worker_num < 1:
            raise SetupError(f"--max_worker_num must be positive, got {FLAGS.max_worker_num}")
        return FLAGS.max_worker_num
    return spec.max_worker_num or os.cpu_count() or 1


def make_plan(root_dir: str) -> Plan:
    """Check the flags, the search config, the conf and an earlier record; write nothing."""
    for name in ("conf", "search_config"):
        if not getattr(FLAGS, name):
            raise SetupError(f"--{name} is required")
    conf = os.path.abspath(os.path.expanduser(FLAGS.conf))
    if not os.path.isfile(conf):
        raise SetupError(f"conf file '{FLAGS.conf}' does not exist")
    try:
        spec = grid_spec.load_search_config(os.path.abspath(FLAGS.search_config))
    except grid_spec.SearchConfigError as e:
        raise SetupError(one_line(e)) from e
    conf_params = list(FLAGS.conf_param)
    user_names = _user_conf_param_names(spec)
    max_workers = _max_workers(spec)
    warnings = list(spec.warnings)
    first_point = grid_spec.settings(spec)[0]
    probe_params = [grid_spec.conf_param(n, v) for n, v in first_point.items()] + conf_params
    conf_seed = _configured_seed(conf, probe_params)
    seed_fixed = any(map(grid_spec.is_seed_name, spec.names + user_names))
    if seed_fixed and spec.repeats > 1:
        warnings.append(f"the repeats of each point run with the same {grid_spec.SEED_NAME}")
    try:
        runs = grid_spec.expand(spec, None if seed_fixed else conf_seed)
    except grid_spec.SearchConfigError as e:
        raise SetupError(f"search config {spec.path}: {one_line(e)}") from e
    entries = [
        rec.run_entry(
            run, _command(conf, os.path.join(root_dir, run.name), run.conf_params + conf_params)
        )
        for run in runs
    ]
    try:
        previous = rec.read_record(root_dir)
        if previous is not None:
            rec.check_same_grid(previous, entries, rec.record_path(root_dir))
    except ValueError as e:
        raise SetupError(one_line(e)) from e
    if previous is not None and (previous.get("conf"), previous.get("conf_params")) != (
        conf,
        conf_params,
    ):
        warnings.append(
            f"the conf or --conf_param values differ from {rec.record_path(root_dir)}'s; "
            "they apply to the runs still to do"
        )
    entries = rec.merge_previous(entries, previous)
    return Plan(root_dir, conf, spec, conf_params, entries, max_workers, warnings)


def _new_record(plan: Plan) -> dict:
    return {
        "format": rec.RECORD_FORMAT,
        "search_config_file": plan.spec.path,
        "search_config": plan.spec.raw,
        "conf": plan.conf,
        "conf_params": plan.conf_params,
        "store_snapshot": FLAGS.store_snapshot,
        "runs": plan.entries,
    }


def _run(plan: Plan) -> int:
    from alf.tuning.grid_search import summary
    from alf.tuning.grid_search.runner import Runner

    root_dir = plan.root_dir
    try:
        lock = lock_directory(root_dir, "root_dir", "process")
    except SetupError as e:
        _error(str(e))
        return 2
    with lock:
        record = _new_record(plan)
        todo = [entry for entry in record["runs"] if not rec.is_done(entry, root_dir)]
        for entry in todo:
            entry["status"] = rec.PENDING
        rec.write_record(root_dir, record)
        logging.info(
            "Grid search in %s: %d runs, %d already finished, at most %d at once",
            root_dir,
            len(record["runs"]),
            len(record["runs"]) - len(todo),
            plan.max_workers,
        )
        runner = Runner(
            root_dir,
            todo,
            plan.max_workers,
            FLAGS.stop_timeout,
            save=lambda: rec.write_record(root_dir, record),
            env=child_env(),
        )
        runner.run()
        summary.add_objectives(record, root_dir)
        rec.write_record(root_dir, record)
        text = summary.summary_text(record)
        rec.write_text_atomically(os.path.join(root_dir, rec.SUMMARY_FILE), text)
    print(text, end="")
    return 1 if any(entry["status"] == rec.FAILED for entry in record["runs"]) else 0


def _status(root_dir: str) -> int:
    from alf.tuning.grid_search import summary

    try:
        record = rec.read_record(root_dir)
    except ValueError as e:
        _error(one_line(e))
        return 2
    if record is None:
        _error(f"{root_dir} holds no grid search ({rec.RECORD_FILE})")
        return 2
    summary.add_objectives(record, root_dir)
    print(summary.summary_text(record), end="")
    return 0


def _dry_run(plan: Plan) -> int:
    for entry in plan.entries:
        if rec.is_done(entry, plan.root_dir):
            print(f"# {entry['name']}: finished, skipped")
        else:
            print(shlex.join(entry["command"]))
    return 0


def _error(message: str) -> None:
    print(f"{PROGRAM}: error: {message}", file=sys.stderr)


def main(argv) -> int:
    """Run the grid search (or ``--status`` / ``--dry_run``); return the exit status."""
    if refuse_stray_arguments("alf.bin.grid_search", argv):
        return 2
    if not FLAGS.root_dir:
        _error("--root_dir is required")
        return 2
    root_dir = os.path.abspath(os.path.expanduser(FLAGS.root_dir))
    if FLAGS.status:
        return _status(root_dir)
    try:
        with deferred_logs():
            plan = make_plan(root_dir)
    except SetupError as e:
        _error(str(e))
        return 2
    for warning in plan.warnings:
        print(f"{PROGRAM}: warning: {warning}", file=sys.stderr)
    if FLAGS.dry_run:
        return _dry_run(plan)
    return _run(plan)


def run() -> None:
    """Console entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=flags_parser("alf.bin.grid_search"))


if __name__ == "__main__":
    run()
