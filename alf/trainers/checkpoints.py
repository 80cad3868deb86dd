"""The checkpoints of a training run (``root_dir/train/algorithm``): what they hold, when they
are written, resuming from them, and starting from another run's weights.

**Exact resume.** A checkpoint holds the algorithm (networks, optimizers, data
transformers), the run's counters and seed, the episode metrics, the RNG states (every
learner rank's), the PBT member's state when there is one, and the replay buffer of an
off-policy algorithm (``TrainerConfig.checkpoint_replay_buffer``; not in ``ckpt-best``,
which is never resumed from). Environments cannot be saved, so right after every
checkpoint the trainer reseeds the training environments with a seed derived from
``(random_seed, iteration)`` (``RunState.env_restart_seed``) and restarts them; a run
resumed from that checkpoint in a new process does the same, and therefore continues
exactly as the uninterrupted run did (same data, same parameters). The price is that the
episodes running at a checkpoint are cut short (they are not counted in metrics).

**When.** Every ``checkpoint_interval`` iterations when it is set, else ``num_checkpoints``
times evenly over the budget; and at the end of training (``save_unless_saved``).

**Initialization from another run** (``TrainerConfig.init_from``): when ``root_dir`` has
no checkpoint of its own, the algorithm's weights (and, with ``init_from_normalizers``,
the data transformers' state) are loaded from another run's checkpoint at construction;
see ``alf.utils.init_from``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable

from alf.parallel import collectives
from alf.trainers import data_parallel
from alf.utils import init_from, seeding
from alf.utils.checkpoint_utils import Checkpointer, CheckpointError, check_resumable, run_identity

#: the version of the checkpoint's layout (another one is refused)
CKPT_VERSION = 1
_REPLAY_BUFFER_WARN_BYTES = 512 * 2**20


class RunCheckpoints:
    """Writes and reads the checkpoints of one run.

    Args:
        root_dir: the run's root_dir (absolute).
        config: the ``TrainerConfig``.
        algorithm: the ``RLAlgorithm`` trained.
        run: the trainer's ``RunState`` (counters and seeds saved and restored).

    Attributes:
        checkpointer: the ``Checkpointer`` of ``root_dir/train/algorithm``.
        saved_iteration: the iteration of the last checkpoint written or resumed from.
        best_eval: the best evaluation's average return so far (``ckpt-best``).
    """

    def __init__(self, root_dir: str, config, algorithm, run):
        self.checkpointer = Checkpointer(
            os.path.join(root_dir, "train", "algorithm"), keep=config.keep_checkpoints
        )
        self._root_dir = root_dir
        self._config = config
        self._algorithm = algorithm
        self._run = run
        self._parts: dict[str, Callable[[], dict]] = {}
        self.saved_iteration = None
        self.best_eval = -math.inf
        self._last_fraction = 0.0

    @property
    def has_checkpoint(self) -> bool:
        """``root_dir`` has a checkpoint of its own."""
        return bool(self.checkpointer.steps())

    def add_part(self, name: str, state_dict: Callable[[], dict]) -> None:
        """Save ``state_dict()`` under ``name`` in every checkpoint (the PBT member's)."""
        self._parts[name] = state_dict

    # -- construction --------------------------------------------------------------

    def load_resume_state(self) -> dict | None:
        """The newest readable checkpoint of ``root_dir`` (None: a fresh run), checked
        before anything is written: none readable, another version, a run of another
        algorithm, or tensors that do not fit the algorithm built now are a ``ValueError``
        naming them."""
        try:
            state = self.checkpointer.load(map_location="cpu")
            check_resumable(
                state, self._algorithm, self._root_dir, self.checkpointer.directory, CKPT_VERSION
            )
        except CheckpointError as e:
            raise ValueError(str(e)) from e
        return state

    def init_from(self) -> str | None:
        """Apply ``TrainerConfig.init_from`` unless ``root_dir`` has its own checkpoint
        (done at construction, so a bad ``init_from`` fails before anything is written).

        Returns:
            the checkpoint file the weights came from (None when not applied).
        """
        cfg = self._config
        if not cfg.init_from:
            return None
        if self.has_checkpoint:
            logging.info(
                "%s has its own checkpoint: resuming from it and ignoring init_from=%s",
                self.checkpointer.directory,
                cfg.init_from,
            )
            return None
        return init_from.initialize_from(
            self._algorithm, cfg.init_from, with_data_transformer=cfg.init_from_normalizers
        )

    # -- writing ---------------------------------------------------------------------

    def state(self, with_replay_buffer: bool = True) -> dict:
        """What a checkpoint of the current iteration holds (this rank's RNG states)."""
        run, alg = self._run, self._algorithm
        state = {
            "version": CKPT_VERSION,
            "iteration": run.iteration,
            "env_steps": run.env_steps,
            "best_eval": self.best_eval,
            "random_seed": run.seed,
            "algorithm": alg.state_dict(),
            "metrics": alg.metrics.state_dict(),
            "rng": seeding.get_rng_state(),
            **run_identity(alg),
        }
        if with_replay_buffer:
            state.update(self._replay_buffer_state())
        for name, state_dict in self._parts.items():
            state[name] = state_dict()
        return state

    def _replay_buffer_state(self) -> dict:
        """``{"replay_buffer": state}`` when configured and the algorithm has a buffer."""
        buffer = self._algorithm.replay_buffer
        if buffer is None or not self._config.checkpoint_replay_buffer:
            return {}
        if not getattr(buffer, "enable_checkpoint", True):  # ReplayBuffer.enable_checkpoint
            return {}
        state = buffer.state_dict()
        nbytes = buffer.state_nbytes(state)
        if nbytes > _REPLAY_BUFFER_WARN_BYTES:
            logging.warning(
                "The checkpoint holds a %.0f MB replay buffer "
                "(TrainerConfig.checkpoint_replay_buffer=False leaves it out)",
                nbytes / 2**20,
            )
        return {"replay_buffer": state}

    def save(self, collective: bool = True) -> None:
        """Write the checkpoint of the current iteration.

        With several learner ranks, all of them call it together (``collective``): their
        RNG states are gathered, and after that barrier rank 0 alone writes. Without
        ``collective`` (one rank failing alone) rank 0 writes its own state only.
        """
        start = time.time()
        rng_per_rank = None
        if collective and collectives.is_active():
            rng_per_rank = data_parallel.gathered_rng_states()
            collectives.barrier()
        if collectives.is_main():
            state = self.state()
            if rng_per_rank is not None:
                state["rng_per_rank"] = rng_per_rank
            path = self.checkpointer.save(self._run.iteration, state)
            logging.info("Checkpoint %s written in %.2fs", path, time.time() - start)
        self.saved_iteration = self._run.iteration

    def save_unless_saved(self, collective: bool = True) -> None:
        """The checkpoint of the last completed iteration, unless it is written already."""
        if self.saved_iteration != self._run.iteration:
            self.save(collective=collective)

    def due(self) -> bool:
        """Whether the iteration just completed is to be checkpointed (called once per
        iteration; never at the last one, which the end of training saves)."""
        cfg = self._config
        if cfg.checkpoint_interval > 0:
            due = self._run.iteration % cfg.checkpoint_interval == 0
        else:
            num = max(cfg.num_checkpoints, 1)
            done = self._run.fraction_done()
            due = math.floor(done * num) > math.floor(self._last_fraction * num)
            self._last_fraction = done
        return due and not self._run.done()

    def save_best(self, average_return: float) -> bool:
        """Keep the state as ``ckpt-best`` when ``average_return`` beats the best so far
        (and ``save_checkpoint_for_best_eval``); whether it was written."""
        if not (self._config.save_checkpoint_for_best_eval and average_return > self.best_eval):
            return False  # (a NaN return is no better either)
        self.best_eval = average_return
        self.checkpointer.save_best(self.state(with_replay_buffer=False), average_return)
        return True

    # -- resuming --------------------------------------------------------------------

    def restore(self, state: dict) -> bool:
        """Load ``state`` (``load_resume_state``'s) into the algorithm, its metrics and
        replay buffer, the run's counters and seed, and the RNGs.

        Returns:
            whether the run's seed changed (the checkpoint's seed is the one in force).
        """
        run, alg = self._run, self._algorithm
        seed = int(state["random_seed"])
        old_seed = run.seed
        seed_changed = run.adopt_seed(seed)
        if seed_changed:
            logging.warning("Resuming with the run's random seed %d instead of %d", seed, old_seed)
        alg.load_state_dict(state["algorithm"])
        alg.metrics.load_state_dict(state["metrics"])
        if "replay_buffer" in state and alg.learner.keeps_replay_buffer:
            # (a learner without one resumes only from an emptied buffer: check_resumable)
            alg.load_replay_buffer_state(state["replay_buffer"])
        run.iteration = int(state["iteration"])
        run.env_steps = int(state["env_steps"])
        self.saved_iteration = run.iteration
        self.best_eval = float(state["best_eval"])
        rng_state = data_parallel.own_rng_state(state)
        if rng_state is not None:
            seeding.set_rng_state(rng_state)
        else:  # written by another number of ranks: a fresh stream for this rank
            seeding.seed_generators(seeding.derived_seed(run.rank_seed, run.iteration))
        self._last_fraction = run.fraction_done()
        return seed_changed
