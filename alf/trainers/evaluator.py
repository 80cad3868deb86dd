"""Evaluation of the deterministic policy on separate environments."""

from __future__ import annotations

from collections.abc import Callable

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
            evaluations start from the same initial states.
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
        self._seed = seed
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
            unroller.restart(self._seed)
            observe = None if self._should_stop is None else self._stop_if_asked
            return unroller.run_episodes(self._num_episodes, self._max_steps, observe)
        except StepInterrupted as e:  # a stop signal, and the env did not come back
            raise EvaluationInterrupted(str(e)) from e
        finally:
            alg.train(was_training)

    def _stop_if_asked(self, time_step) -> None:
        if self._should_stop():
            raise EvaluationInterrupted()
