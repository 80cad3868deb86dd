"""Tests of ``suite_gym.load`` / ``wrap_env``: time limits, ids, wrappers, subprocesses."""

import functools
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from alf.data_structures import StepType
from alf.environments import alf_wrappers, gym_wrappers, suite_gym
from alf.environments.alf_gym_wrapper import AlfGymWrapper

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows(env, actions):
    """``(step_type, discount, reward, obs[0])`` for reset() and each step(action)."""
    time_steps = [env.reset()] + [env.step(a) for a in actions]
    return [
        (int(t.step_type), float(t.discount), float(t.reward), float(t.observation[0]))
        for t in time_steps
    ]


def _gym_wrapper_chain(env):
    gym_env = env.unwrapped.gym if hasattr(env, "unwrapped") else env.gym
    chain = [gym_env]
    while hasattr(chain[-1], "env"):
        chain.append(chain[-1].env)
    return chain


def test_terminated_gives_discount_zero():
    env = suite_gym.load(COUNTING, terminate_at=2)
    assert _rows(env, [3, 2, 1, 1]) == [
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 3.0, 1.0),
        (LAST, 0.0, 2.0, 2.0),
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 1.0, 1.0),
    ]


def test_gym_truncation_gives_discount_one():
    env = suite_gym.load(COUNTING, terminate_at=None, truncate_at=2)
    assert _rows(env, [1, 2, 3]) == [
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 1.0, 1.0),
        (LAST, 1.0, 2.0, 2.0),
        (FIRST, 1.0, 0.0, 0.0),
    ]


def test_max_episode_steps_time_limit_gives_discount_one():
    env = suite_gym.load(COUNTING, max_episode_steps=3, terminate_at=10)
    assert isinstance(env, alf_wrappers.TimeLimit) and env.duration == 3
    assert _rows(env, [1, 1, 2, 3, 1]) == [
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 1.0, 1.0),
        (MID, 1.0, 1.0, 2.0),
        (LAST, 1.0, 2.0, 3.0),
        (FIRST, 1.0, 0.0, 0.0),
        (MID, 1.0, 1.0, 1.0),
    ]


def test_time_limit_uses_spec_limit_and_not_gymnasium_time_limit():
    env = suite_gym.load("CartPole-v1")
    assert isinstance(env, alf_wrappers.TimeLimit) and env.duration == 500
    assert not any(isinstance(e, gym.wrappers.TimeLimit) for e in _gym_wrapper_chain(env))
    env = suite_gym.load("alf.environments.toy_envs:RandomStartEnv-v0")
    assert env.duration == 50
    env = suite_gym.load("CartPole-v1", max_episode_steps=20)
    assert env.duration == 20


@pytest.mark.parametrize("max_episode_steps", [0, -1])
def test_non_positive_max_episode_steps_means_no_limit(max_episode_steps):
    env = suite_gym.load("CartPole-v1", max_episode_steps=max_episode_steps)
    assert isinstance(env, AlfGymWrapper)
    assert not any(isinstance(e, gym.wrappers.TimeLimit) for e in _gym_wrapper_chain(env))
    env = suite_gym.load(COUNTING, max_episode_steps=max_episode_steps, terminate_at=None)
    time_steps = [env.reset()] + [env.step(0) for _ in range(600)]
    assert not any(bool(t.is_last()) for t in time_steps)


def test_unknown_id_suggests_close_ids():
    with pytest.raises(
        ValueError, match=r"Unknown gymnasium environment id 'CartPol-v1'.*'CartPole-v1'"
    ):
        suite_gym.load("CartPol-v1")
    with pytest.raises(ValueError, match=r"'alf.environments.toy_envs:CountingEnv-v0'"):
        suite_gym.load("alf.environments.toy_envs:CountngEnv-v0")
    with pytest.raises(ValueError, match="importing module 'no_such_module_xyz'"):
        suite_gym.load("no_such_module_xyz:Env-v0")


def test_unversioned_id_uses_latest_version():
    assert suite_gym.find_env_spec("CartPole").id == "CartPole-v1"


def test_module_id_works_in_a_fresh_subprocess():
    code = (
        "import gymnasium as gym\n"
        "env = gym.make('alf.environments.toy_envs:CountingEnv-v0')\n"
        "from alf.environments import suite_gym\n"
        "alf_env = suite_gym.load('alf.environments.toy_envs:CountingEnv-v0', terminate_at=1)\n"
        "alf_env.reset(); t = alf_env.step(2)\n"
        "print(int(t.step_type), float(t.discount), float(t.reward))\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd="/",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "0.0", "2.0"]


def test_broken_env_constructor_error_propagates():
    with pytest.raises(RuntimeError, match="BrokenEnv constructor failed on purpose"):
        suite_gym.load("alf.environments.toy_envs:BrokenEnv-v0")


def test_env_id_and_discount():
    env = suite_gym.load(COUNTING, env_id=4, discount=0.5, terminate_at=2)
    time_steps = [env.reset(), env.step(1), env.step(1)]
    assert [int(t.env_id) for t in time_steps] == [4, 4, 4]
    assert [float(t.discount) for t in time_steps] == [1.0, 0.5, 0.0]


def test_wrappers_are_applied_in_order():
    calls = []

    def gym_wrapper(tag):
        def wrap(gym_env):
            calls.append(tag)
            return gym.wrappers.TransformReward(gym_env, lambda r: 10 * r)

        return wrap

    def alf_wrapper(env):
        calls.append("alf")
        assert isinstance(env, alf_wrappers.TimeLimit)
        return alf_wrappers.AlfEnvironmentBaseWrapper(env)

    env = suite_gym.load(
        COUNTING,
        max_episode_steps=5,
        gym_env_wrappers=(gym_wrapper("a"), gym_wrapper("b")),
        alf_env_wrappers=(alf_wrapper,),
    )
    assert calls == ["a", "b", "alf"]
    env.reset()
    assert float(env.step(2).reward) == 200.0


def test_image_channel_first_and_image_wrappers():
    env = suite_gym.load(
        "alf.environments.toy_envs:ImageEnv-v0",
        gym_env_wrappers=(
            gym_wrappers.FrameGrayScale,
            functools.partial(gym_wrappers.FrameResize, width=4, height=3),
        ),
        image_channel_first=True,
    )
    spec = env.observation_spec()
    assert tuple(spec.shape) == (1, 3, 4) and spec.numpy_dtype == np.uint8
    observation = env.reset().observation
    assert observation.shape == (1, 3, 4) and observation.dtype == np.uint8


def test_render_mode():
    env = suite_gym.load(COUNTING, render_mode="rgb_array")
    env.reset()
    assert env.render().shape == (8, 8, 3)


def test_wrap_env_without_limit():
    env = suite_gym.wrap_env(gym.make("CartPole-v1", max_episode_steps=-1), env_id=2)
    assert isinstance(env, AlfGymWrapper) and env.env_id == 2
    env = suite_gym.wrap_env(gym.make("CartPole-v1", max_episode_steps=-1), max_episode_steps=9)
    assert env.duration == 9
