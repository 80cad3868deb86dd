"""Tests of ``AlfGymWrapper``: the discount table, casting, validation, env_info, seeding."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import alf.environments.toy_envs  # noqa: F401  (registers the toy envs)
from alf.data_structures import StepType
from alf.environments.alf_gym_wrapper import AlfGymWrapper, env_info_spec_from_infos
from alf.environments.toy_envs import ContinuousCountingEnv, CountingEnv
from alf.tensor_specs import TensorSpec

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _run(env, actions):
    """``[reset(), step(a0), step(a1), ...]`` as a list of time steps."""
    return [env.reset()] + [env.step(a) for a in actions]


def _rows(time_steps):
    """``(step_type, discount, reward, obs[0], prev_action)`` per time step."""
    return [
        (
            int(t.step_type),
            float(t.discount),
            float(t.reward),
            float(t.observation[0]),
            int(t.prev_action),
        )
        for t in time_steps
    ]


def _assert_matches_spec(value, spec):
    if isinstance(spec, dict):
        assert set(value) == set(spec)
        for k in spec:
            _assert_matches_spec(value[k], spec[k])
    elif isinstance(spec, tuple):
        for v, s in zip(value, spec):
            _assert_matches_spec(v, s)
    else:
        assert isinstance(value, np.ndarray), (value, spec)
        assert value.dtype == spec.numpy_dtype and value.shape == tuple(spec.shape), (value, spec)


def test_discount_table_terminated():
    env = AlfGymWrapper(CountingEnv(terminate_at=3))
    rows = _rows(_run(env, [2, 1, 3, 1, 2]))
    # (step_type, discount, reward, observation, prev_action)
    assert rows == [
        (FIRST, 1.0, 0.0, 0.0, 0),
        (MID, 1.0, 2.0, 1.0, 2),
        (MID, 1.0, 1.0, 2.0, 1),
        (LAST, 0.0, 3.0, 3.0, 3),
        (FIRST, 1.0, 0.0, 0.0, 0),  # auto reset: action 1 ignored
        (MID, 1.0, 2.0, 1.0, 2),
    ]


def test_discount_table_truncated_keeps_discount():
    env = AlfGymWrapper(CountingEnv(terminate_at=None, truncate_at=2))
    rows = _rows(_run(env, [3, 1, 2, 1]))
    assert rows == [
        (FIRST, 1.0, 0.0, 0.0, 0),
        (MID, 1.0, 3.0, 1.0, 3),
        (LAST, 1.0, 1.0, 2.0, 1),
        (FIRST, 1.0, 0.0, 0.0, 0),
        (MID, 1.0, 1.0, 1.0, 1),
    ]


def test_terminated_wins_over_truncated_and_discount_arg():
    env = AlfGymWrapper(CountingEnv(terminate_at=2, truncate_at=2), discount=0.9)
    rows = _rows(_run(env, [1, 1]))
    assert [r[:2] for r in rows] == [(FIRST, 1.0), (MID, pytest.approx(0.9)), (LAST, 0.0)]
    env = AlfGymWrapper(CountingEnv(terminate_at=None, truncate_at=2), discount=0.9)
    rows = _rows(_run(env, [1, 1]))
    assert [r[:2] for r in rows] == [
        (FIRST, 1.0),
        (MID, pytest.approx(0.9)),
        (LAST, pytest.approx(0.9)),
    ]


def test_first_step_and_step_before_reset():
    env = AlfGymWrapper(ContinuousCountingEnv(), env_id=7)
    time_step = env.step(np.array([1.0, 1.0], np.float32))  # no reset yet: returns FIRST
    assert int(time_step.step_type) == FIRST
    assert float(time_step.reward) == 0.0
    np.testing.assert_array_equal(time_step.prev_action, np.zeros(2, np.float32))
    assert int(time_step.env_id) == 7
    _assert_matches_spec(time_step, env.time_step_spec()._replace(untransformed=()))


def test_time_steps_match_time_step_spec():
    env = AlfGymWrapper(CountingEnv(terminate_at=2, obs_dtype=np.float64))
    spec = env.time_step_spec()
    for time_step in _run(env, [1, 1, 1]):
        _assert_matches_spec(time_step, spec)


def test_observation_dtype_cast_and_kept():
    env = AlfGymWrapper(gym.make("CartPole-v1"))
    assert env.observation_spec().numpy_dtype == np.float32
    assert env.reset().observation.dtype == np.float32
    env = AlfGymWrapper(CountingEnv(obs_dtype=np.float64))
    assert env.reset().observation.dtype == np.float32
    env = AlfGymWrapper(CountingEnv(obs_dtype=np.float64), float_dtype=None)
    assert env.observation_spec().numpy_dtype == np.float64
    assert env.reset().observation.dtype == np.float64


@pytest.mark.parametrize(
    "action, fragment",
    [(5, "Action 5 is outside"), (-1, "Action -1 is outside"), ([0, 1], "shape (2,)")],
)
def test_invalid_discrete_action_names_env_and_spec(action, fragment):
    env = AlfGymWrapper(gym.make("CartPole-v1"), env_id=3)
    env.reset()
    with pytest.raises(ValueError) as info:
        env.step(action)
    message = str(info.value)
    assert fragment in message
    assert "CartPole-v1 (env_id=3)" in message
    assert "BoundedTensorSpec(shape=(), dtype=torch.int64, minimum=0, maximum=1)" in message


class _NestedActionEnv(gym.Env):
    """Dict action {'move': MultiDiscrete([3, 2]), 'force': Box(2)}; obs = last action."""

    def __init__(self):
        self.action_space = spaces.Dict(
            {"move": spaces.MultiDiscrete([3, 2]), "force": spaces.Box(-1.0, 1.0, (2,))}
        )
        self.observation_space = spaces.Dict(
            {"move": spaces.Box(0, 5, (2,), np.int64), "force": spaces.Box(-9.0, 9.0, (2,))}
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"move": np.zeros(2, np.int64), "force": np.zeros(2, np.float32)}, {}

    def step(self, action):
        return dict(action), 0.0, False, False, {}


def test_nested_actions_are_validated_and_echoed():
    env = AlfGymWrapper(_NestedActionEnv())
    env.reset()
    action = {"move": np.array([2, 1]), "force": np.array([5.0, -0.5])}  # force out of bounds
    time_step = env.step(action)
    np.testing.assert_array_equal(time_step.observation["move"], [2, 1])
    np.testing.assert_allclose(time_step.observation["force"], [5.0, -0.5])  # passed through
    assert time_step.prev_action["move"].dtype == np.int64
    assert time_step.prev_action["force"].dtype == np.float32
    with pytest.raises(ValueError, match=r"action field 'move'.*_NestedActionEnv \(env_id=0\)"):
        env.step({"move": np.array([3, 0]), "force": np.zeros(2)})


def test_continuous_action_out_of_bounds_passes_through():
    env = AlfGymWrapper(ContinuousCountingEnv(action_low=-1.0, action_high=1.0))
    env.reset()
    time_step = env.step(np.array([10.0, -4.0]))
    assert float(time_step.reward) == pytest.approx(6.0)
    np.testing.assert_allclose(time_step.env_info["last_action"], [10.0, -4.0])


def _trajectory(env, seed, num_steps=40):
    env.seed(seed)
    rng = np.random.default_rng(0)
    time_steps = [env.reset()]
    for _ in range(num_steps):
        time_steps.append(env.step(np.int64(rng.integers(2))))
    return np.stack([t.observation for t in time_steps]), [float(t.reward) for t in time_steps]


@pytest.mark.parametrize("env_name", ["CartPole-v1", "alf.environments.toy_envs:RandomStartEnv-v0"])
def test_same_seed_same_trajectory_different_seed_different(env_name):
    env1, env2 = AlfGymWrapper(gym.make(env_name)), AlfGymWrapper(gym.make(env_name))
    obs1, rewards1 = _trajectory(env1, seed=5)
    obs2, rewards2 = _trajectory(env2, seed=5)
    np.testing.assert_array_equal(obs1, obs2)
    assert rewards1 == rewards2
    obs3, _ = _trajectory(env2, seed=6)
    assert not np.array_equal(obs1, obs3)


def test_seed_applies_at_next_reset_only():
    env = AlfGymWrapper(gym.make("alf.environments.toy_envs:RandomStartEnv-v0"))
    env.seed(1)
    first = env.reset().observation
    env.seed(1)
    assert np.array_equal(env.reset().observation, first)
    assert not np.array_equal(env.reset().observation, first)  # seed used once


class _InfoEnv(gym.Env):
    """Info with numeric, non-numeric, varying, late and sometimes-missing keys."""

    def __init__(self):
        self.observation_space = spaces.Box(-1.0, 1.0, (1,))
        self.action_space = spaces.Discrete(2)
        self._count = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        info = {"score": 0.5, "name": "x", "shape_varies": 1.0, "ok": True}
        return np.zeros(1, np.float32), info

    def step(self, action):
        self._count += 1
        info = {"score": float(self._count), "shape_varies": np.zeros(3), "nested": {"a": 1}}
        if self._count % 2 == 1:
            info["pos"] = np.array([self._count, -self._count])
        if self._count >= 3:
            info["late"] = 1.0
        return np.zeros(1, np.float32), 0.0, False, False, info


def test_env_info_spec_rule():
    env = AlfGymWrapper(_InfoEnv())
    spec = env.env_info_spec()
    assert spec == {
        "score": TensorSpec((), np.float32),
        "ok": TensorSpec((), np.bool_),
        "pos": TensorSpec((2,), np.int64),
    }
    time_steps = _run(env, [0, 0, 0, 0])
    for t in time_steps:
        _assert_matches_spec(t.env_info, spec)
    assert [float(t.env_info["score"]) for t in time_steps] == [0.5, 1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(time_steps[1].env_info["pos"], [1, -1])
    np.testing.assert_array_equal(time_steps[2].env_info["pos"], [0, 0])  # missing → zeros
    np.testing.assert_array_equal(time_steps[3].env_info["pos"], [3, -3])
    assert bool(time_steps[0].env_info["ok"]) and not bool(time_steps[1].env_info["ok"])


def test_env_info_shape_change_raises():
    spec = env_info_spec_from_infos([{"v": np.zeros(2)}])
    assert spec == {"v": TensorSpec((2,), np.float32)}

    class _Changing(_InfoEnv):
        def step(self, action):
            self._count += 1
            score = 1.0 if self._count == 1 else np.zeros(2)  # the probe sees a scalar
            return np.zeros(1, np.float32), 0.0, False, False, {"score": score}

    env = AlfGymWrapper(_Changing())
    env.reset()
    env.step(0)
    with pytest.raises(ValueError, match="env_info\\['score'\\].*shape"):
        env.step(0)


def test_env_info_without_probe_is_empty():
    env = AlfGymWrapper(_InfoEnv(), probe_env_info=False)
    assert env.env_info_spec() == {}
    assert env.reset().env_info == {}


class _VectorRewardEnv(CountingEnv):
    reward_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, np.array([action, -action]), terminated, truncated, info


def test_vector_reward():
    env = AlfGymWrapper(_VectorRewardEnv())
    assert env.reward_spec() == TensorSpec((2,), np.float32)
    time_steps = _run(env, [3])
    np.testing.assert_array_equal(time_steps[0].reward, [0.0, 0.0])
    np.testing.assert_array_equal(time_steps[1].reward, [3.0, -3.0])
    assert time_steps[1].reward.dtype == np.float32


def test_render():
    env = AlfGymWrapper(CountingEnv(render_mode="rgb_array"))
    env.reset()
    env.step(1)
    frame = env.render()
    assert frame.shape == (8, 8, 3) and frame.dtype == np.uint8 and frame[0, 0, 0] == 1
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        AlfGymWrapper(CountingEnv()).render()


def test_close_is_idempotent():
    env = AlfGymWrapper(gym.make("CartPole-v1"))
    env.reset()
    env.close()
    env.close()
