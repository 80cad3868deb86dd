"""Where the trainer's summaries go: tensorboard writers for ``root_dir/train`` and
``root_dir/eval``, the hyperparameters in TensorBoard's HParams view, and (optionally)
a Weights & Biases run mirroring the scalars (``alf.summary.wandb_logger``).

Only the learner of rank 0 opens a ``Tracking`` (the others write no summaries);
``RunSummaries`` is what the trainer writes through, on every rank.
"""

from __future__ import annotations

import logging
import os

import torch
from torch.utils.tensorboard import SummaryWriter

import alf.summary
from alf.parallel import collectives
from alf.summary import hparams as hparams_lib
from alf.summary import wandb_logger
from alf.trainers import data_parallel


def check_config(config) -> None:
    """Start-up checks (nothing written): wandb importable when asked for."""
    if config.use_wandb:
        wandb_logger.check_available()


class Tracking:
    """The summary writers of a training run.

    Args:
        root_dir: the run's root_dir (created and locked already).
        config: the ``TrainerConfig``.
        random_seed: the run's seed (in the hyperparameters).
    """

    def __init__(self, root_dir: str, config, random_seed: int):
        self.writers = {
            name: SummaryWriter(
                os.path.join(root_dir, name), flush_secs=config.summaries_flush_secs
            )
            for name in ("train", "eval")
        }
        self.wandb_run = None
        hparams = hparams_lib.flat_configuration()
        hparams["random_seed"] = int(random_seed)
        self.hparams = hparams
        try:
            hparams_lib.write_hparams(root_dir, hparams)
            if config.use_wandb:
                self.wandb_run = wandb_logger.WandbRun(
                    root_dir, config.wandb_project, config.wandb_run_name, config=hparams
                )
                logging.info(
                    "wandb: project %s, run %s (id %s)",
                    self.wandb_run.project,
                    self.wandb_run.name,
                    self.wandb_run.run_id,
                )
                self.writers = {
                    name: wandb_logger.MirroredWriter(writer, self.wandb_run, name)
                    for name, writer in self.writers.items()
                }
        except BaseException:
            self.close(0, 0)
            raise
        alf.summary.set_default_writer(self.writers["train"])

    def commit(self, iteration: int, env_steps: int) -> None:
        """The end of an iteration: hand its scalars to wandb as one row."""
        if self.wandb_run is not None:
            self.wandb_run.commit(iteration, env_steps)

    def close(self, iteration: int, env_steps: int) -> None:
        """Close the writers and the wandb run (idempotent)."""
        writers, self.writers = self.writers, {}
        for writer in writers.values():
            writer.close()
        alf.summary.set_default_writer(None)
        run, self.wandb_run = self.wandb_run, None
        if run is not None:
            run.finish(iteration, env_steps)


class RunSummaries:
    """What the trainer writes after iterations and evaluations: through a ``Tracking`` on
    rank 0, nothing on the other ranks (which still take part in merging the metrics)."""

    def __init__(self):
        self.tracking: Tracking | None = None

    def open(self, root_dir: str, config, random_seed: int) -> None:
        """Open the writers, HParams and wandb (rank 0 alone)."""
        if collectives.is_main():
            self.tracking = Tracking(root_dir, config, random_seed)

    def _writer(self, which: str):
        return None if self.tracking is None else self.tracking.writers.get(which)

    def write_metrics(self, which: str, results: dict, iteration: int, env_steps: int) -> None:
        """``Metrics/<name>`` against iterations and ``Metrics_vs_EnvironmentSteps/<name>``
        against env steps, in ``root_dir/<which>`` (each value's mean)."""
        writer = self._writer(which)
        if writer is None:
            return
        for name, value in results.items():
            value = float(torch.as_tensor(value).float().mean())
            writer.add_scalar(f"Metrics/{name}", value, iteration)
            writer.add_scalar(f"Metrics_vs_EnvironmentSteps/{name}", value, env_steps)

    def write_train(self, results: dict, iter_time: float, env_steps_per_sec: float, run) -> None:
        """An iteration's summaries: the episode ``results`` merged over the ranks (a
        collective: every rank calls it), the env steps, and the iteration's timing."""
        results = data_parallel.merged_results(results)
        results["EnvironmentSteps"] = run.env_steps
        self.write_metrics("train", results, run.iteration, run.env_steps)
        writer = self._writer("train")
        if writer is not None:
            writer.add_scalar("time/train_iter", iter_time, run.iteration)
            writer.add_scalar("time/env_steps_per_sec", env_steps_per_sec, run.iteration)

    def write_eval(self, results: dict, seconds: float, run) -> None:
        """An evaluation's metrics and its duration."""
        self.write_metrics("eval", results, run.iteration, run.env_steps)
        writer = self._writer("eval")
        if writer is not None:
            writer.add_scalar("time/eval", seconds, run.iteration)

    def commit(self, run) -> None:
        """The end of an iteration (wandb's row)."""
        if self.tracking is not None:
            self.tracking.commit(run.iteration, run.env_steps)

    def close(self, run) -> None:
        """Close the writers and the wandb run (idempotent)."""
        if self.tracking is not None:
            self.tracking.close(run.iteration, run.env_steps)
