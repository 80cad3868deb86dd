"""``PolicyTrainer``: builds environments and the algorithm, and runs the training loop.

The loop (``_train``) calls ``algorithm.train_iter()`` until ``num_iterations``
or ``num_env_steps`` is reached, and around it writes tensorboard summaries
(``root_dir/train``, ``root_dir/eval``), evaluates the deterministic policy,
and writes checkpoints (``root_dir/train/algorithm``).

**Initialization from another run** (``TrainerConfig.init_from``): when
``root_dir`` has no checkpoint of its own, the algorithm's weights (and, with
``init_from_normalizers``, the data transformers' state) are loaded from another
run's checkpoint at construction; see ``alf.utils.init_from``.

**Exact resume.** A checkpoint holds the algorithm (networks, optimizers, data
transformers), counters, metrics and RNG states, and the replay buffer of an
off-policy algorithm (``TrainerConfig.checkpoint_replay_buffer``; not in
``ckpt-best``, which is never resumed from). Environments cannot be saved,
so right after every checkpoint the training environments are reseeded with a
seed derived from ``(random_seed, iteration)`` and restarted; a run resumed from
that checkpoint in a new process does the same, and therefore continues exactly
as the uninterrupted run did (same data, same parameters). The price is that the
episodes running at a checkpoint are cut short (they are not counted in metrics).

SIGTERM and SIGINT finish the current iteration, write a checkpoint and return
normally (the CLI then exits 0). An env step still running a few seconds after the
signal (a hung env, a long unroll) is abandoned with the rest of its iteration
(``alf.trainers.signals``); the checkpoint then holds the weights of the last completed
iteration. An environment that fails for good (a worker that hangs, or crashes more than
its restart budget allows) also leaves a checkpoint of the last completed iteration
before the error is raised.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import time

import torch

import alf.summary
from alf.algorithms.config import TrainerConfig
from alf.environments.process_protocol import EnvironmentProcessError
from alf.environments.step_guard import EnvironmentStepTimeout, StepInterrupted
from alf.environments.utils import create_environment
from alf.pbt.member import create_member as create_pbt_member
from alf.samplers.group import create_samplers
from alf.trainers import data_parallel
from alf.trainers.algorithm_factory import create_algorithm
from alf.trainers.evaluator import EvaluationInterrupted, Evaluator
from alf.trainers.progress import ProgressBar
from alf.trainers.signals import SignalCatcher
from alf.trainers.tracking import Tracking, check_config
from alf.utils import device as device_utils
from alf.utils import distributed, init_from, malloc, seeding, torch_utils
from alf.utils.checkpoint_utils import Checkpointer, CheckpointError, check_resumable, run_identity
from alf.utils.schedulers import update_progress

__all__ = ["PolicyTrainer", "create_algorithm"]

_CKPT_VERSION = 1
_REPLAY_BUFFER_WARN_BYTES = 512 * 2**20


class PolicyTrainer:
    """Trains ``config.algorithm_ctor`` on environments from ``create_environment``.

    Args:
        config: the ``TrainerConfig``; ``config.root_dir`` must be set.
    """

    def __init__(self, config: TrainerConfig):
        if not config.root_dir:
            raise ValueError("TrainerConfig.root_dir must be set")
        if config.algorithm_ctor is None:
            raise ValueError("TrainerConfig.algorithm_ctor must be set")
        self._config = config
        self._root_dir = os.path.abspath(os.path.expanduser(config.root_dir))
        self._device = device_utils.set_device(config.device)
        distributed.init_process_group_from_env(self._device)  # several learner ranks
        self._seed, self._rank_seed = data_parallel.seed_this_rank(config.random_seed)
        config.random_seed = self._seed
        torch_utils.configure_cpu_math(
            config.num_threads, config.flush_denormal, config.matmul_precision
        )
        if config.keep_freed_memory and not malloc.keep_freed_memory():
            logging.info("TrainerConfig.keep_freed_memory: not glibc, the allocator is as it was")
        self._env = self._eval_env = self._samplers = None
        self._writers, self._tracking = {}, None
        try:
            self._build()
        except BaseException:  # a bad conf or checkpoint, or a stop signal: no env left running
            self.close()
            raise
        self._iteration = 0
        self._saved_iteration = None
        self._env_steps = 0
        self._best_eval = -math.inf
        self._last_progress = 0.0
        self._catcher = None

    def _build(self) -> None:
        """Environments, algorithm and optimizers, and the checkpoint to resume from."""
        config = self._config
        check_config(config)
        self._env = self._create_env()
        evaluate = config.evaluate and distributed.is_main()  # rank 0 evaluates
        self._eval_env = self._create_eval_env() if evaluate else None
        self._algorithm = self._create_algorithm()
        if self._samplers is not None:
            self._samplers.attach(self._algorithm)
        self._check_optimizers()
        self._checkpointer = Checkpointer(
            os.path.join(self._root_dir, "train", "algorithm"), keep=config.keep_checkpoints
        )
        self._resume_state = self._load_resume_state()
        self._evaluator = self._create_evaluator()
        self._init_from_checkpoint = self._maybe_init_from()
        # population-based training (alf.pbt.member): None unless PBTConfig.workspace is set
        self._pbt = create_pbt_member(self, self._root_dir, self._resume_state)
        if self._pbt is not None and distributed.is_active():
            raise ValueError(
                "PBTConfig.workspace is set: a population member trains in one process "
                "(drop --num_processes)"
            )

    @property
    def algorithm(self):
        return self._algorithm

    @property
    def random_seed(self) -> int:
        """The seed in use (drawn when ``TrainerConfig.random_seed`` is None)."""
        return self._seed

    @property
    def has_checkpoint(self) -> bool:
        """``root_dir`` has a checkpoint of its own: ``train()`` resumes from it."""
        return bool(self._checkpointer.steps())

    @property
    def init_from_checkpoint(self) -> str | None:
        """The checkpoint file the weights were initialized from (``TrainerConfig.init_from``)."""
        return self._init_from_checkpoint

    @property
    def iteration(self) -> int:
        return self._iteration

    @property
    def env_steps(self) -> int:
        return self._env_steps

    # -- construction ----------------------------------------------------------

    def _create_env(self):
        """The training env, or the remote samplers' (``SamplerConfig``; then
        ``self._samplers`` holds them). With K learner ranks, each has ``1/K`` of the envs
        and of the minibatch (``alf.trainers.data_parallel``), and its own samplers."""
        kwargs = {}
        if distributed.is_active():
            cfg = self._config
            kwargs["num_parallel_environments"] = data_parallel.per_rank(
                data_parallel.configured_num_envs(), "create_environment.num_parallel_environments"
            )
            cfg.mini_batch_size = data_parallel.per_rank(
                cfg.mini_batch_size, "TrainerConfig.mini_batch_size"
            )
        self._samplers = create_samplers(
            self._rank_seed, num_envs=kwargs.get("num_parallel_environments")
        )
        if self._samplers is not None:
            return self._samplers.env
        return create_environment(seed=self._rank_seed, **kwargs)

    def _create_eval_env(self):
        """ALF's eval-env rule: in the main process unless ``no_thread_env_for_conf``."""
        cfg = self._config
        return create_environment(
            num_parallel_environments=cfg.num_eval_environments,
            nonparallel=not cfg.no_thread_env_for_conf,
            seed=seeding.derived_seed(self._seed, 999),
        )

    def _create_evaluator(self):
        if self._eval_env is None:
            return None
        return Evaluator(
            self._algorithm,
            self._eval_env,
            self._config.num_eval_episodes,
            seed=seeding.derived_seed(self._seed, 999),
            should_stop=self._stop_requested,
        )

    def _check_optimizers(self) -> None:
        """Build the optimizers now: trainable parameters without one are an error."""
        alg = self._algorithm
        alg.optimizers()
        if alg.modules_without_optimizer:
            raise ValueError(
                f"{alg.name}: the parameters of {', '.join(alg.modules_without_optimizer)} "
                f"have no optimizer, so they would never be trained (set {alg.name}.optimizer)"
            )

    def _stop_requested(self) -> bool:
        """A stop signal arrived (it ends an evaluation at the next env step)."""
        return self._catcher is not None and self._catcher.caught is not None

    def _create_algorithm(self):
        return create_algorithm(self._config, self._env, self._device)

    def _maybe_init_from(self) -> str | None:
        """Apply ``TrainerConfig.init_from`` unless ``root_dir`` has its own checkpoint.

        Done at construction, so a bad ``init_from`` fails before anything is written.

        Returns:
            the checkpoint file the weights came from (None when not applied).
        """
        cfg = self._config
        if not cfg.init_from:
            return None
        if self.has_checkpoint:
            logging.info(
                "%s has its own checkpoint: resuming from it and ignoring init_from=%s",
                self._checkpointer.directory,
                cfg.init_from,
            )
            return None
        return init_from.initialize_from(
            self._algorithm, cfg.init_from, with_data_transformer=cfg.init_from_normalizers
        )

    # -- checkpoints -------------------------------------------------------------

    def _checkpoint_state(self, with_replay_buffer: bool = True) -> dict:
        state = {
            "version": _CKPT_VERSION,
            "iteration": self._iteration,
            "env_steps": self._env_steps,
            "best_eval": self._best_eval,
            "random_seed": self._seed,
            "algorithm": self._algorithm.state_dict(),
            "metrics": self._algorithm.metrics.state_dict(),
            "rng": seeding.get_rng_state(),
            **run_identity(self._algorithm),
        }
        if with_replay_buffer:
            state.update(self._replay_buffer_state())
        if self._pbt is not None:
            state["pbt"] = self._pbt.state_dict()
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

    def _save_checkpoint(self, restart: bool = True, collective: bool = True) -> None:
        """Write the checkpoint of the current iteration, then (``restart``, and no stop
        signal pending) reseed and restart the training envs.

        With several learner ranks, all of them call it together (``collective``): their
        RNG states are gathered, and after that barrier rank 0 alone writes. Without
        ``collective`` (one rank failing alone) rank 0 writes its own state only.
        """
        start = time.time()
        rng_per_rank = None
        if collective and distributed.is_active():
            rng_per_rank = data_parallel.gathered_rng_states()
            distributed.barrier()
        if distributed.is_main():
            state = self._checkpoint_state()
            if rng_per_rank is not None:
                state["rng_per_rank"] = rng_per_rank
            path = self._checkpointer.save(self._iteration, state)
            logging.info("Checkpoint %s written in %.2fs", path, time.time() - start)
        self._saved_iteration = self._iteration
        if restart and not self._stop_requested():
            self._restart_environments()

    def _save_unless_saved(self, collective: bool = True) -> None:
        """The checkpoint of the last completed iteration, unless it is written already."""
        if self._saved_iteration != self._iteration:
            self._save_checkpoint(restart=False, collective=collective)

    def _restart_environments(self) -> None:
        """Reseed and restart the training envs (see 'Exact resume' in the module doc)."""
        self._algorithm.restart_environment(seeding.derived_seed(self._rank_seed, self._iteration))

    def _load_resume_state(self) -> dict | None:
        """The newest readable checkpoint of ``root_dir`` (None: a fresh run), checked at
        construction, before anything is written: none readable, another version, a run of
        another algorithm, or tensors that do not fit the algorithm built now are a
        ``ValueError`` naming them."""
        try:
            state = self._checkpointer.load(map_location="cpu")
            check_resumable(
                state, self._algorithm, self._root_dir, self._checkpointer.directory, _CKPT_VERSION
            )
        except CheckpointError as e:
            raise ValueError(str(e)) from e
        return state

    def _restore(self) -> bool:
        """Restore the checkpoint found at construction, if any; return whether there was one."""
        state, self._resume_state = self._resume_state, None
        if state is None:
            return False
        self._adopt_seed(int(state["random_seed"]))
        self._algorithm.load_state_dict(state["algorithm"])
        self._algorithm.metrics.load_state_dict(state["metrics"])
        if "replay_buffer" in state:
            self._algorithm.load_replay_buffer_state(state["replay_buffer"])
        self._iteration = int(state["iteration"])
        self._saved_iteration = self._iteration
        self._env_steps = int(state["env_steps"])
        self._best_eval = float(state["best_eval"])
        rng_state = data_parallel.own_rng_state(state)
        if rng_state is not None:
            seeding.set_rng_state(rng_state)
        else:  # written by another number of ranks: a fresh stream for this rank
            seeding.seed_generators(seeding.derived_seed(self._rank_seed, self._iteration))
        self._last_progress = self._progress()
        self._restart_environments()
        logging.info("Resumed from iteration %d (%d env steps)", self._iteration, self._env_steps)
        return True

    def _adopt_seed(self, seed: int) -> None:
        """Continue with the run's own seed: env reseeding and evaluation derive from it."""
        if seed == self._seed:
            return
        logging.warning("Resuming with the run's random seed %d instead of %d", seed, self._seed)
        self._seed = seed
        self._rank_seed = data_parallel.rank_seed(seed, distributed.rank())
        self._config.random_seed = seed
        self._evaluator = self._create_evaluator()

    # -- loop --------------------------------------------------------------------

    def train(self, catcher: SignalCatcher | None = None) -> None:
        """Run training to the end (or to SIGTERM/SIGINT), then close the environments.

        Args:
            catcher: an entered ``SignalCatcher`` to take the stop signal from (the CLI's,
                which already covers writing the run's record); None: one of its own.
        """
        try:
            restored = self._restore()
            self._open_writers()
            distributed.broadcast_state(self._algorithm)  # all ranks start from rank 0's
            if not restored:
                self._prenormalize()
            with contextlib.nullcontext(catcher) if catcher else SignalCatcher() as active:
                self._catcher = active
                self._train()
        finally:
            self.close()

    def _prenormalize(self) -> None:
        """``TrainerConfig.num_prenormalization_steps`` of the initial policy (fresh runs)."""
        num_steps = self._config.num_prenormalization_steps
        if num_steps <= 0:
            return
        start = time.time()
        (steps,) = distributed.sum_across_ranks([self._algorithm.prenormalize(num_steps)])
        self._env_steps += int(steps)
        logging.info(
            "Prenormalization: %d env steps in %.1fs", self._env_steps, time.time() - start
        )

    def _open_writers(self) -> None:
        """Summary writers, HParams and wandb (``alf.trainers.tracking``): rank 0 alone."""
        if distributed.is_main():
            self._tracking = Tracking(self._root_dir, self._config, self._seed)
            self._writers = self._tracking.writers

    def _done(self) -> bool:
        cfg = self._config
        if cfg.num_iterations > 0 and self._iteration >= cfg.num_iterations:
            return True
        return cfg.num_env_steps > 0 and self._env_steps >= cfg.num_env_steps

    def _progress(self) -> float:
        cfg = self._config
        fractions = []
        if cfg.num_iterations > 0:
            fractions.append(self._iteration / cfg.num_iterations)
        if cfg.num_env_steps > 0:
            fractions.append(self._env_steps / cfg.num_env_steps)
        return max(fractions)

    def _train(self) -> None:
        progress_bar = ProgressBar(
            enabled=self._config.progress_bar and sys.stdout.isatty() and distributed.is_main()
        )
        try:
            self._train_loop(progress_bar)
        finally:  # an error's line then starts on a line of its own
            progress_bar.close()
        if self._stop_agreed():
            logging.warning("Received %s: saving a checkpoint and stopping", self._catcher.caught)
        self._save_unless_saved()

    def _train_loop(self, progress_bar: ProgressBar) -> None:
        cfg = self._config
        start_time = time.time()
        start_steps = self._env_steps
        self._stop_everywhere = False
        while not self._done() and not self._stop_agreed():
            update_progress(self._iteration, self._env_steps, self._progress())
            record = self._iteration % cfg.summary_interval == 0
            alf.summary.set_global_counter(self._iteration)
            iter_start = time.time()
            with alf.summary.record_if(record), alf.summary.average_scalars():
                steps = self._agree_on_steps(self._run_iteration())
            if steps is None:
                break
            iter_time = time.time() - iter_start
            self._iteration += 1
            self._env_steps += steps
            if record:
                self._summarize_train(steps / max(iter_time, 1e-9), iter_time)
            self._maybe_evaluate()
            if self._tracking is not None:
                self._tracking.commit(self._iteration, self._env_steps)
            if self._pbt is not None and self._pbt.after_iteration():
                break  # PBTConfig.stop_after_check: the checkpoint is written below
            self._maybe_checkpoint()
            rate = (self._env_steps - start_steps) / max(time.time() - start_time, 1e-9)
            progress_bar.update(
                self._progress(), self._iteration, self._env_steps, rate, self._algorithm.metrics
            )

    def _stop_agreed(self) -> bool:
        """A stop signal arrived (with several learner ranks: at any rank, as agreed at the
        end of the last iteration, so that all of them stop after the same one)."""
        if distributed.is_active():
            return self._stop_everywhere
        return self._catcher.caught is not None

    def _agree_on_steps(self, steps: int | None) -> int | None:
        """The env steps of the iteration over all ranks (None when any rank abandoned it);
        also agrees on a stop signal any rank received."""
        if not distributed.is_active():
            return steps
        total, abandoned, stopping = distributed.sum_across_ranks(
            [steps or 0, steps is None, self._catcher.caught is not None]
        )
        self._stop_everywhere = stopping > 0
        return None if abandoned else int(total)

    def _run_iteration(self) -> int | None:
        """``train_iter()``'s env steps; None when a stop signal abandoned its unroll.

        An environment that failed for good leaves the checkpoint of the last completed
        iteration behind before its error goes on.
        """
        try:
            return self._algorithm.train_iter()
        except StepInterrupted as e:
            logging.warning(
                "%s. Iteration %d is abandoned; the checkpoint holds iteration %d (a resume "
                "from it is not bit-identical to an uninterrupted run)",
                e,
                self._iteration + 1,
                self._iteration,
            )
            return None
        except (EnvironmentProcessError, EnvironmentStepTimeout):
            logging.error("An environment failed: saving iteration %d first", self._iteration)
            self._save_unless_saved(collective=False)  # the other ranks are not here
            raise

    def _maybe_checkpoint(self) -> None:
        cfg = self._config
        if cfg.checkpoint_interval > 0:
            due = self._iteration % cfg.checkpoint_interval == 0
        else:
            num = max(cfg.num_checkpoints, 1)
            done = self._progress()
            due = math.floor(done * num) > math.floor(self._last_progress * num)
            self._last_progress = done
        if due and not self._done():
            self._save_checkpoint()

    def _maybe_evaluate(self) -> None:
        cfg = self._config
        if self._evaluator is None:
            return
        if self._iteration % cfg.eval_interval != 0 and not self._done():
            return
        start = time.time()
        try:
            metrics = self._evaluator.evaluate()
        except EvaluationInterrupted:
            logging.warning("Evaluation at iteration %d stopped by a signal", self._iteration)
            return
        self._write_metrics("eval", metrics.results())
        self._writers["eval"].add_scalar("time/eval", time.time() - start, self._iteration)
        average = float(torch.as_tensor(metrics.average_return).float().mean())
        logging.info(
            "Iteration %d: eval AverageReturn %.3f over %d episodes",
            self._iteration,
            average,
            metrics.num_episodes,
        )
        if cfg.save_checkpoint_for_best_eval and average > self._best_eval:
            self._best_eval = average
            self._checkpointer.save_best(self._checkpoint_state(with_replay_buffer=False), average)

    # -- summaries ---------------------------------------------------------------

    def _write_metrics(self, which: str, results: dict) -> None:
        writer = self._writers.get(which)
        if writer is None:  # not rank 0
            return
        for name, value in results.items():
            value = float(torch.as_tensor(value).float().mean())
            writer.add_scalar(f"Metrics/{name}", value, self._iteration)
            writer.add_scalar(f"Metrics_vs_EnvironmentSteps/{name}", value, self._env_steps)

    def _summarize_train(self, steps_per_sec: float, iter_time: float) -> None:
        results = data_parallel.merged_results(self._algorithm.metrics.results())
        results["EnvironmentSteps"] = self._env_steps
        self._write_metrics("train", results)
        writer = self._writers.get("train")
        if writer is None:
            return
        writer.add_scalar("time/train_iter", iter_time, self._iteration)
        writer.add_scalar("time/env_steps_per_sec", steps_per_sec, self._iteration)

    # -- teardown ----------------------------------------------------------------

    def close(self) -> None:
        """Close writers and environments (idempotent)."""
        if self._tracking is not None:
            self._tracking.close(self._iteration, self._env_steps)
        self._writers = {}
        alf.summary.set_default_writer(None)
        for env in (self._env, self._eval_env):
            if env is not None:
                env.close()
        if self._samplers is not None:
            self._samplers.close()
