"""Whole-episode parity of an exported policy with the checkpoint's ``predict_step``.

``episode_parity`` plays the same environment (seeded alike) twice:

1. alf's ``Unroller`` acts with ``predict_step`` (``AlgorithmPolicy(algorithm, 'predict')``:
   the data transformers, the state reset at FIRST, as ``alf.bin.play`` plays). The
   exported file, stepped by ``ExportedPolicy.step`` with its own state, sees every time
   step the unroller acts on, in lock step: the largest difference between its action and
   ``predict_step``'s over all steps is the action difference.
2. ``ExportedPolicy.run_episodes`` drives the environment alone: its episode returns.

Both runs' returns are reported; with identical actions and a seeded environment they are
identical.
"""

from __future__ import annotations

import dataclasses

import torch

import alf.nest as nest
from alf.export.policy_inputs import action_difference
from alf.export.runtime import ExportedPolicy, _count
from alf.learners.unroller import AlgorithmPolicy, Unroller
from alf.metrics import EpisodeMetrics
from alf.utils.device import to_cpu


@dataclasses.dataclass
class EpisodeParity:
    """The result of ``episode_parity``.

    Attributes:
        episodes: the number of episodes played by each run.
        steps: the steps acted on in the lock-step run.
        max_action_difference: the largest difference between the exported action and
            ``predict_step``'s on the same step (``inf`` when an integer action differs).
        reference_returns: ``[(return, length)]`` of the ``predict_step`` run.
        exported_returns: ``[(return, length)]`` of the exported policy's own run.
    """

    episodes: int
    steps: int
    max_action_difference: float
    reference_returns: list
    exported_returns: list

    @property
    def same_returns(self) -> bool:
        return self.reference_returns == self.exported_returns


class _LockStep:
    """The exported policy's action on every time step the unroller acts on."""

    def __init__(self, exported: ExportedPolicy, batch_size: int):
        self._exported = exported
        self._state = exported.initial_state(batch_size)
        self._returns, self._lengths = [0.0] * batch_size, [0] * batch_size
        self.episodes = []
        self.exported = []  # the exported policy's action leaves, one entry per time step
        self.reference = []  # predict_step's action leaves, one entry per step acted on

    def observe(self, time_step) -> None:
        for row in range(len(self._returns)):
            episode = _count(time_step, row, self._returns, self._lengths)
            if episode is not None:
                self.episodes.append(episode)
        action, self._state = self._exported.step(
            time_step.observation, time_step.step_type, self._state
        )
        self.exported.append(action if isinstance(action, list) else [action])

    def wrap(self, step):
        def recording_step(time_step, state):
            alg_step = step(time_step, state)
            self.reference.append([to_cpu(a) for a in nest.flatten(alg_step.output)])
            return alg_step

        return recording_step

    def max_difference(self) -> float:
        worst = 0.0
        for expected, got in zip(self.reference, self.exported):
            worst = max(worst, action_difference(expected, got))
        return worst


@torch.no_grad()
def episode_parity(algorithm, exported: ExportedPolicy, env, num_episodes: int, seed: int = 0):
    """Play ``num_episodes`` episodes of ``env`` (a batched alf environment) with
    ``algorithm.predict_step`` and the exported file in lock step, then with the exported
    file alone (see the module doc); ``env`` is seeded with ``seed`` before each run.
    Returns an ``EpisodeParity``."""
    algorithm.eval()
    lock_step = _LockStep(exported, env.batch_size)
    policy = AlgorithmPolicy(algorithm, "predict")
    policy.step = lock_step.wrap(policy.step)
    env.seed(seed)
    Unroller(policy, env, EpisodeMetrics(env.batch_size)).run_episodes(
        num_episodes, observe=lock_step.observe
    )
    env.seed(seed)
    exported_returns = exported.run_episodes(env, num_episodes)
    return EpisodeParity(
        episodes=num_episodes,
        steps=len(lock_step.reference),
        max_action_difference=lock_step.max_difference(),
        reference_returns=lock_step.episodes[:num_episodes],
        exported_returns=exported_returns,
    )
