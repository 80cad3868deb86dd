"""Where the trainer's summaries go: tensorboard writers for ``root_dir/train`` and
``root_dir/eval``, the hyperparameters in TensorBoard's HParams view, and (optionally)
a Weights & Biases run mirroring the scalars (``alf.summary.wandb_logger``).

Only the learner of rank 0 opens a ``Tracking`` (the others write no summaries).
"""

from __future__ import annotations

import logging
import os

from torch.utils.tensorboard import SummaryWriter

import alf.summary
from alf.summary import hparams as hparams_lib
from alf.summary import wandb_logger


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
