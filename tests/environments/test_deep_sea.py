"""DeepSea-v0: the one-hot position, the exact returns of hand-chosen paths (the treasure
path 1 - 0.01, always-left 0), the per-cell action mapping and its seed, and the env through
suite_gym.load and create_environment (terminal LAST with discount 0, env_info['success'])."""

import numpy as np
import pytest
import torch

from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.deep_sea import DeepSea, action_mapping
from alf.environments.utils import create_environment

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST
DEEP_SEA = "alf.environments.deep_sea:DeepSea-v0"
R, L = True, False  # moves: right, left


def _actions(env, moves):
    """The actions that make ``moves`` (True: right) from the top-left, read off the mapping."""
    mapping, actions, column = env.action_mapping, [], 0
    for row, right in enumerate(moves):
        actions.append(int(mapping[row, column]) if right else 1 - int(mapping[row, column]))
        column = min(column + 1, env.size - 1) if right else max(column - 1, 0)
    return actions


def _play(env, actions):
    env.reset(seed=0)
    steps = [env.step(a) for a in actions]
    rewards = [s[1] for s in steps]
    return rewards, [s[2] for s in steps], [s[4]["success"] for s in steps], env.position


@pytest.mark.parametrize("randomize", [False, True])
def test_hand_chosen_paths_have_the_exact_returns(randomize):
    env = DeepSea(size=4, mapping_seed=7, randomize_actions=randomize)
    cost = 0.01 / 4
    rewards, terminated, success, position = _play(env, _actions(env, [R, R, R, R]))
    np.testing.assert_allclose(rewards, [-cost, -cost, -cost, 1 - cost])
    assert sum(rewards) == pytest.approx(0.99)  # 1 - N * 0.01 / N
    assert terminated == [False, False, False, True] and success == [0, 0, 0, 1]
    assert position == (4, 3)
    rewards, terminated, success, position = _play(env, _actions(env, [L, L, L, L]))
    assert rewards == [0, 0, 0, 0] and success == [0] * 4 and position == (4, 0)
    # right, left, right, right: column 1, 0, 1, 2; three moves right, no treasure
    rewards, terminated, success, position = _play(env, _actions(env, [R, L, R, R]))
    np.testing.assert_allclose(rewards, [-cost, 0, -cost, -cost])
    assert terminated[-1] and success == [0] * 4 and position == (4, 2)
    # left at the west wall keeps column 0 (the treasure path's last right, at the east
    # wall, kept column 3 above)
    rewards, _, _, position = _play(env, _actions(env, [L, R, L, L]))
    np.testing.assert_allclose(rewards, [0, -cost, 0, 0])
    assert position == (4, 0)


def test_unrandomized_actions_make_one_right():
    env = DeepSea(size=5, randomize_actions=False)
    np.testing.assert_array_equal(env.action_mapping, np.ones((5, 5)))
    rewards, _, success, _ = _play(env, [1] * 5)
    assert sum(rewards) == pytest.approx(0.99) and success[-1] == 1


def test_mapping_is_seeded_and_defeats_constant_actions():
    one, two = DeepSea(size=10, mapping_seed=0), DeepSea(size=10, mapping_seed=0)
    np.testing.assert_array_equal(one.action_mapping, two.action_mapping)
    np.testing.assert_array_equal(one.action_mapping, action_mapping(10, 0, True))
    assert not np.array_equal(one.action_mapping, DeepSea(size=10, mapping_seed=1).action_mapping)
    assert set(np.unique(one.action_mapping)) == {0, 1}
    for constant in (0, 1):  # with seed 0 neither constant policy finds the treasure
        rewards, _, success, _ = _play(one, [constant] * 10)
        assert success[-1] == 0 and sum(rewards) <= 0
    rewards, _, success, _ = _play(one, _actions(one, [R] * 10))
    assert sum(rewards) == pytest.approx(0.99) and success[-1] == 1
    one.reset(seed=123)  # a reset seed does not change the task's mapping
    np.testing.assert_array_equal(one.action_mapping, two.action_mapping)


def test_observation_is_the_one_hot_position():
    env = DeepSea(size=3, randomize_actions=False)
    obs, info = env.reset()
    assert obs.shape == (9,) and obs.dtype == np.float32 and info == {"success": 0.0}
    np.testing.assert_array_equal(obs, np.eye(9, dtype=np.float32)[0])  # (0, 0)
    obs = env.step(1)[0]
    np.testing.assert_array_equal(obs, np.eye(9, dtype=np.float32)[1 * 3 + 1])  # (1, 1)
    obs = env.step(0)[0]
    np.testing.assert_array_equal(obs, np.eye(9, dtype=np.float32)[2 * 3 + 0])  # (2, 0)
    obs, _, terminated, truncated, _ = env.step(0)
    assert terminated and not truncated and not obs.any()  # left the grid
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


@pytest.mark.parametrize("kwargs, match", [(dict(size=1), "size"), (dict(move_cost=-1), "move")])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DeepSea(**kwargs)


def test_through_suite_gym_the_treasure_is_a_termination():
    env = suite_gym.load(DEEP_SEA, size=4, randomize_actions=False)
    assert tuple(env.observation_spec().shape) == (16,) and int(env.action_spec().maximum) == 1
    out = [env.reset()] + [env.step(np.int64(1)) for _ in range(4)]
    assert [int(t.step_type) for t in out] == [FIRST, MID, MID, MID, LAST]
    assert [float(t.discount) for t in out] == [1, 1, 1, 1, 0]
    assert float(out[-1].reward) == pytest.approx(1 - 0.01 / 4)
    assert [float(t.env_info["success"]) for t in out] == [0, 0, 0, 0, 1]
    env.close()


def test_batched_envs_share_the_mapping():
    env = create_environment(
        DEEP_SEA, num_parallel_environments=2, nonparallel=True, seed=3, env_load_fn=suite_gym.load
    )
    ts = env.reset()
    assert ts.observation.shape == (2, 100) and ts.observation[:, 0].tolist() == [1, 1]
    mappings = [e.gym.unwrapped.action_mapping for e in env.envs]
    np.testing.assert_array_equal(mappings[0], mappings[1])
    for _ in range(10):
        ts = env.step(torch.tensor([0, 1]))
    assert ts.step_type.tolist() == [LAST, LAST] and ts.discount.tolist() == [0, 0]
    env.close()
