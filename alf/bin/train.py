r"""Train a policy: ``python -m alf.bin.train --conf CONF --root_dir DIR``.

* ``--conf``: a Python (``alf.config(...)``) or gin conf file. Optional when
  ``root_dir`` already holds a run: the run's recorded conf is used (resume).
* ``--conf_param 'Name.arg=value'`` / ``--gin_param 'Name.arg = value'``:
  override any configurable argument (repeatable).
* ``--random_seed S``, ``--num_threads N``; ``--nostore_snapshot`` skips copying
  the alf source into ``root_dir/alf``.

Training into an existing ``root_dir`` resumes from its newest checkpoint.
Bad input (missing conf, unknown configurable or argument, malformed
``--conf_param``, unknown env id) prints one error line and exits with status 2
before anything in ``root_dir`` is written. SIGTERM / SIGINT save a checkpoint
and exit 0.
"""

from __future__ import annotations

import logging
import os
import sys

from absl import app, flags

from alf.bin import SetupError, deferred_logs, one_line

flags.DEFINE_string("conf", None, "Conf file (.py or .gin).")
flags.DEFINE_string("root_dir", None, "Directory for summaries, checkpoints and records.")
flags.DEFINE_multi_string("conf_param", [], "'Name.arg=value' overrides.")
flags.DEFINE_multi_string("gin_param", [], "Gin binding overrides, e.g. 'Name.arg = value'.")
flags.DEFINE_integer("random_seed", None, "Random seed (TrainerConfig.random_seed).")
flags.DEFINE_integer("num_threads", None, "Torch threads for training (TrainerConfig).")
flags.DEFINE_bool("store_snapshot", True, "Store a snapshot of the alf source in root_dir.")

FLAGS = flags.FLAGS


def _resolve_conf(root_dir: str):
    from alf.utils import run_record

    if FLAGS.conf:
        if not os.path.isfile(FLAGS.conf):
            raise SetupError(f"conf file '{FLAGS.conf}' does not exist")
        conf, conf_params, gin_params = FLAGS.conf, [], []
    else:
        try:
            conf, conf_params, gin_params = run_record.read_run_record(root_dir)
        except FileNotFoundError as e:
            raise SetupError(f"--conf is required: {e}") from e
    # Command-line values are immutable and the first one set wins: the new ones go first.
    # (This also checks their syntax before the slow imports below.)
    try:
        conf_params = run_record.merge_conf_params(conf_params, FLAGS.conf_param)
    except ValueError as e:
        raise SetupError(one_line(e)) from e
    return conf, conf_params, list(FLAGS.gin_param) + gin_params


def build_trainer(root_dir: str):
    """Parse the conf and build the ``PolicyTrainer`` (no file is written)."""
    conf, conf_params, gin_params = _resolve_conf(root_dir)

    import alf
    from alf.algorithms.config import TrainerConfig
    from alf.trainers.policy_trainer import PolicyTrainer
    from alf.utils import common

    overrides = [f"TrainerConfig.root_dir={root_dir!r}"]
    if FLAGS.random_seed is not None:
        overrides.append(f"TrainerConfig.random_seed={FLAGS.random_seed}")
    if FLAGS.num_threads is not None:
        overrides.append(f"TrainerConfig.num_threads={FLAGS.num_threads}")
    try:
        common.parse_conf_file(conf, conf_params + overrides, gin_params)
        alf.config_util.validate_pending_configs()
        trainer = PolicyTrainer(TrainerConfig())
    except SetupError:
        raise
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as e:
        raise SetupError(one_line(e)) from e
    return trainer, conf, conf_params, gin_params


def main(argv) -> int:
    del argv
    from alf.utils import run_record

    if not FLAGS.root_dir:
        print("alf.bin.train: error: --root_dir is required", file=sys.stderr)
        return 2
    root_dir = os.path.abspath(os.path.expanduser(FLAGS.root_dir))
    try:
        with deferred_logs():
            trainer, conf, conf_params, gin_params = build_trainer(root_dir)
    except SetupError as e:
        print(f"alf.bin.train: error: {e}", file=sys.stderr)
        return 2
    os.makedirs(root_dir, exist_ok=True)
    run_record.write_run_record(root_dir, conf, conf_params, gin_params)
    run_record.write_operative_config(root_dir)
    if FLAGS.store_snapshot:
        run_record.store_snapshot(root_dir)
    logging.info("Training in %s with conf %s", root_dir, conf)
    trainer.train()
    run_record.write_operative_config(root_dir)
    return 0


def run() -> None:
    """Console entry point."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == "__main__":
    run()
