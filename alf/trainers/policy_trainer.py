"""``PolicyTrainer``: builds environments and the algorithm, and runs the training loop.

The loop (``_train``) calls ``algorithm.train_iter()`` until ``num_iterations`` or
``num_env_steps`` is reached; everything around it is a component with one job:

* ``run_state.RunState``: what the run derives at run time (the seed in force, this
  learner rank's share of the envs and of the minibatch, the counters, and the
  ``Progress`` the schedules read); ``TrainerConfig`` is never changed;
* ``alf.algorithms.factory.create_algorithm``: the conf's algorithm and its data transformers;
* ``checkpoints.RunCheckpoints``: checkpoints (``root_dir/train/algorithm``), exact
  resume, ``init_from``;
* ``evaluator.TrainingEvaluation``: evaluations of the deterministic policy;
* ``tracking.RunSummaries``: tensorboard summaries (``root_dir/train``,
  ``root_dir/eval``), HParams, wandb;
* ``unroll_record.UnrollHashRecord``: the hash of every iteration's unroll
  (``root_dir/train/unroll_hashes.jsonl``);
* ``environments``: the training env (or remote samplers) and the evaluation env;
* ``signals.RunStop``: stop signals (agreed over the learner ranks); ``data_parallel``:
  the other differences of several learner ranks; ``alf.pbt.member``: the
  population-based-training hook; ``progress.ProgressBar``: the terminal bar.

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
import os
import sys
import time

import alf.summary
from alf.algorithms.config import TrainerConfig
from alf.environments.process_protocol import EnvironmentProcessError
from alf.environments.step_guard import EnvironmentStepTimeout, StepInterrupted
from alf.parallel import collectives
from alf.pbt.member import create_member as create_pbt_member
from alf.trainers.algorithm_factory import check_optimizers, create_algorithm
from alf.trainers.checkpoints import RunCheckpoints
from alf.trainers.environments import create_eval_env, create_training_env
from alf.trainers.evaluator import Evaluator, TrainingEvaluation
from alf.trainers.progress import ProgressBar
from alf.trainers.run_state import RunState
from alf.trainers.signals import RunStop, SignalCatcher
from alf.trainers.tracking import RunSummaries, check_config
from alf.trainers.unroll_record import UnrollHashRecord
from alf.utils import device as device_utils
from alf.utils import malloc, torch_utils
from alf.utils.training_progress import progress_in_use

__all__ = ["PolicyTrainer", "create_algorithm"]


class PolicyTrainer:
    """Trains ``config.algorithm_ctor`` on environments from ``create_environment``.

    Args:
        config: the ``TrainerConfig``; ``config.root_dir`` must be set. It is not changed.
    """

    def __init__(self, config: TrainerConfig):
        if not config.root_dir:
            raise ValueError("TrainerConfig.root_dir must be set")
        if config.algorithm_ctor is None:
            raise ValueError("TrainerConfig.algorithm_ctor must be set")
        self._config = config
        self._root_dir = os.path.abspath(os.path.expanduser(config.root_dir))
        self._device = device_utils.set_device(config.device)
        collectives.init_process_group_from_env(self._device)  # several learner ranks
        self._run = RunState.start(config)
        torch_utils.configure_cpu_math(
            config.num_threads, config.flush_denormal, config.matmul_precision
        )
        if config.keep_freed_memory and not malloc.keep_freed_memory():
            logging.info("TrainerConfig.keep_freed_memory: not glibc, the allocator is as it was")
        self._env = self._eval_env = self._samplers = None
        self._stop_after = None
        self._summaries = RunSummaries()
        self._stop = RunStop()
        try:
            with progress_in_use(self._run.progress):
                self._build()
        except BaseException:  # a bad conf or checkpoint, or a stop signal: no env left running
            self.close()
            raise

    def _build(self) -> None:
        """Environments, algorithm and optimizers, and the checkpoint to resume from."""
        config, run = self._config, self._run
        check_config(config)
        self._env, self._samplers = create_training_env(run)
        evaluate = config.evaluate and collectives.is_main()  # rank 0 evaluates
        self._eval_env = create_eval_env(config, run) if evaluate else None
        self._algorithm = create_algorithm(config, self._env, self._device, run)
        if self._samplers is not None:
            self._samplers.attach(self._algorithm)
        # per-env counter-based random streams (alf.utils.random_streams; remote samplers
        # have their own) and minibatches the same on any number of ranks
        self._algorithm.set_acting_streams(run.seed, run.first_env_id)
        check_optimizers(self._algorithm)
        if self._algorithm.mixed_precision is not None:  # TrainerConfig.enable_amp
            logging.info("Training updates in mixed precision: %s", self._algorithm.mixed_precision)
        self._checkpoints = RunCheckpoints(self._root_dir, config, self._algorithm, run)
        self._resume_state = self._checkpoints.load_resume_state()
        self._unroll_record = UnrollHashRecord(
            self._root_dir, self._algorithm, observe=config.record_unroll_hashes
        )
        self._evaluator = self._evaluation = None
        if self._eval_env is not None:
            self._evaluator = Evaluator(
                self._algorithm,
                self._eval_env,
                config.num_eval_episodes,
                seed=run.eval_seed,
                should_stop=self._stop.requested,
            )
            self._evaluation = TrainingEvaluation(
                self._evaluator, config.eval_interval, self._summaries
            )
        self._init_from_checkpoint = self._checkpoints.init_from()
        # population-based training (alf.pbt.member): None unless PBTConfig.workspace is set
        self._pbt = create_pbt_member(self, self._root_dir, self._resume_state)
        if self._pbt is not None:  # (with several ranks, every rank has one: rank 0 decides)
            self._checkpoints.add_part("pbt", self._pbt.state_dict)

    # -- what the run is ---------------------------------------------------------------

    @property
    def algorithm(self):
        return self._algorithm

    @property
    def run_state(self) -> RunState:
        """What the run derived at run time (seeds, per-rank shares, counters, progress)."""
        return self._run

    @property
    def random_seed(self) -> int:
        """The seed in use (drawn when ``TrainerConfig.random_seed`` is None)."""
        return self._run.seed

    @property
    def has_checkpoint(self) -> bool:
        """``root_dir`` has a checkpoint of its own: ``train()`` resumes from it."""
        return self._checkpoints.has_checkpoint

    @property
    def init_from_checkpoint(self) -> str | None:
        """The checkpoint file the weights were initialized from (``TrainerConfig.init_from``)."""
        return self._init_from_checkpoint

    @property
    def iteration(self) -> int:
        return self._run.iteration

    @property
    def env_steps(self) -> int:
        return self._run.env_steps

    # -- the run -------------------------------------------------------------------------

    def train(self, catcher: SignalCatcher | None = None, stop_after: int | None = None) -> None:
        """Run training to the end (or to SIGTERM/SIGINT), then close the environments.

        Args:
            catcher: an entered ``SignalCatcher`` to take the stop signal from (the CLI's,
                which already covers writing the run's record); None: one of its own.
            stop_after: stop (with a checkpoint) once this many iterations are done, the
                budget and everything it drives (schedules, checkpoint times) staying as
                configured (``alf.bin.train --verify_record``); None: run to the end.
        """
        self._stop_after = stop_after
        try:
            with progress_in_use(self._run.progress):
                restored = self._restore()
                self._unroll_record.continue_from(self._run.iteration)
                self._summaries.open(self._root_dir, self._config, self._run.seed)
                collectives.broadcast_state(self._algorithm)  # all ranks start from rank 0's
                if not restored:
                    self._prenormalize()
                with contextlib.nullcontext(catcher) if catcher else SignalCatcher() as active:
                    self._stop.catcher = active
                    self._train()
        finally:
            self.close()

    def _restore(self) -> bool:
        """Restore the checkpoint found at construction, if any; return whether there was one."""
        state, self._resume_state = self._resume_state, None
        if state is None:
            return False
        if self._checkpoints.restore(state):  # the run's own seed is in force
            self._algorithm.set_acting_streams(self._run.seed, self._run.first_env_id)
            if self._evaluator is not None:
                self._evaluator.seed = self._run.eval_seed
        self._restart_environments()
        run = self._run
        logging.info("Resumed from iteration %d (%d env steps)", run.iteration, run.env_steps)
        return True

    def _prenormalize(self) -> None:
        """``TrainerConfig.num_prenormalization_steps`` of the initial policy (fresh runs)."""
        num_steps = self._config.num_prenormalization_steps
        if num_steps <= 0:
            return
        start = time.time()
        (steps,) = collectives.sum_across_ranks([self._algorithm.prenormalize(num_steps)])
        self._run.env_steps += int(steps)
        logging.info(
            "Prenormalization: %d env steps in %.1fs", self._run.env_steps, time.time() - start
        )

    def _train(self) -> None:
        progress_bar = ProgressBar(
            enabled=self._config.progress_bar and sys.stdout.isatty() and collectives.is_main()
        )
        try:
            self._train_loop(progress_bar)
        finally:  # an error's line then starts on a line of its own
            progress_bar.close()
        if self._stop.agreed():
            logging.warning("Received %s: saving a checkpoint and stopping", self._stop.caught)
        self._checkpoints.save_unless_saved()

    def _train_loop(self, progress_bar: ProgressBar) -> None:
        cfg, run = self._config, self._run
        start_time, start_steps = time.time(), run.env_steps
        while not run.done() and not self._stop.agreed() and not self._stopping_early():
            run.publish_progress()
            record = run.iteration % cfg.summary_interval == 0
            alf.summary.set_global_counter(run.iteration)
            iter_start = time.time()
            with alf.summary.record_if(record), alf.summary.average_scalars():
                steps = self._stop.agree_on_steps(self._run_iteration())
            if steps is None:
                break
            iter_time = time.time() - iter_start
            run.iteration += 1
            run.env_steps += steps
            self._unroll_record.commit(run.iteration, run.env_steps)
            if record:
                metrics = self._algorithm.metrics.results()
                self._summaries.write_train(metrics, iter_time, steps / max(iter_time, 1e-9), run)
            self._maybe_evaluate()
            self._summaries.commit(run)
            if self._pbt is not None and self._pbt.after_iteration():
                break  # PBTConfig.stop_after_check: the checkpoint is written below
            if self._checkpoints.due():
                self._save_checkpoint()
            rate = (run.env_steps - start_steps) / max(time.time() - start_time, 1e-9)
            progress_bar.update(
                run.fraction_done(), run.iteration, run.env_steps, rate, self._algorithm.metrics
            )

    def _stopping_early(self) -> bool:
        """``train(stop_after=n)``'s ``n`` iterations are done."""
        return self._stop_after is not None and self._run.iteration >= self._stop_after

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
                self._run.iteration + 1,
                self._run.iteration,
            )
            return None
        except (EnvironmentProcessError, EnvironmentStepTimeout):
            logging.error("An environment failed: saving iteration %d first", self._run.iteration)
            self._checkpoints.save_unless_saved(collective=False)  # the other ranks are not here
            raise

    def _maybe_evaluate(self) -> None:
        if self._evaluation is None:
            return
        average = self._evaluation.maybe_evaluate(self._run)
        if average is not None:
            self._checkpoints.save_best(average)

    def _save_checkpoint(self) -> None:
        """The checkpoint of the current iteration, then (no stop signal pending) the
        training envs reseeded and restarted (exact resume: ``alf.trainers.checkpoints``)."""
        self._checkpoints.save()
        if not self._stop.requested():
            self._restart_environments()

    def _restart_environments(self) -> None:
        self._algorithm.restart_environment(self._run.env_restart_seed())

    # -- teardown ------------------------------------------------------------------------

    def close(self) -> None:
        """Close writers and environments (idempotent)."""
        self._summaries.close(self._run)
        alf.summary.set_default_writer(None)
        for env in (self._env, self._eval_env):
            if env is not None:
                env.close()
        if self._samplers is not None:
            self._samplers.close()
