"""Evaluation of the deterministic policy on separate environments."""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.algorithms.algorithm import reset_state_if_necessary
from alf.data_structures import StepType
from alf.metrics import EpisodeMetrics
from alf.utils.device import to_device


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

    @torch.no_grad()
    def evaluate(self) -> EpisodeMetrics:
        """Play ``num_episodes`` episodes; return their metrics (raw rewards)."""
        alg, env = self._algorithm, self._env
        was_training = alg.training
        alg.eval()
        try:
            return self._run(alg, env)
        finally:
            alg.train(was_training)

    def _run(self, alg, env) -> EpisodeMetrics:
        batch_size = env.batch_size
        metrics = EpisodeMetrics(batch_size, buffer_size=self._num_episodes)
        env.seed(self._seed)
        time_step = env.reset()
        initial_state = to_device(alg.get_initial_predict_state(batch_size))
        policy_state = initial_state
        transform_state = _zeros(alg.data_transformer.state_spec, batch_size)
        stateful = alg.is_stateful("predict")
        for _ in range(self._max_steps):
            metrics(time_step)
            if metrics.num_episodes >= self._num_episodes:
                break
            transformed, transform_state = alg.data_transformer.transform_timestep(
                time_step, transform_state
            )
            transformed = to_device(transformed)
            if stateful:
                policy_state = reset_state_if_necessary(
                    policy_state, initial_state, transformed.step_type == StepType.FIRST
                )
            step = alg.predict_step(transformed, policy_state)
            policy_state = step.state
            time_step = env.step(nest.map_structure(lambda x: x.cpu(), step.output))
        return metrics


def _zeros(spec, batch_size):
    from alf.tensor_specs import zeros_from_spec

    return zeros_from_spec(spec, batch_size)
