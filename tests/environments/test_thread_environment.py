"""Tests of ``ThreadEnvironment``: batched torch interface over one in-process env."""

import functools

import numpy as np
import pytest
import torch

from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.thread_environment import ThreadEnvironment

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _thread_env(name=COUNTING, **kwargs):
    return ThreadEnvironment(functools.partial(suite_gym.load, name, **kwargs))


def _rows(env, actions):
    """``(step_type, discount, reward, obs, prev_action)`` of reset() and each step."""
    time_steps = [env.reset()] + [env.step(torch.tensor([a])) for a in actions]
    return [
        (
            int(t.step_type[0]),
            float(t.discount[0]),
            float(t.reward[0]),
            float(t.observation[0, 0]),
            int(t.prev_action[0]),
        )
        for t in time_steps
    ]


def _assert_batched_spec(value, spec):
    if isinstance(spec, dict):
        assert set(value) == set(spec)
        for k in spec:
            _assert_batched_spec(value[k], spec[k])
    elif isinstance(spec, tuple):
        for v, s in zip(value, spec):
            _assert_batched_spec(v, s)
    else:
        assert isinstance(value, torch.Tensor) and value.device.type == "cpu"
        assert value.dtype == spec.dtype and tuple(value.shape) == (1,) + tuple(spec.shape)


def test_batched_interface_and_specs():
    env = _thread_env(terminate_at=2)
    assert env.batched and env.batch_size == 1
    spec = env.time_step_spec()
    assert spec == env.env.time_step_spec()
    for time_step in [env.reset(), env.step(torch.tensor([1])), env.step(np.array([2]))]:
        _assert_batched_spec(time_step, spec)


def test_discount_table_terminated():
    env = _thread_env(terminate_at=2)
    assert _rows(env, [3, 2, 1, 1]) == [
        (FIRST, 1.0, 0.0, 0.0, 0),
        (MID, 1.0, 3.0, 1.0, 3),
        (LAST, 0.0, 2.0, 2.0, 2),
        (FIRST, 1.0, 0.0, 0.0, 0),  # auto reset: action ignored
        (MID, 1.0, 1.0, 1.0, 1),
    ]


def test_discount_table_time_limit_and_gym_truncation():
    env = _thread_env(terminate_at=None, max_episode_steps=2)
    assert _rows(env, [1, 2, 3, 1]) == [
        (FIRST, 1.0, 0.0, 0.0, 0),
        (MID, 1.0, 1.0, 1.0, 1),
        (LAST, 1.0, 2.0, 2.0, 2),
        (FIRST, 1.0, 0.0, 0.0, 0),
        (MID, 1.0, 1.0, 1.0, 1),
    ]
    env = _thread_env(terminate_at=None, truncate_at=1)
    assert [r[:2] for r in _rows(env, [1, 1, 1])] == [
        (FIRST, 1.0),
        (LAST, 1.0),
        (FIRST, 1.0),
        (LAST, 1.0),
    ]


def test_step_before_reset_returns_first():
    env = _thread_env()
    time_step = env.step(torch.tensor([3]))
    assert int(time_step.step_type[0]) == FIRST and float(time_step.reward[0]) == 0.0


def _trajectory(seed, num_steps=30):
    env = _thread_env("CartPole-v1")
    env.seed(seed)
    observations = [env.reset().observation]
    for i in range(num_steps):
        observations.append(env.step(torch.tensor([i % 2])).observation.clone())
    return torch.cat(observations)


def test_same_seed_same_trajectory():
    torch.testing.assert_close(_trajectory(1), _trajectory(1), rtol=0, atol=0)
    assert not torch.equal(_trajectory(1), _trajectory(2))


def test_invalid_actions():
    env = _thread_env("CartPole-v1", env_id=2)
    env.reset()
    with pytest.raises(ValueError, match=r"outside the action spec .* CartPole-v1 \(env_id=2\)"):
        env.step(torch.tensor([5]))
    with pytest.raises(ValueError, match=r"shaped \[1, \.\.\.\]"):
        env.step(torch.tensor(1))
    with pytest.raises(ValueError, match=r"shaped \[1, \.\.\.\]"):
        env.step(torch.tensor([0, 1]))


def test_observation_shares_memory_with_numpy():
    env = _thread_env("CartPole-v1")
    env.reset()
    time_step = env.step(torch.tensor([1]))
    numpy_obs = env.env.current_time_step().observation
    assert time_step.observation.numpy().base is not None
    assert np.shares_memory(time_step.observation.numpy(), numpy_obs)


def test_render_and_close():
    env = _thread_env(render_mode="rgb_array")
    env.reset()
    env.step(torch.tensor([0]))
    assert env.render().shape == (8, 8, 3)
    env.close()
    env.close()


def test_rejects_batched_env():
    batched = _thread_env()
    with pytest.raises(ValueError, match="unbatched"):
        ThreadEnvironment(lambda: batched)
