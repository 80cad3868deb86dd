"""Tests of ``BatchedEnvironment``: in-process batching with per-row auto reset."""

import functools

import numpy as np
import pytest
import torch

from alf.data_structures import StepType, TimeStep
from alf.environments import suite_gym
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.batched_environment import (
    BatchedEnvironment,
    NestLayout,
    gym_member,
    member_seeds,
)
from alf.environments.thread_environment import ThreadEnvironment
from alf.tensor_specs import BoundedTensorSpec, TensorSpec

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
CONTINUOUS = "alf.environments.toy_envs:ContinuousCountingEnv-v0"
RANDOM_START = "alf.environments.toy_envs:RandomStartEnv-v0"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _counting(env_id, **kwargs):
    return functools.partial(suite_gym.load, COUNTING, env_id=env_id, **kwargs)


@pytest.fixture(params=[True, False], ids=["fused", "members"])
def fuse(request):
    return request.param


def test_per_row_auto_reset_and_discount_table(fuse):
    env = BatchedEnvironment(
        [_counting(0, terminate_at=2), _counting(1, terminate_at=None, truncate_at=3)],
        fuse_gym_steps=fuse,
    )
    assert env.batched and env.batch_size == 2
    time_step = env.reset()
    assert isinstance(time_step.step_type, torch.Tensor)
    assert time_step.step_type.tolist() == [FIRST, FIRST] and time_step.env_id.tolist() == [0, 1]
    rows = []
    for action in ([1, 2], [3, 1], [2, 2], [1, 3]):
        time_step = env.step(torch.tensor(action))
        rows.append(
            (
                time_step.step_type.tolist(),
                time_step.discount.tolist(),
                time_step.reward.tolist(),
                time_step.prev_action.tolist(),
                time_step.observation[:, 0].tolist(),
            )
        )
    assert rows == [
        ([MID, MID], [1, 1], [1, 2], [1, 2], [1, 1]),
        ([LAST, MID], [0, 1], [3, 1], [3, 1], [2, 2]),  # env 0 terminates
        ([FIRST, LAST], [1, 1], [0, 2], [0, 2], [0, 3]),  # only env 0 resets; env 1 truncates
        ([MID, FIRST], [1, 1], [1, 0], [1, 0], [1, 0]),
    ]
    env.close()
    env.close()


def test_outputs_match_spec_and_are_fresh(fuse):
    env = BatchedEnvironment(
        [_counting(i, terminate_at=None) for i in range(3)], fuse_gym_steps=fuse
    )
    spec = env.time_step_spec()
    first = env.reset()
    second = env.step(np.array([1, 2, 3]))  # numpy actions work too
    for time_step in (first, second):
        for value, leaf_spec in zip(
            [time_step.step_type, time_step.discount, time_step.observation, time_step.env_id],
            [spec.step_type, spec.discount, spec.observation, spec.env_id],
        ):
            assert value.dtype == leaf_spec.dtype
            assert tuple(value.shape) == (3, *leaf_spec.shape)
    env.step(torch.tensor([3, 3, 3]))
    assert first.observation[:, 0].tolist() == [0, 0, 0]
    assert second.reward.tolist() == [1, 2, 3]


def test_numpy_output(fuse):
    env = BatchedEnvironment([_counting(0), _counting(1)], torch_output=False, fuse_gym_steps=fuse)
    time_step = env.reset()
    assert isinstance(time_step.observation, np.ndarray) and time_step.observation.shape == (2, 1)
    time_step = env.step(torch.tensor([2, 1]))
    np.testing.assert_array_equal(time_step.reward, [2, 1])


def test_vector_actions_and_env_info():
    env = BatchedEnvironment(
        [functools.partial(suite_gym.load, CONTINUOUS, env_id=i) for i in range(2)]
    )
    env.reset()
    action = torch.tensor([[0.5, 1.0], [2.0, -1.0]])
    time_step = env.step(action)
    assert time_step.reward.tolist() == [1.5, 1.0]
    torch.testing.assert_close(time_step.prev_action, action)
    torch.testing.assert_close(time_step.env_info["last_action"], action)


def test_same_trajectories_as_thread_environment():
    actions = torch.randint(0, 2, (30, 2), generator=torch.Generator().manual_seed(0))

    def member(env_id):
        def make():
            env = suite_gym.load(RANDOM_START, env_id=env_id)
            env.seed(100 + env_id)
            return env

        return make

    batched = BatchedEnvironment([member(0), member(1)])
    threads = [ThreadEnvironment(member(i)) for i in range(2)]
    batch_steps = [batched.reset()] + [batched.step(a) for a in actions]
    for row, thread in enumerate(threads):
        thread_steps = [thread.reset()] + [thread.step(a[row : row + 1]) for a in actions]
        for batch_step, thread_step in zip(batch_steps, thread_steps):
            torch.testing.assert_close(batch_step.observation[row], thread_step.observation[0])
            assert batch_step.step_type[row] == thread_step.step_type[0]
            assert batch_step.reward[row] == thread_step.reward[0]


def test_seed():
    batched = BatchedEnvironment(
        [functools.partial(suite_gym.load, RANDOM_START, env_id=i) for i in range(2)]
    )
    batched.seed(5)
    first = batched.reset().observation
    batched.seed([5, 6])
    assert torch.equal(batched.reset().observation, first)
    with pytest.raises(ValueError, match="Expected 2 seeds"):
        batched.seed([1, 2, 3])


def test_member_seeds():
    assert member_seeds(5, 3) == [5, 6, 7]
    assert member_seeds(np.int64(5), 2) == [5, 6]
    assert member_seeds((9, 2, 4), 3) == [9, 2, 4]
    with pytest.raises(ValueError, match="Expected 2 seeds, got 1"):
        member_seeds([1], 2)


def test_rejects_different_specs_and_bad_actions(fuse):
    with pytest.raises(ValueError, match="same time_step_spec"):
        BatchedEnvironment([_counting(0), _counting(1, num_actions=3)])
    env = BatchedEnvironment([_counting(0), _counting(1)], fuse_gym_steps=fuse)
    env.reset()
    with pytest.raises(ValueError, match=r"does not match \[batch_size=2\]"):
        env.step(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="outside the action spec"):
        env.step(torch.tensor([1, 9]))


class _WrongShapeEnv(AlfEnvironment):
    """Returns a ``[2]`` observation although its spec says ``[3]``."""

    def observation_spec(self):
        return TensorSpec((3,))

    def action_spec(self):
        return BoundedTensorSpec((), "int64", 0, 1)

    def _reset(self):
        return TimeStep(
            np.int32(0),
            np.float32(0),
            np.float32(1),
            np.zeros(2, np.float32),
            np.int64(0),
            np.int32(0),
            (),
            {},
        )

    def _step(self, action):
        return self._reset()


def test_wrong_leaf_shape_is_reported_at_reset():
    env = BatchedEnvironment([_WrongShapeEnv(), _WrongShapeEnv()])
    with pytest.raises(ValueError, match=r"observation of shape \(2,\)"):
        env.reset()


def test_rejects_batched_members():
    inner = BatchedEnvironment([_counting(0)])
    with pytest.raises(ValueError, match="already batched"):
        BatchedEnvironment([inner])


def test_nest_layout_is_aligned_and_contiguous():
    spec = {"a": TensorSpec((3,), "float32"), "b": TensorSpec((), "int8"), "c": TensorSpec((2,))}
    layout = NestLayout(spec, batch_size=5)
    offsets = [offset for offset, _, _ in layout.fields]
    assert offsets == sorted(offsets) and all(offset % 16 == 0 for offset in offsets)
    block = np.zeros(layout.nbytes, np.uint8)
    views = layout.views(block)
    assert [v.shape for v in views] == [(5, 3), (5,), (5, 2)]
    views[2][...] = 7
    assert layout.unflatten(views)["c"].sum() == 70 and layout.unflatten(views)["a"].sum() == 0


def _trajectory(env, actions):
    time_steps = [env.reset()] + [env.step(action) for action in actions]
    fields = [getattr(t, name) for t in time_steps for name in TimeStep._fields[:6]]
    infos = [value for t in time_steps for value in t.env_info.values()]
    return fields + infos


@pytest.mark.parametrize(
    "name, kwargs",
    [
        (COUNTING, dict(terminate_at=3, truncate_at=5)),
        (COUNTING, dict(terminate_at=None, truncate_at=4)),
        (COUNTING, dict(terminate_at=None, max_episode_steps=3)),  # alf's TimeLimit
        (COUNTING, dict(terminate_at=3, truncate_at=3)),  # both at once: terminated wins
        (COUNTING, dict(terminate_at=None, discount=0.9, max_episode_steps=4)),
        (RANDOM_START, dict(max_episode_steps=7)),  # float64 observations are cast
        ("CartPole-v1", dict(max_episode_steps=20)),
        (CONTINUOUS, dict(terminate_at=4)),  # vector actions, env_info
    ],
)
def test_fused_gym_steps_equal_member_steps(name, kwargs):
    """``GymRows`` applies exactly the rules of AlfGymWrapper + TimeLimit."""
    num_actions = 4 if name == COUNTING else 2
    generator = torch.Generator().manual_seed(1)
    if name == CONTINUOUS:
        actions = torch.rand((40, 3, 2), generator=generator) * 4 - 1
    else:
        actions = torch.randint(0, num_actions, (40, 3), generator=generator)

    def make(fuse):
        constructors = [
            functools.partial(suite_gym.load, name, env_id=i, **kwargs) for i in range(3)
        ]
        env = BatchedEnvironment(constructors, fuse_gym_steps=fuse)
        env.seed(11)
        return env

    fused, members = make(True), make(False)
    assert fused._gym_rows is not None and members._gym_rows is None
    for a, b in zip(_trajectory(fused, actions), _trajectory(members, actions)):
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_fused_action_validation():
    env = BatchedEnvironment([_counting(0), _counting(5)])
    env.reset()
    with pytest.raises(
        ValueError, match=r"Action 4 of row 1 is outside the action spec .*env_id=5"
    ):
        env.step(torch.tensor([1, 4]))
    with pytest.raises(ValueError, match="outside the action spec"):
        env.step(torch.tensor([-1, 0]))
    assert env.step(torch.tensor([3, 2])).reward.tolist() == [3, 2]


def test_gym_member_detection():
    assert gym_member(suite_gym.load(COUNTING)) is not None
    assert gym_member(suite_gym.load(COUNTING, max_episode_steps=0)) is not None
    assert gym_member(suite_gym.load(CONTINUOUS)) is not None
    assert gym_member(_WrongShapeEnv()) is None
