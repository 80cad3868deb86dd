"""PointGoal-v0: dynamics, sparse reward and ``compute_reward``, success flag, time limit."""

import numpy as np
import torch

from alf.data_structures import StepType
from alf.data_transformers.hindsight_relabeler import l2_distance_reward_fn
from alf.environments import suite_gym
from alf.environments.point_goal_env import PointGoalEnv


def test_dynamics_reward_and_success():
    env = PointGoalEnv(distance_threshold=0.05, max_step=0.1)
    obs, info = env.reset(seed=3)
    start, goal = obs["observation"].copy(), obs["desired_goal"].copy()
    obs, reward, terminated, truncated, info = env.step(np.array([0.5, -2.0], np.float32))
    expected = np.clip(start + 0.1 * np.array([0.5, -1.0]), -1, 1)
    np.testing.assert_allclose(obs["observation"], expected, rtol=1e-6)
    np.testing.assert_array_equal(obs["achieved_goal"], obs["observation"])
    np.testing.assert_array_equal(obs["desired_goal"], goal)
    assert not terminated and not truncated
    far = np.linalg.norm(expected - goal) > 0.05
    assert reward == (-1.0 if far else 0.0) and info["is_success"] == (0.0 if far else 1.0)
    env._position = goal + np.array([0.03, 0.0], np.float32)  # within the threshold
    _, reward, _, _, info = env.step(np.zeros(2, np.float32))
    assert reward == 0.0 and info["is_success"] == 1.0


def test_compute_reward_is_vectorized_and_matches_the_torch_reward_fn():
    env = PointGoalEnv(distance_threshold=0.1)
    rng = np.random.default_rng(0)
    achieved = rng.uniform(-1, 1, (500, 2)).astype(np.float32)
    desired = achieved + rng.normal(0, 0.1, (500, 2)).astype(np.float32)
    rewards = env.compute_reward(achieved, desired, None)
    assert rewards.shape == (500,) and set(np.unique(rewards)) == {-1.0, 0.0}
    torch_rewards = l2_distance_reward_fn(
        torch.as_tensor(achieved), torch.as_tensor(desired), distance_threshold=0.1
    )
    np.testing.assert_array_equal(rewards, torch_rewards.numpy())


def test_registered_with_a_50_step_time_limit():
    env = suite_gym.load("alf.environments.point_goal_env:PointGoal-v0")
    try:
        assert set(env.observation_spec()) == {"observation", "achieved_goal", "desired_goal"}
        assert "is_success" in env.env_info_spec()
        ts = env.reset()
        for _ in range(50):
            ts = env.step(np.zeros(2, np.float32))
        assert int(ts.step_type) == StepType.LAST and float(ts.discount) == 1.0
    finally:
        env.close()
