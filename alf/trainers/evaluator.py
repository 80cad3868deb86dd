"""Evaluation of the deterministic policy on separate environments: ``Evaluator`` plays the
episodes; ``TrainingEvaluation`` is when and how the training loop evaluates."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import torch

from alf.environments.step_guard import StepInterrupted
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.metrics import EpisodeMetrics


class EvaluationInterrupted(Exception):
    """``should_stop`` turned true during an evaluation, or an eval env step was abandoned
    after a stop signal: no results."""


class Evaluator:
    """Runs ``predict_step`` on ``env`` until ``num_episodes`` episodes have ended.

    Args:
        algorithm: the ``RLAlgorithm`` (its data transformer is applied, frozen).
        env: a batched evaluation environment.
        num_episodes: episodes per evaluation.
        seed: the eval env is reseeded with it before every evaluation, so all
            evaluations start from the same initial states (the attribute ``seed``).
        max_steps: safety bound on steps per evaluation (per env).
        should_stop: checked before every step; when it returns True the evaluation
            stops there and ``evaluate`` raises ``EvaluationInterrupted``.
    """

    def __init__(
        self,
        algorithm,
        env,
        num_episodes: int,
        seed: int,
        max_steps: int = 1_000_000,
        should_stop: Callable[[], bool] | None = None,
    ):
        self._should_stop = should_stop
        self._algorithm = algorithm
        self._env = env
        self._num_episodes = num_episodes
        self.seed = seed
        self._max_steps = max_steps

    def evaluate(self) -> EpisodeMetrics:
        """Play ``num_episodes`` episodes from fresh, reseeded environments; return their
        metrics (raw rewards)."""
        alg, env = self._algorithm, self._env
        was_training = alg.training
        alg.eval()
        try:
            metrics = EpisodeMetrics(env.batch_size, buffer_size=self._num_episodes)
            unroller = Unroller(AlgorithmPolicy(alg, "predict"), env, metrics)
            # a random policy draws from the eval envs' own streams: evaluating never
            # moves the learner's generator
            unroller.set_streams(self.seed, domain="evaluate")
            unroller.restart(self.seed)
            observe = None if self._should_stop is None else self._stop_if_asked
            return unroller.run_episodes(self._num_episodes, self._max_steps, observe)
        except StepInterrupted as e:  # a stop signal, and the env did not come back
            raise EvaluationInterrupted(str(e)) from e
        finally:
            alg.train(was_training)

    def _stop_if_asked(self, time_step) -> None:
        if self._should_stop():
            raise EvaluationInterrupted()


class TrainingEvaluation:
    """The evaluations of the training loop: every ``eval_interval`` iterations and after
    the last one; each writes its metrics to ``root_dir/eval`` and logs the average return.

    Args:
        evaluator: the ``Evaluator`` (its ``evaluate`` is looked up at each evaluation).
        eval_interval: ``TrainerConfig.eval_interval``.
        summaries: the trainer's ``RunSummaries``.
    """

    def __init__(self, evaluator: Evaluator, eval_interval: int, summaries):
        self.evaluator = evaluator
        self._interval = eval_interval
        self._summaries = summaries

    def maybe_evaluate(self, run) -> float | None:
        """Evaluate when due at ``run.iteration``; the average return (None: not due, or
        stopped by a signal)."""
        if run.iteration % self._interval != 0 and not run.done():
            return None
        start = time.time()
        try:
            metrics = self.evaluator.evaluate()
        except EvaluationInterrupted:
            logging.warning("Evaluation at iteration %d stopped by a signal", run.iteration)
            return None
        self._summaries.write_eval(metrics.results(), time.time() - start, run)
        average = float(torch.as_tensor(metrics.average_return).float().mean())
        logging.info(
            "Iteration %d: eval AverageReturn %.3f over %d episodes",
            run.iteration,
            average,
            metrics.num_episodes,
        )
        return average
