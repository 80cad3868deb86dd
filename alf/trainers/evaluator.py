"""Evaluation of the deterministic policy on separate environments."""

from __future__ import annotations

from alf.algorithms.unroller import AlgorithmPolicy, Unroller
from alf.metrics import EpisodeMetrics


class Evaluator:
    """Runs ``predict_step`` on ``env`` until ``num_episodes`` episodes have ended.

    Args:
        algorithm: the ``RLAlgorithm`` (its data transformer is applied, frozen).
        env: a batched evaluation environment.
        num_episodes: episodes per evaluation.
        seed: the eval env is reseeded with it before every evaluation, so all
            evaluations start from the same initial states.
        max_steps: safety bound on steps per evaluation (per env).
    """

    def __init__(self, algorithm, env, num_episodes: int, seed: int, max_steps: int = 1_000_000):
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
            return unroller.run_episodes(self._num_episodes, self._max_steps)
        finally:
            alg.train(was_training)
