"""The envpool backend (``create_environment(batched_backend='envpool')``) gives the
``TimeStep`` stream of alf's gymnasium path: the same step types, discounts (0 at a
termination, 1 at a time limit), rewards, ``prev_action``, specs and per-row auto reset.
Every test that needs envpool skips when it is not installed."""

import sys

import numpy as np
import pytest
import torch

import alf
from alf.data_structures import StepType
from alf.environments import step_guard, suite_gym
from alf.environments.envpool_environment import EnvpoolEnvironment, resolve_task_id
from alf.environments.step_guard import EnvironmentStepTimeout, StepInterrupted
from alf.environments.utils import create_environment

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


@pytest.fixture
def envpool():
    return pytest.importorskip("envpool")


@pytest.fixture(autouse=True)
def _fresh_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()


def _cartpole_state(env):
    """The gymnasium CartPole inside ``suite_gym.load``'s ``TimeLimit(AlfGymWrapper)``."""
    return env.wrapped_env().gym.unwrapped


def _random_actions(num_steps, batch_size, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (num_steps, batch_size), generator=generator)


def test_cartpole_stream_matches_the_gymnasium_path(envpool):
    """Row by row, a gymnasium CartPole started from envpool's first observation gives the
    same step types, discounts, rewards, prev_actions and observations, through
    terminations (discount 0), time limits (discount 1) and auto resets."""
    limit, num_envs = 20, 3
    env = EnvpoolEnvironment("CartPole-v1", num_envs, seed=1, max_episode_steps=limit)
    refs = [suite_gym.load("CartPole-v1", env_id=i, max_episode_steps=limit) for i in range(3)]
    counts = {"terminated": 0, "truncated": 0, "first": 0, "terminated at the limit": 0}
    try:
        time_step = env.reset()
        for row, ref in enumerate(refs):
            ref.reset()
            _cartpole_state(ref).state = time_step.observation[row].numpy().astype(np.float64)
        steps_in_episode = [0] * num_envs
        for action in _random_actions(300, num_envs):
            time_step = env.step(action)
            for row, ref in enumerate(refs):
                expected = ref.step(action[row].numpy())
                got = [int(time_step.step_type[row]), float(time_step.discount[row])]
                got += [float(time_step.reward[row]), int(time_step.prev_action[row])]
                assert got == [
                    int(expected.step_type),
                    float(expected.discount),
                    float(expected.reward),
                    int(expected.prev_action),
                ]
                assert int(time_step.env_id[row]) == row
                observation = time_step.observation[row].numpy()
                if int(expected.step_type) == FIRST:  # a new episode from envpool's state
                    _cartpole_state(ref).state = observation.astype(np.float64)
                    steps_in_episode[row] = 0
                    counts["first"] += 1
                    continue
                np.testing.assert_allclose(observation, expected.observation, atol=1e-4)
                steps_in_episode[row] += 1
                if int(expected.step_type) != LAST:
                    continue
                fell = abs(observation[0]) > 2.4 or abs(observation[2]) > 12 * 2 * np.pi / 360
                assert float(time_step.discount[row]) == (0.0 if fell else 1.0)
                assert fell or steps_in_episode[row] == limit
                counts["terminated" if fell else "truncated"] += 1
                counts["terminated at the limit"] += fell and steps_in_episode[row] == limit
    finally:
        env.close()
    assert counts["terminated"] >= 5 and counts["truncated"] >= 2 and counts["first"] >= 8
    # the pole fell at the time limit: a termination (envpool alone calls it a truncation)
    assert counts["terminated at the limit"] >= 1
