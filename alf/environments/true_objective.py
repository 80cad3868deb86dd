"""``TrueObjective``: train on a shaped reward, report the objective that matters.

A gymnasium wrapper that keeps track of the env's own (raw) reward in
``info['true_objective']`` and hands the agent a shaped reward instead. alf's
``EpisodeMetrics`` averages every numeric ``env_info`` field at each episode's LAST step
(``AverageEnvInfo/true_objective``), so the value written at every step is the episode's
score so far:

- ``success_steps=None``: the sum of the raw rewards so far; at LAST, the episode's raw
  return (for CartPole, 1 per step survived: the episode length);
- ``success_steps=N``: 1.0 once the episode has lasted N steps, else 0.0; at LAST, the
  episode's success, averaged into a success rate.

``PBTConfig.objective`` defaults to ``AverageEnvInfo/true_objective`` when the env reports
it, so a PBT population ranks its members by the raw score, not by the shaped return
they are trained on (``alf/examples/pbt_ppo_cart_pole_true_objective_conf.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np

import alf

#: the ``info`` key (and ``env_info`` field) the wrapper writes
TRUE_OBJECTIVE_KEY = "true_objective"


def cart_position_penalty(observation, action, reward, weight: float = 0.5, x_limit: float = 2.4):
    """CartPole's reward minus ``weight * |x| / x_limit`` (``x``: the cart position,
    ``observation[0]``): the agent is also paid to stay near the centre."""
    del action
    return float(reward) - weight * abs(float(observation[0])) / x_limit


@alf.configurable
class TrueObjective(gym.Wrapper):
    """Write the episode's raw score to ``info['true_objective']``; return a shaped reward.

    Args:
        env: the gymnasium env (its own reward is the raw one).
        reward_shaping: ``(observation, action, raw reward) -> reward`` the agent gets
            (``observation`` is the one after the step); None: the raw reward.
        success_steps: None: ``true_objective`` is the sum of raw rewards so far; N: 1.0
            once the episode has lasted N steps, else 0.0 (module doc).
    """

    def __init__(
        self,
        env: gym.Env,
        reward_shaping: Callable | None = None,
        success_steps: int | None = None,
    ):
        super().__init__(env)
        if success_steps is not None and (not isinstance(success_steps, int) or success_steps < 1):
            raise ValueError(f"success_steps must be None or an int >= 1, got {success_steps!r}")
        self._shaping = reward_shaping
        self._success_steps = success_steps
        self._steps = 0
        self._raw_return = 0.0

    def _score(self) -> np.float32:
        if self._success_steps is None:
            return np.float32(self._raw_return)
        return np.float32(self._steps >= self._success_steps)

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        self._steps = 0
        self._raw_return = 0.0
        return observation, {**info, TRUE_OBJECTIVE_KEY: self._score()}

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._raw_return += float(reward)
        if self._shaping is not None:
            reward = self._shaping(observation, action, reward)
        info = {**info, TRUE_OBJECTIVE_KEY: self._score()}
        return observation, reward, terminated, truncated, info
