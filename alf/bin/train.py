r"""Train a policy: ``python -m alf.bin.train --conf CONF --root_dir DIR``.

* ``--conf``: a Python (``alf.config(...)``) or gin conf file. Optional when
  ``root_dir`` already holds a run: the run's recorded conf is used (resume).
  ``--gin_file`` is ALF's name of the same flag.
* ``--conf_param 'Name.arg=value'`` / ``--gin_param 'Name.arg = value'``:
  override any configurable argument (repeatable).
* ``--random_seed S``, ``--num_threads N`` (``TrainerConfig.random_seed`` /
  ``num_threads``); ``--wandb`` (``TrainerConfig.use_wandb``: also log the scalars to
  Weights & Biases, see ``alf.summary.wandb_logger``); ``--nostore_snapshot`` skips
  copying the alf source into ``root_dir/alf``.
* ``--init_from DIR_OR_CHECKPOINT`` (``TrainerConfig.init_from``): start from the
  network weights (and, with ``TrainerConfig.init_from_normalizers``, the default,
  the data transformers' normalizer statistics) of another run: its ``root_dir``
  (newest readable checkpoint), its ``train/algorithm`` directory, or a checkpoint
  file such as ``ckpt-best.pt``. Optimizers, counters, RNG and replay buffer start
  fresh; the other run is only read. Ignored when ``root_dir`` has its own
  checkpoint (the run resumes). A parameter whose name or shape does not match is
  an error naming it.
* ``--num_processes K``: K data-parallel learner processes on this machine (each steps
  ``1/K`` of the envs; gradients averaged, normalizer statistics pooled; rank 0 writes
  everything). ``torchrun --nproc_per_node K -m alf.bin.train ...`` does the same on one
  or several machines. ``--dist_timeout S``: seconds a rank waits for the others before
  the job fails (default 600). See ``alf.bin.launch_ranks`` and ``docs/scale_out.md``.
* ``--from_record OLD_ROOT_DIR_OR_RUN_JSON``: re-run an experiment from its record
  (``config_files/run.json``, see ``alf.utils.run_record``) into a new
  ``--root_dir``: the recorded conf files, ``--conf_param`` and ``--gin_param``
  values, seed, ``--num_threads`` and ``--init_from``. Flags given on this command
  line override the recorded ones (``--conf_param`` values win over recorded ones
  for the same name; ``--gin_param`` values come first).
  A resume without ``--conf`` takes the same recorded values from ``root_dir``.
* ``--verify_record ROOT_DIR [--verify_iterations N]``: rebuild the run in ``ROOT_DIR``
  from its record (as ``--from_record``), train its first N iterations (default: those
  recorded, at most 5) into a temporary root_dir (``--root_dir``: a new or empty one,
  kept) and compare each iteration's unroll hash with ``ROOT_DIR/train/
  unroll_hashes.jsonl`` (``TrainerConfig.record_unroll_hashes``), one line per
  iteration; exit 0 when all match, 1 at a mismatch (naming the first iteration that
  differs), 2 on bad input. The layout flags (``--num_processes``, ``--conf_param``)
  may differ from the run's. ``ROOT_DIR`` is only read (``alf.trainers.verify_record``).

Every run records how it was made: ``root_dir/alf_config.py`` (the operative
configuration as a runnable conf, headed by comments with the command line,
parameters, flags, seed and versions) and ``root_dir/config_files/run.json``
(machine-readable, self-contained).

Training into an existing ``root_dir`` resumes from its newest checkpoint; a root_dir
holding a run of another algorithm class is refused (``docs/design.md``, section 9).
Bad input (missing conf, unknown configurable or argument, malformed
``--conf_param``, a configured value its argument does not accept, e.g.
``PPOLoss.gamma='high'``, unknown env id, a bad ``--init_from`` or ``--from_record``)
prints one error line and exits with status 2 before anything in ``root_dir`` is
written. One trainer at a time per ``root_dir``: a second one exits with status 2 and
a line naming the directory and the pid of the trainer that holds it
(``alf.utils.run_lock``). SIGTERM / SIGINT save a checkpoint and exit 0 (during
start-up: exit 0 at once, nothing written; see ``alf.trainers.signals``). A NaN or inf
from an environment, or a diverged loss, stops training with one error line and status 1
before anything non-finite is saved (``alf.utils.finite``); an environment that fails for
good (a hung worker or step, a crash loop) stops it the same way, after a checkpoint of
the last completed iteration. ``--verbose`` prints the traceback above any error line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import sys
import tempfile

from absl import app, flags

from alf.bin import (
    SetupError,
    deferred_logs,
    flags_parser,
    launch_ranks,
    lock_directory,
    one_line,
    refuse_stray_arguments,
    report_error,
)

flags.DEFINE_string("conf", None, "Conf file (.py or .gin).")
flags.DEFINE_string("gin_file", None, "ALF's name of --conf (a .gin or .py conf file).")
flags.DEFINE_string("root_dir", None, "Directory for summaries, checkpoints and records.")
flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' overrides.")
flags.DEFINE_multi_string("gin_param", [], "Gin binding overrides, e.g. 'Name.arg = value'.")
flags.DEFINE_integer("random_seed", None, "Random seed (TrainerConfig.random_seed).")
flags.DEFINE_integer("num_threads", None, "Torch threads for training (TrainerConfig).")
flags.DEFINE_bool("store_snapshot", True, "Store a snapshot of the alf source in root_dir.")
flags.DEFINE_string(
    "init_from", None, "Start from the weights of this run dir or checkpoint file (TrainerConfig)."
)
flags.DEFINE_string(
    "from_record", None, "Re-run the experiment recorded in this root_dir or run.json."
)
flags.DEFINE_bool(
    "wandb", None, "Also log the scalars to Weights & Biases (TrainerConfig.use_wandb)."
)
flags.DEFINE_string(
    "verify_record",
    None,
    "Re-run the first iterations of the run in this root_dir and "
    "compare their unroll hashes with its record.",
)
flags.DEFINE_integer(
    "verify_iterations", None, "Iterations --verify_record re-runs (default: up to 5)."
)
flags.DEFINE_bool("verbose", False, "On an error, print its traceback above the error line.")
flags.DEFINE_integer(
    "num_processes", 1, "Data-parallel learner processes on this machine (started by torchrun)."
)
flags.DEFINE_float(
    "dist_timeout", None, "Seconds a learner rank waits for the others (ALF_DIST_TIMEOUT)."
)

FLAGS = flags.FLAGS


@dataclasses.dataclass
class RunArgs:
    """Everything that configures a run, resolved from the flags (and a record)."""

    conf: str
    conf_params: list
    gin_params: list
    random_seed: int | None = None
    num_threads: int | None = None
    init_from: str | None = None
    wandb: bool | None = None
    record_details: dict = dataclasses.field(default_factory=dict)

    def overrides(self, root_dir: str) -> list:
        """The flag values as ``--conf_param`` strings (after the user's, so those win)."""
        result = [f"TrainerConfig.root_dir={root_dir!r}"]
        for name in ("random_seed", "num_threads", "init_from"):
            if getattr(self, name) is not None:
                result.append(f"TrainerConfig.{name}={getattr(self, name)!r}")
        if self.wandb is not None:
            result.append(f"TrainerConfig.use_wandb={self.wandb!r}")
        return result


def _absolute(path: str | None) -> str | None:
    return None if path is None else os.path.abspath(os.path.expanduser(path))


def _resolve_args(root_dir: str, scratch_dir: str) -> RunArgs:
    from alf.utils import run_record

    if FLAGS.from_record:
        args = _args_from_record(scratch_dir)
    elif FLAGS.conf:
        if not os.path.isfile(FLAGS.conf):
            raise SetupError(f"conf file '{FLAGS.conf}' does not exist")
        args = RunArgs(FLAGS.conf, [], [])
    else:
        try:
            args = RunArgs(*run_record.read_run_record(root_dir))
        except FileNotFoundError as e:
            raise SetupError(f"--conf is required: {e}") from e
        except ValueError as e:
            raise SetupError(one_line(e)) from e
        _take_recorded_flags(args, run_record.read_record(root_dir) or {}, root_dir)
    # Command-line values are immutable and the first one set wins: the new ones go first.
    # (This also checks their syntax before the slow imports below.)
    try:
        args.conf_params = run_record.merge_conf_params(args.conf_params, FLAGS.conf_param)
    except ValueError as e:
        raise SetupError(one_line(e)) from e
    args.gin_params = list(FLAGS.gin_param) + list(args.gin_params)
    for name in ("random_seed", "num_threads", "wandb"):
        if getattr(FLAGS, name) is not None:
            setattr(args, name, getattr(FLAGS, name))
    if FLAGS.init_from is not None:
        args.init_from = _absolute(FLAGS.init_from)
    return args


def _args_from_record(scratch_dir: str) -> RunArgs:
    """The recorded run's arguments; its conf files are recreated in ``scratch_dir``."""
    from alf.utils import run_record

    if FLAGS.conf:
        raise SetupError("give either --conf or --from_record, not both")
    try:
        path, record = run_record.load_record(FLAGS.from_record)
    except ValueError as e:
        raise SetupError(one_line(e)) from e
    args = RunArgs(
        conf=run_record.recreate_conf_files(record, scratch_dir),
        conf_params=record.get("conf_params", []),
        gin_params=record.get("gin_params", []),
        record_details={
            "recreated_from": path,
            "original_conf_file": record.get("original_conf_file"),
        },
    )
    return _take_recorded_flags(args, record, path)


def _take_recorded_flags(args: RunArgs, record: dict, where: str) -> RunArgs:
    """Set the seed, ``num_threads``, ``init_from`` and ``wandb`` of ``args`` from a run
    record."""
    recorded_flags = record.get("flags") or {}
    args.random_seed = record.get("random_seed")
    args.num_threads = recorded_flags.get("num_threads")
    args.init_from = recorded_flags.get("init_from")
    args.wandb = recorded_flags.get("wandb")
    kinds = (("random_seed", int), ("num_threads", int), ("init_from", str), ("wandb", bool))
    for name, kind in kinds:
        value = getattr(args, name)
        if value is not None and not isinstance(value, kind):
            raise SetupError(f"run record {where}: {name} must be a {kind.__name__}: {value!r}")
    return args


def build_trainer(root_dir: str, scratch_dir: str):
    """Parse the conf and build the ``PolicyTrainer`` (nothing is written in ``root_dir``).

    Returns:
        ``(trainer, args)``: the trainer and the resolved ``RunArgs``.
    """
    args = _resolve_args(root_dir, scratch_dir)

    import alf
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    try:
        common.parse_conf_file(
            args.conf, args.conf_params + args.overrides(root_dir), args.gin_params
        )
        alf.config_util.validate_pending_configs()
        trainer = PolicyTrainer(TrainerConfig())
        _check_configs_applied(trainer)
    except SetupError:
        raise
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(one_line(e)) from e
    except launch_ranks.PEER_ERRORS as e:  # the other ranks did not join
        raise SetupError(str(e)) from e
    return trainer, args


def _check_configs_applied(trainer) -> None:
    """A command-line value that could not apply is an error; unused values are listed."""
    import alf

    try:
        unused = alf.config_util.check_command_line_applied()
    except ValueError:
        trainer.close()
        raise
    if unused:
        logging.warning("Configured values not used (yet): %s", ", ".join(unused))


def _record_details(trainer, args: RunArgs) -> dict:
    from alf.utils.checkpoint_utils import algorithm_class

    details = {
        "algorithm_class": algorithm_class(trainer.algorithm),
        "random_seed": trainer.random_seed,
        "init_from_checkpoint": trainer.init_from_checkpoint,
        "command_line": [sys.executable, "-m", "alf.bin.train", *sys.argv[1:]],
        "flags": {
            "random_seed": FLAGS.random_seed,
            "num_threads": args.num_threads,
            "init_from": args.init_from,
            "store_snapshot": FLAGS.store_snapshot,
            "wandb": args.wandb,
        },
    }
    details.update(args.record_details)
    details.update(launch_ranks.record_details(trainer.random_seed))
    return details


def main(argv) -> int:
    if refuse_stray_arguments("alf.bin.train", argv):
        return 2
    if FLAGS.verify_record:
        return _verify()
    if FLAGS.verify_iterations is not None:
        print(
            "alf.bin.train: error: --verify_iterations is for --verify_record ROOT_DIR",
            file=sys.stderr,
        )
        return 2
    if not FLAGS.root_dir:
        print("alf.bin.train: error: --root_dir is required", file=sys.stderr)
        return 2
    if FLAGS.gin_file:
        if FLAGS.conf:
            print("alf.bin.train: error: give either --conf or --gin_file", file=sys.stderr)
            return 2
        FLAGS.conf = FLAGS.gin_file  # ALF's flag name for the conf file
    if FLAGS.dist_timeout is not None:
        os.environ["ALF_DIST_TIMEOUT"] = str(FLAGS.dist_timeout)
    if FLAGS.num_processes != 1:
        return launch_ranks.start(FLAGS.num_processes, sys.argv[1:])
    root_dir = os.path.abspath(os.path.expanduser(FLAGS.root_dir))
    scratch_dir = tempfile.mkdtemp(prefix="alf-train-")
    try:
        return _train(root_dir, scratch_dir)
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)
        launch_ranks.finish()


def _verify() -> int:
    """``--verify_record``: re-run the recorded run's first iterations, compare hashes."""
    from alf.trainers import verify_record

    if FLAGS.conf or FLAGS.gin_file or FLAGS.from_record:
        print(
            "alf.bin.train: error: --verify_record rebuilds the run from its record: give "
            "no --conf, --gin_file or --from_record",
            file=sys.stderr,
        )
        return 2
    if FLAGS.dist_timeout is not None:
        os.environ["ALF_DIST_TIMEOUT"] = str(FLAGS.dist_timeout)
    work_dir = FLAGS.root_dir
    try:
        recorded = verify_record.recorded_hashes(FLAGS.verify_record, FLAGS.verify_iterations)
        if work_dir and launch_ranks.is_main():  # (rank 0 may have written there already)
            work_dir = verify_record.checked_work_dir(work_dir)
    except ValueError as e:
        report_error("alf.bin.train", e)
        return 2
    temporary = not work_dir
    work_dir = tempfile.mkdtemp(prefix="alf-verify-") if temporary else _absolute(work_dir)
    try:
        if FLAGS.num_processes != 1:  # the ranks train into the same directory
            argv = [*sys.argv[1:], "--root_dir", work_dir]
            return launch_ranks.start(FLAGS.num_processes, argv)
        FLAGS.from_record = FLAGS.verify_record
        scratch_dir = tempfile.mkdtemp(prefix="alf-train-")
        try:
            status = _train(work_dir, scratch_dir, stop_after=len(recorded))
        finally:
            shutil.rmtree(scratch_dir, ignore_errors=True)
            launch_ranks.finish()
        if status != 0 or not launch_ranks.is_main():
            return status
        verdict = verify_record.compare(recorded, work_dir)
        if verdict is not None:
            print(f"alf.bin.train: {verdict}")
            return 1
        print(f"alf.bin.train: the {len(recorded)} iterations match the record")
        return 0
    finally:
        if temporary:
            shutil.rmtree(work_dir, ignore_errors=True)


def _train(root_dir: str, scratch_dir: str, stop_after: int | None = None) -> int:
    from alf.trainers.signals import SignalCatcher, StopRequested

    trainer = None
    try:
        with SignalCatcher(interrupt=True), deferred_logs():
            trainer, args = build_trainer(root_dir, scratch_dir)
            lock = lock_directory(root_dir) if launch_ranks.is_main() else contextlib.nullcontext()
    except (SetupError, StopRequested) as e:
        if trainer is not None:
            trainer.close()
        if isinstance(e, StopRequested):
            print(f"alf.bin.train: stopped by {e} during start-up; nothing was written")
            return 0
        report_error("alf.bin.train", e, FLAGS.verbose)
        return 2
    with lock, SignalCatcher() as catcher:
        if launch_ranks.is_main():  # rank 0 alone writes the run's record
            _write_record(root_dir, trainer, args)
        logging.info("Training in %s with conf %s", root_dir, args.conf)
        status = _run(trainer, catcher, stop_after)
        if status == 0 and launch_ranks.is_main():
            from alf.utils import run_record

            run_record.write_operative_config(root_dir)
    return status


def _write_record(root_dir: str, trainer, args: RunArgs) -> None:
    from alf.utils import run_record

    run_record.write_run_record(
        root_dir,
        args.conf,
        args.conf_params,
        args.gin_params,
        details=_record_details(trainer, args),
        resuming=trainer.has_checkpoint,
    )
    run_record.write_operative_config(root_dir)
    if FLAGS.store_snapshot:
        run_record.store_snapshot(root_dir)


def _run(trainer, catcher, stop_after: int | None = None) -> int:
    """``trainer.train()``; a failure that is not a bug in alf becomes one line and 1."""
    from alf.environments.process_protocol import EnvironmentProcessError
    from alf.environments.step_guard import EnvironmentStepTimeout, StepInterrupted
    from alf.summary.wandb_logger import WandbError
    from alf.utils.checkpoint_utils import CheckpointWriteError
    from alf.utils.finite import NonFiniteError

    try:
        trainer.train(catcher, stop_after=stop_after)
    except StepInterrupted as e:  # outside an iteration (resuming, restarting the envs)
        logging.warning("%s", e)
        print(f"alf.bin.train: stopped by {catcher.caught}; the newest checkpoint is kept")
    except (
        NonFiniteError,
        EnvironmentProcessError,
        EnvironmentStepTimeout,
        CheckpointWriteError,
        WandbError,
    ) as e:
        logging.info("%s", e)  # a worker's traceback, when there is one, is in the log
        report_error("alf.bin.train", e, FLAGS.verbose)
        return 1
    except launch_ranks.PEER_ERRORS as e:
        report_error("alf.bin.train", e, FLAGS.verbose)
        return 1
    return 0


def run() -> None:
    """Console entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=flags_parser("alf.bin.train"))


if __name__ == "__main__":
    run()
