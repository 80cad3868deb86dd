"""suite_minigrid.load on MiniGrid tasks: the observation layouts (one-hot symbolic, full
grid, RGB channels first), the discount table at a reached goal and at MiniGrid's time
limit, the reward formula, the action subset, seeding, the conf path and worker processes."""

import functools

import numpy as np
import pytest
import torch

pytest.importorskip("minigrid")

import alf  # noqa: E402
from alf.data_structures import StepType  # noqa: E402
from alf.environments import suite_minigrid  # noqa: E402
from alf.environments.process_environment import ProcessEnvironment  # noqa: E402
from alf.environments.utils import create_environment  # noqa: E402

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST
EMPTY, DOORKEY = "MiniGrid-Empty-5x5-v0", "MiniGrid-DoorKey-5x5-v0"
LEFT, RIGHT, FORWARD = 0, 1, 2
# Empty-5x5: the agent starts at (1, 1) facing east, the goal is at (3, 3)
TO_THE_GOAL = [FORWARD, FORWARD, RIGHT, FORWARD, FORWARD]


def _minigrid(env):
    """The MiniGrid env under the alf env's gymnasium wrappers."""
    return env.gym.unwrapped


def _steps(env, actions):
    out = [env.reset()]
    for action in actions:
        out.append(env.step(np.int64(action)))
    return out


def _hand_one_hot(cells, direction):
    """The expected encoding, one slot at a time: 11 objects, 6 colours, 4 states a cell."""
    cells = np.asarray(cells, np.int64).reshape(-1, 3)
    expected = np.zeros(len(cells) * 21 + 4, np.float32)
    for i, (obj, colour, state) in enumerate(cells):
        expected[i * 21 + obj] = 1
        expected[i * 21 + 11 + colour] = 1
        expected[i * 21 + 17 + state] = 1
    expected[len(cells) * 21 + direction] = 1
    return expected


def test_symbolic_observation_is_the_one_hot_egocentric_view():
    env = suite_minigrid.load(EMPTY)
    spec = env.observation_spec()
    assert tuple(spec.shape) == (7 * 7 * 21 + 4,) == (1033,) and spec.dtype == torch.float32
    action_spec = env.action_spec()
    assert action_spec.shape == () and int(action_spec.maximum) == 6  # MiniGrid's Discrete(7)
    ts = env.reset()
    grid = _minigrid(env)
    raw = grid.gen_obs()
    np.testing.assert_array_equal(ts.observation, _hand_one_hot(raw["image"], raw["direction"]))
    assert ts.observation.sum() == 7 * 7 * 3 + 1
    view = ts.observation[:-4].reshape(7, 7, 21)  # MiniGrid's (x, y) view, agent at (3, 6)
    assert view[3, 5, 1] == 1  # in front: empty
    assert view[5, 4, 8] == 1 and view[5, 4, 11 + 1] == 1  # 2 ahead, 2 right: the green goal
    assert view[3, 3, 2] == 1  # 3 ahead: the east wall
    assert ts.observation[-4:].tolist() == [1, 0, 0, 0]  # facing east (direction 0)
    ts = env.step(np.int64(RIGHT))
    assert ts.observation[-4:].tolist() == [0, 1, 0, 0]  # facing south
    env.close()


def test_fully_observable_observation_encodes_the_whole_grid():
    env = suite_minigrid.load(DOORKEY, observation="fully_observable")
    assert tuple(env.observation_spec().shape) == (5 * 5 * 21 + 4,)
    env.seed(3)
    ts = env.reset()
    grid = _minigrid(env)
    cells = grid.grid.encode()
    x, y = grid.agent_pos
    cells[x, y] = [10, 0, grid.agent_dir]  # the agent: (agent, red, its direction)
    np.testing.assert_array_equal(ts.observation, _hand_one_hot(cells, grid.agent_dir))
    cell = ts.observation[:-4].reshape(5, 5, 21)[x, y]
    assert cell[10] == 1 and cell[17 + grid.agent_dir] == 1
    env.close()


@pytest.mark.parametrize("full", [False, True])
def test_image_observation_is_rgb_channels_first(full):
    observation = "fully_observable_image" if full else "image"
    env = suite_minigrid.load(DOORKEY, observation=observation, tile_size=4)
    size = 5 * 4 if full else 7 * 4
    spec = env.observation_spec()
    assert tuple(spec.shape) == (3, size, size) and spec.dtype == torch.uint8
    env.seed(1)
    ts = env.reset()
    grid = _minigrid(env)
    if full:
        assert grid.highlight  # MiniGrid's default: the agent's view is shaded in
        frame = grid.get_full_render(highlight=True, tile_size=4)
    else:
        frame = grid.get_pov_render(tile_size=4)
    assert ts.observation.dtype == np.uint8 and ts.observation.max() > ts.observation.min()
    np.testing.assert_array_equal(ts.observation, frame.transpose(2, 0, 1))
    env.close()


def test_goal_is_a_termination_with_minigrids_reward():
    env = suite_minigrid.load(EMPTY)
    assert _minigrid(env).max_steps == 4 * 5**2 == 100
    out = _steps(env, TO_THE_GOAL)
    assert [int(t.step_type) for t in out] == [FIRST, MID, MID, MID, MID, LAST]
    assert [float(t.discount) for t in out] == [1, 1, 1, 1, 1, 0]
    assert [float(t.reward) for t in out[:-1]] == [0] * 5
    assert float(out[-1].reward) == pytest.approx(1 - 0.9 * 5 / 100)  # 0.955
    assert [float(t.env_info["success"]) for t in out] == [0, 0, 0, 0, 0, 1]
    assert int(env.step(np.int64(LEFT)).step_type) == FIRST  # auto reset
    env.close()


def test_max_episode_steps_sets_the_truncation_and_the_reward():
    env = suite_minigrid.load(EMPTY, max_episode_steps=10, discount=0.9)
    out = _steps(env, TO_THE_GOAL)
    assert float(out[-1].reward) == pytest.approx(1 - 0.9 * 5 / 10)  # 0.55
    assert float(out[-1].discount) == 0 and float(out[-2].discount) == pytest.approx(0.9)
    out = _steps(env, [LEFT] * 10)  # spinning in place until MiniGrid's time limit
    assert [int(t.step_type) for t in out] == [FIRST] + [MID] * 9 + [LAST]
    assert float(out[-1].discount) == pytest.approx(0.9)  # a time limit: discount, not 0
    assert float(out[-1].reward) == 0 and float(out[-1].env_info["success"]) == 0
    env.close()


def test_truncation_at_the_registered_limit_has_discount_one():
    env = suite_minigrid.load(EMPTY)
    out = _steps(env, [LEFT] * 100)
    assert int(out[99].step_type) == MID and int(out[100].step_type) == LAST
    assert float(out[100].discount) == 1.0 and float(out[100].reward) == 0.0
    env.close()


def test_num_actions_keeps_the_first_actions():
    env = suite_minigrid.load(EMPTY, num_actions=3)
    assert int(env.action_spec().maximum) == 2
    out = _steps(env, TO_THE_GOAL)
    assert int(out[-1].step_type) == LAST and float(out[-1].reward) == pytest.approx(0.955)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.gym.step(3)  # pickup is not kept
    env.close()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(observation="rgb"), "observation must be one of"),
        (dict(num_actions=8), "num_actions"),
        (dict(max_episode_steps=0), "max_episode_steps"),
        (dict(tile_size=0), "tile_size"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        suite_minigrid.load(EMPTY, **kwargs)


def test_unknown_id_suggests_close_ones():
    with pytest.raises(ValueError, match="MiniGrid-DoorKey-5x5-v0"):
        suite_minigrid.load("MiniGrid-DoorKey-5x5-v9")


def test_missing_package_is_a_one_line_error(monkeypatch):
    monkeypatch.setattr(suite_minigrid, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"pip install 'alf\[minigrid\]'"):
        suite_minigrid.load(EMPTY)


def test_same_seed_same_layout_different_seed_different_layout():
    def layout(seed):
        env = suite_minigrid.load(DOORKEY, observation="fully_observable")
        env.seed(seed)
        obs = env.reset().observation
        env.close()
        return obs

    np.testing.assert_array_equal(layout(4), layout(4))
    assert not np.array_equal(layout(4), layout(5))


def test_conf_path_and_batched_in_this_process():
    alf.reset_configs()
    try:
        alf.config(
            "create_environment",
            env_load_fn=suite_minigrid.load,
            env_name=DOORKEY,
            num_parallel_environments=2,
            nonparallel=True,
            seed=2,
        )
        alf.config("suite_minigrid.load", num_actions=6)
        env = create_environment()
        assert env.batch_size == 2 and int(env.action_spec().maximum) == 5
        ts = env.reset()
        assert ts.observation.shape == (2, 1033) and ts.observation.dtype == torch.float32
        ts = env.step(torch.tensor([2, 1]))
        assert ts.step_type.tolist() == [MID, MID] and ts.env_info["success"].tolist() == [0, 0]
        env.close()
    finally:
        alf.reset_configs()


def test_worker_processes_match_this_process():
    kwargs = dict(
        env_name=DOORKEY,
        env_load_fn=functools.partial(
            suite_minigrid.load, max_episode_steps=3, observation="fully_observable"
        ),
        num_parallel_environments=2,
        seed=5,
    )
    env = create_environment(**kwargs)
    try:
        ts = env.reset()
        first = ts.observation.clone()
        assert ts.observation.shape == (2, 529) and not torch.equal(first[0], first[1])
        for _ in range(3):
            ts = env.step(torch.tensor([0, 1]))
        assert ts.step_type.tolist() == [LAST, LAST] and ts.discount.tolist() == [1.0, 1.0]
    finally:
        env.close()
    same = create_environment(nonparallel=True, **kwargs)
    torch.testing.assert_close(same.reset().observation, first)
    same.close()


def test_process_environment_runs_an_episode_to_the_goal():
    load = functools.partial(suite_minigrid.load, EMPTY, env_id=3)
    with ProcessEnvironment(load, env_id=3) as env:
        assert tuple(env.observation_spec().shape) == (1033,)
        out = [env.step(np.int64(LEFT))]  # the first step is a reset
        out += [env.step(np.int64(a)) for a in TO_THE_GOAL]
        assert [int(t.step_type) for t in out] == [FIRST, MID, MID, MID, MID, LAST]
        assert float(out[-1].discount) == 0 and float(out[-1].reward) == pytest.approx(0.955)
        assert int(out[-1].env_id) == 3
