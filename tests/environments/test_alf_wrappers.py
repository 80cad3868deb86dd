"""Tests of the alf environment wrappers (``alf_wrappers``)."""

import numpy as np
import pytest

from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.alf_gym_wrapper import AlfGymWrapper
from alf.environments.alf_wrappers import (
    AlfEnvironmentBaseWrapper,
    NonEpisodicAgent,
    RandomFirstEpisodeLength,
    TimeLimit,
)
from alf.environments.toy_envs import CountingEnv

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _rows(env, actions):
    """``(step_type, discount, reward, obs[0])`` for reset() and each step(action)."""
    time_steps = [env.reset()] + [env.step(a) for a in actions]
    return [
        (int(t.step_type), float(t.discount), float(t.reward), float(t.observation[0]))
        for t in time_steps
    ]


def test_base_wrapper_delegates():
    inner = AlfGymWrapper(CountingEnv(terminate_at=2, render_mode="rgb_array"), env_id=3)
    env = AlfEnvironmentBaseWrapper(inner)
    assert env.observation_spec() == inner.observation_spec()
    assert env.action_spec() == inner.action_spec()
    assert env.reward_spec() == inner.reward_spec()
    assert env.env_info_spec() == inner.env_info_spec()
    assert env.time_step_spec() == inner.time_step_spec()
    assert not env.batched and env.batch_size == 1 and env.num_tasks == 1
    assert env.env_id == 3  # attribute forwarded to the wrapped env
    assert env.wrapped_env() is inner and AlfEnvironmentBaseWrapper(env).unwrapped is inner
    assert _rows(env, [2, 1, 3]) == [
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 2.0, 1.0),
        (LAST, 0.0, 1.0, 2.0),
        (FIRST, 1.0, 0.0, 0.0),
    ]
    assert env.render()[0, 0, 0] == 0
    env.close()
    env.close()


def test_base_wrapper_forwards_seed():
    def trajectory(seed):
        env = AlfEnvironmentBaseWrapper(
            suite_gym.load("alf.environments.toy_envs:RandomStartEnv-v0")
        )
        env.seed(seed)
        return np.stack([env.reset().observation] + [env.step(1).observation for _ in range(5)])

    np.testing.assert_array_equal(trajectory(3), trajectory(3))
    assert not np.array_equal(trajectory(3), trajectory(4))


def test_time_limit_keeps_discount_and_resets():
    env = TimeLimit(AlfGymWrapper(CountingEnv(terminate_at=None)), duration=2)
    assert _rows(env, [3, 2, 1, 1, 1, 2]) == [
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 3.0, 1.0),
        (LAST, 1.0, 2.0, 2.0),  # the limit: discount stays 1
        (FIRST, 1.0, 0.0, 0.0),  # auto reset, action ignored
        (MID, 1.0, 1.0, 1.0),
        (LAST, 1.0, 1.0, 2.0),
        (FIRST, 1.0, 0.0, 0.0),
    ]


def test_time_limit_keeps_earlier_termination():
    env = TimeLimit(AlfGymWrapper(CountingEnv(terminate_at=2)), duration=3)
    assert _rows(env, [1, 1, 1, 1, 1, 1]) == [
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 1.0, 1.0),
        (LAST, 0.0, 1.0, 2.0),  # the env's termination: discount 0
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 1.0, 1.0),  # the step counter restarted at the reset
        (LAST, 0.0, 1.0, 2.0),
        (FIRST, 1.0, 0.0, 0.0),
    ]


def test_time_limit_at_termination_step_keeps_discount_zero():
    env = TimeLimit(AlfGymWrapper(CountingEnv(terminate_at=2)), duration=2)
    assert [r[:2] for r in _rows(env, [1, 1])] == [(FIRST, 1.0), (MID, 1.0), (LAST, 0.0)]


def test_time_limit_rejects_bad_duration():
    with pytest.raises(ValueError, match="duration must be > 0"):
        TimeLimit(AlfGymWrapper(CountingEnv()), duration=0)


def _episode_lengths(env, num_steps):
    lengths, length = [], 0
    env.reset()
    for _ in range(num_steps):
        time_step = env.step(0)
        if int(time_step.step_type) == FIRST:
            continue
        length += 1
        if bool(time_step.is_last()):
            lengths.append((length, float(time_step.discount)))
            length = 0
    return lengths


def test_random_first_episode_length():
    def make(seed):
        return RandomFirstEpisodeLength(
            AlfGymWrapper(CountingEnv(terminate_at=6)), max_length=6, seed=seed
        )

    firsts = set()
    for seed in range(12):
        lengths = _episode_lengths(make(seed), 30)
        first_length, first_discount = lengths[0]
        assert 1 <= first_length <= 6
        assert first_discount == (0.0 if first_length == 6 else 1.0)
        assert lengths[1:] == [(6, 0.0)] * (len(lengths) - 1)  # later episodes untouched
        assert lengths == _episode_lengths(make(seed), 30)  # deterministic given the seed
        firsts.add(first_length)
    assert len(firsts) > 1


def test_random_first_episode_length_with_alf_arguments():
    """ALF's names: ``random_length_range`` for ``max_length``; ``num_episodes`` episodes cut."""
    env = RandomFirstEpisodeLength(
        AlfGymWrapper(CountingEnv(terminate_at=50)), random_length_range=3, num_episodes=2, seed=0
    )
    lengths = _episode_lengths(env, 60)
    assert all(1 <= n <= 3 and d == 1.0 for n, d in lengths[:2])
    assert lengths[2] == (50, 0.0)
    with pytest.raises(ValueError, match="random_length_range"):
        RandomFirstEpisodeLength(AlfGymWrapper(CountingEnv()), max_length=3, random_length_range=3)


def test_non_episodic_agent():
    env = NonEpisodicAgent(AlfGymWrapper(CountingEnv(terminate_at=2)))
    assert [r[:2] for r in _rows(env, [1, 1, 1])] == [
        (FIRST, 1.0),
        (MID, 1.0),
        (LAST, 1.0),
        (FIRST, 1.0),
    ]
