"""ALF's gym environment ids are translated to gymnasium's with a warning naming both."""

import logging

import pytest

from alf.environments import gym_ids, suite_gym


@pytest.mark.parametrize(
    "old, new",
    [
        ("Pendulum-v0", "Pendulum-v1"),
        ("BipedalWalker-v2", "BipedalWalker-v3"),
        ("LunarLanderContinuous-v2", "LunarLanderContinuous-v3"),
        ("HalfCheetah-v2", "HalfCheetah-v5"),
        ("Humanoid-v3", "Humanoid-v5"),
        ("CartPole-v0", "CartPole-v0"),
        ("MountainCar-v0", "MountainCar-v0"),
        ("Hopper-v4", "Hopper-v4"),
        ("FetchReach-v1", "FetchReach-v4"),
        ("FetchSlideDense-v1", "FetchSlideDense-v4"),
        ("FetchPush-v4", "FetchPush-v4"),
        ("HandReach-v0", "HandReach-v3"),
        ("HandManipulateEgg_BooleanTouchSensors-v0", "HandManipulateEgg_BooleanTouchSensors-v1"),
        ("HandManipulatePen-v1", "HandManipulatePen-v1"),
        ("alf.environments.toy_envs:CountingEnv-v0", "alf.environments.toy_envs:CountingEnv-v0"),
    ],
)
def test_translation(old, new):
    assert gym_ids.translate_env_id(old) == new


def test_warning_names_both_ids_once(caplog):
    gym_ids._WARNED.discard("Pendulum-v0")
    with caplog.at_level(logging.WARNING):
        env = suite_gym.load("Pendulum-v0")
        env.close()
        suite_gym.find_env_spec("Pendulum-v0")
    lines = [r.getMessage() for r in caplog.records if "Pendulum" in r.getMessage()]
    assert lines == [
        "gym environment id 'Pendulum-v0' is not available in gymnasium; using 'Pendulum-v1' "
        "(the same task with gymnasium's fixes: returns may differ slightly)"
    ]
    assert env.action_spec().shape == (1,)


def test_cart_pole_v0_keeps_its_time_limit():
    assert suite_gym.find_env_spec("CartPole-v0").max_episode_steps == 200
