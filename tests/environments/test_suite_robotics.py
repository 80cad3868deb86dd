"""suite_robotics.load on gymnasium-robotics' Fetch tasks: ALF's ids, the goal dict and its
concatenation, the success wrapper, sparse rewards (the discount table), seeding, process
batching, and the goal dict with hindsight relabeling's reward."""

import functools

import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium_robotics")

from alf.data_structures import StepType  # noqa: E402
from alf.data_transformers import l2_distance_reward_fn  # noqa: E402
from alf.environments import alf_wrappers, gym_ids, suite_robotics  # noqa: E402
from alf.environments.gym_wrappers import FrameSkip  # noqa: E402
from alf.environments.utils import create_environment  # noqa: E402

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST
REACH = "FetchReach-v4"


def _run(env, steps, seed=0):
    rng = np.random.default_rng(seed)
    out = [env.reset()]
    for _ in range(steps):
        out.append(env.step(rng.uniform(-1, 1, 4).astype(np.float32)))
        if out[-1].step_type == LAST:
            break
    return out


def _goal_env(env):
    return env.unwrapped.gym.unwrapped


def _put_goal_at_the_gripper(env):
    gym_env = _goal_env(env)
    grip = gym_env._utils.get_site_xpos(gym_env.model, gym_env.data, "robot0:grip")
    gym_env.goal = grip.copy()


def test_alf_ids_are_translated_to_the_mujoco_bindings():
    assert gym_ids.translate_env_id("FetchReach-v1") == "FetchReach-v4"
    assert gym_ids.translate_env_id("FetchPickAndPlaceDense-v1") == "FetchPickAndPlaceDense-v4"
    assert gym_ids.translate_env_id("HandManipulateBlock-v0") == "HandManipulateBlock-v1"
    assert gym_ids.translate_env_id("HandReach-v0") == "HandReach-v3"
    env = suite_robotics.load("FetchPush-v1")
    assert env.unwrapped.gym.spec.id == "FetchPush-v4"
    assert tuple(env.observation_spec().shape) == (28,)  # 25 + desired goal 3
    env.close()


def test_concatenated_observation_and_the_time_limit():
    env = suite_robotics.load(REACH)
    assert isinstance(env, alf_wrappers.TimeLimit) and env.duration == 50  # the registered one
    spec = env.observation_spec()
    assert tuple(spec.shape) == (13,) and spec.dtype == torch.float32  # observation + desired
    action_spec = env.action_spec()
    assert tuple(action_spec.shape) == (4,) and float(action_spec.maximum) == 1.0
    assert set(env.env_info_spec()) == {"success"}  # is_success replaced (SuccessWrapper)
    steps = _run(env, 60)
    assert len(steps) == 51 and steps[-1].step_type == LAST
    assert [float(t.discount) for t in steps] == [1.0] * 51  # never terminates: bootstraps
    assert {float(t.reward) for t in steps[1:]} <= {-1.0, 0.0}
    goal = _goal_env(env).goal
    np.testing.assert_allclose(steps[-1].observation[10:], goal, rtol=1e-6)
    env.close()


def test_goal_dict_and_the_relabeling_reward_agree_with_the_env():
    env = suite_robotics.load(REACH, concat_desired_goal=False)
    spec = env.observation_spec()
    assert set(spec) == {"observation", "achieved_goal", "desired_goal"}
    assert tuple(spec["observation"].shape) == (10,) and tuple(spec["desired_goal"].shape) == (3,)
    steps = _run(env, 50)
    achieved = torch.as_tensor(np.stack([t.observation["achieved_goal"] for t in steps[1:]]))
    desired = torch.as_tensor(np.stack([t.observation["desired_goal"] for t in steps[1:]]))
    rewards = torch.as_tensor([float(t.reward) for t in steps[1:]])
    torch.testing.assert_close(l2_distance_reward_fn(achieved, desired, 0.05), rewards)
    # a goal reached by construction: the achieved goal itself
    assert float(l2_distance_reward_fn(achieved[-1], achieved[-1], 0.05)) == 0.0
    env.close()


def test_success_is_reported_at_the_end_of_the_episode():
    env = suite_robotics.load(REACH, concat_desired_goal=False, max_episode_steps=5)
    env.reset()
    _put_goal_at_the_gripper(env)  # the gripper stays there: the goal is reached at every step
    steps = [env.step(np.zeros(4, np.float32)) for _ in range(5)]
    assert [float(t.reward) for t in steps] == [0.0] * 5
    assert [float(t.env_info["success"]) for t in steps] == [0.0] * 4 + [1.0]
    assert steps[-1].step_type == LAST and float(steps[-1].discount) == 1.0
    env.close()


def test_sparse_reward_ends_the_episode_with_discount_0():
    env = suite_robotics.load(REACH, sparse_reward=True)
    steps = _run(env, 3)
    assert {float(t.reward) for t in steps[1:]} <= {0.0, 1.0}
    assert all(t.step_type == MID for t in steps[1:])  # a random goal is not reached at once
    _put_goal_at_the_gripper(env)
    ts = env.step(np.zeros(4, np.float32))
    assert ts.step_type == LAST and float(ts.discount) == 0.0 and float(ts.reward) == 1.0
    env.close()


def test_wrappers_are_applied_after_alfs():
    env = suite_robotics.load(
        REACH,
        use_success_wrapper=False,
        max_episode_steps=17,
        gym_env_wrappers=(
            functools.partial(FrameSkip, skip=3),
            functools.partial(suite_robotics.SuccessWrapper, since_episode_steps=17),
        ),
    )
    assert env.duration == 17 and set(env.env_info_spec()) == {"success"}
    assert len(_run(env, 30)) == 18
    with pytest.raises(ValueError, match="wrap_with_process is not supported"):
        suite_robotics.load(REACH, wrap_with_process=True)
    with pytest.raises(ValueError, match="only supports the Fetch and Shadow hand"):
        suite_robotics.load("CartPole-v1")


def test_observations_are_clipped():
    env = suite_robotics.load(REACH, concat_desired_goal=False)
    env.reset()
    _goal_env(env).goal = np.array([500.0, -500.0, 3.0])
    ts = env.step(np.zeros(4, np.float32))
    assert ts.observation["desired_goal"].tolist() == [200.0, -200.0, 3.0]


def test_same_seed_same_observations():
    def observations(seed):
        env = suite_robotics.load(REACH)
        env.seed(seed)
        return np.stack([t.observation for t in _run(env, 5)])

    np.testing.assert_array_equal(observations(2), observations(2))
    assert not np.array_equal(observations(2), observations(3))


def test_batched_in_processes_with_seeds():
    load = functools.partial(suite_robotics.load, concat_desired_goal=False)
    kwargs = dict(env_name="FetchReach-v1", env_load_fn=load, num_parallel_environments=2, seed=7)
    env = create_environment(**kwargs)
    try:
        assert env.batch_size == 2
        ts = env.reset()
        assert ts.observation["desired_goal"].shape == (2, 3)
        first = ts.observation["desired_goal"].clone()
        assert not torch.equal(first[0], first[1])  # env i is seeded with seed + i
        for _ in range(50):
            ts = env.step(torch.zeros(2, 4))
        assert ts.step_type.tolist() == [LAST, LAST] and ts.discount.tolist() == [1.0, 1.0]
        assert ts.env_info["success"].shape == (2,)
    finally:
        env.close()
    same = create_environment(nonparallel=True, **kwargs)
    torch.testing.assert_close(same.reset().observation["desired_goal"], first)
    same.close()


def test_the_joint_accessors_work_on_this_mujoco():
    """gymnasium-robotics' own joint accessors fail on mujoco >= 3.12 (see the module doc);
    after the patch, reading and writing hinge and slide joints works."""
    env = suite_robotics.load(REACH)
    gym_env = _goal_env(env)
    utils = gym_env._utils
    qpos = utils.get_joint_qpos(gym_env.model, gym_env.data, "robot0:slide0")
    assert qpos.shape == (1,)
    utils.set_joint_qpos(gym_env.model, gym_env.data, "robot0:slide0", 0.25)
    utils.set_joint_qvel(gym_env.model, gym_env.data, "robot0:shoulder_pan_joint", -0.5)
    assert utils.get_joint_qpos(gym_env.model, gym_env.data, "robot0:slide0").tolist() == [0.25]
    qvel = utils.get_joint_qvel(gym_env.model, gym_env.data, "robot0:shoulder_pan_joint")
    assert qvel.tolist() == [-0.5]
    assert suite_robotics.patch_joint_type_comparisons() is False  # applied once
    env.close()
