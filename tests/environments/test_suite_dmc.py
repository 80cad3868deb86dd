"""suite_dmc.load on dm_control tasks: specs, flattened states, pixels, the discount table
(a time limit keeps discount 1, a task's termination gives 0), seeding, process batching."""

import functools

import numpy as np
import pytest
import torch

pytest.importorskip("dm_control")  # not dm_control.suite: suite_dmc picks the GL backend first
dm_env = pytest.importorskip("dm_env")

from alf.environments import suite_dmc  # noqa: E402, I001 (before dm_control.suite)
from alf.data_structures import StepType  # noqa: E402
from alf.environments import alf_wrappers, suite_gym  # noqa: E402
from alf.environments.alf_environment import AlfEnvironment  # noqa: E402
from alf.environments.gym_wrappers import FrameSkip  # noqa: E402
from alf.environments.utils import create_environment  # noqa: E402

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _state_env(name="cheetah:run", **kwargs):
    return suite_dmc.load(name, from_pixels=False, **kwargs)


def _run(env, steps, seed=0):
    """reset() then ``steps`` uniform random actions (stopping at a LAST)."""
    rng = np.random.default_rng(seed)
    spec = env.action_spec()
    out = [env.reset()]
    for _ in range(steps):
        action = rng.uniform(-1, 1, spec.shape).astype(np.float32)
        out.append(env.step(action))
        if out[-1].step_type == LAST:
            break
    return out


def test_state_observation_is_the_flattened_dict():
    env = _state_env()
    assert isinstance(env, AlfEnvironment) and isinstance(env, alf_wrappers.TimeLimit)
    assert env.duration == 1000  # ALF's default max_episode_steps
    spec, action_spec = env.observation_spec(), env.action_spec()
    assert tuple(spec.shape) == (17,) and spec.dtype == torch.float32  # 8 positions, 9 velocities
    assert tuple(action_spec.shape) == (6,) and action_spec.dtype == torch.float32
    assert float(action_spec.minimum) == -1.0 and float(action_spec.maximum) == 1.0
    assert env.env_info_spec() == {}
    ts = env.reset()
    physics = env.unwrapped.gym.unwrapped.dm_env.physics
    np.testing.assert_allclose(
        ts.observation, np.concatenate([physics.data.qpos[1:], physics.data.qvel]), rtol=1e-6
    )
    assert ts.step_type == FIRST and float(ts.discount) == 1.0
    steps = _run(env, 5)
    assert [int(t.step_type) for t in steps] == [FIRST] + [MID] * 5
    assert all(t.observation.dtype == np.float32 and t.observation.shape == (17,) for t in steps)
    assert all(np.isfinite(float(t.reward)) for t in steps)
    env.close()


def test_flatten_observation_keeps_the_dict_order_and_scalars():
    obs = {"b": np.array([[1.0, 2.0]]), "a": 3.0, "c": np.float64(4.0)}
    flat = suite_dmc.flatten_observation(obs)
    assert flat.dtype == np.float32 and flat.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_time_limit_is_a_last_with_discount_1():
    env = _state_env(max_episode_steps=5)
    assert env.duration == 5
    steps = _run(env, 10)
    assert [int(t.step_type) for t in steps] == [FIRST] + [MID] * 4 + [LAST]
    assert [float(t.discount) for t in steps] == [1.0] * 6
    assert env.step(np.zeros(6, np.float32)).step_type == FIRST  # auto reset
    env.close()


def test_dm_controls_own_time_limit_is_a_last_with_discount_1():
    """max_episode_steps=None keeps dm_control's limit (10 s for cartpole); its LAST, which
    dm_control reports with discount 1, stays discount 1."""
    env = _state_env("cartpole:balance", max_episode_steps=None, control_timestep=0.5)
    assert not isinstance(env, alf_wrappers.TimeLimit)
    steps = _run(env, 100)
    assert len(steps) == 21  # 10 s / 0.5 s
    assert steps[-1].step_type == LAST and float(steps[-1].discount) == 1.0
    assert all(float(t.discount) == 1.0 for t in steps)
    env.close()


def test_no_limit_and_alf_wrappers():
    env = _state_env(max_episode_steps=0)
    assert not isinstance(env, alf_wrappers.TimeLimit)
    env = _state_env(
        max_episode_steps=0,
        alf_env_wrappers=(functools.partial(alf_wrappers.TimeLimit, duration=10),),
    )
    assert isinstance(env, alf_wrappers.TimeLimit) and env.duration == 10


def test_a_task_termination_is_a_last_with_discount_0():
    """lqr terminates when its state reaches the origin: dm_control's discount 0."""
    env = _state_env("lqr:lqr_2_1", max_episode_steps=100)
    env.reset()
    physics = env.unwrapped.gym.unwrapped.dm_env.physics
    with physics.reset_context():
        physics.data.qpos[:] = 0.0
        physics.data.qvel[:] = 0.0
    ts = env.step(np.zeros(1, np.float32))
    assert ts.step_type == LAST and float(ts.discount) == 0.0
    assert env.step(np.zeros(1, np.float32)).step_type == FIRST
    env.close()


class _HandMadeEnv(dm_env.Environment):
    """Ends at step 3 with the discount it was given (0: termination, 1: time out)."""

    def __init__(self, last_discount):
        self._last_discount = last_discount
        self._t = 0

    def reset(self):
        self._t = 0
        return dm_env.restart({"x": np.zeros(2), "t": 0.0})

    def step(self, action):
        self._t += 1
        obs = {"x": np.full(2, float(action[0])), "t": float(self._t)}
        if self._t == 3:
            if self._last_discount == 0:
                return dm_env.termination(1.0, obs)
            return dm_env.truncation(1.0, obs, discount=self._last_discount)
        return dm_env.transition(0.5, obs)

    def observation_spec(self):
        return {
            "x": dm_env.specs.Array((2,), np.float64),
            "t": dm_env.specs.Array((), np.float64),
        }

    def action_spec(self):
        return dm_env.specs.BoundedArray((1,), np.float64, -2.0, 2.0)


@pytest.mark.parametrize("last_discount, expected", [(0.0, 0.0), (1.0, 1.0)])
def test_a_hand_made_dm_env_maps_onto_the_discount_table(last_discount, expected):
    gym_env = suite_dmc.DMControlGymEnv(_HandMadeEnv(last_discount), name="hand:made")
    env = suite_gym.wrap_env(gym_env, max_episode_steps=10)
    spec = env.action_spec()
    assert float(spec.minimum) == -2.0 and float(spec.maximum) == 2.0
    steps = [env.reset()] + [env.step(np.array([1.5], np.float32)) for _ in range(3)]
    assert [int(t.step_type) for t in steps] == [FIRST, MID, MID, LAST]
    assert [float(t.discount) for t in steps] == [1.0, 1.0, 1.0, expected]
    assert [float(t.reward) for t in steps] == [0.0, 0.5, 0.5, 1.0]
    assert steps[-1].observation.tolist() == [1.5, 1.5, 3.0]


def test_same_seed_same_observations():
    def observations(seed):
        env = _state_env()
        env.seed(seed)
        obs = np.stack([t.observation for t in _run(env, 10)])
        env.close()
        return obs

    np.testing.assert_array_equal(observations(3), observations(3))
    assert not np.array_equal(observations(3), observations(4))


def test_frame_skip_sums_the_rewards_of_repeated_actions():
    single = _state_env(max_episode_steps=0)
    skipped = _state_env(max_episode_steps=0, frame_skip=2)
    assert isinstance(skipped.gym.env, FrameSkip)
    for env in (single, skipped):
        env.seed(1)
        env.reset()
    action = np.full(6, 0.5, np.float32)
    r1 = float(single.step(action).reward) + float(single.step(action).reward)
    ts = skipped.step(action)
    assert float(ts.reward) == pytest.approx(r1, rel=1e-6)
    np.testing.assert_allclose(ts.observation, single.current_time_step().observation)
    with pytest.raises(ValueError, match="frame_skip must be >= 1"):
        _state_env(frame_skip=0)


@pytest.mark.parametrize(
    "name, message",
    [
        ("cheetah", r"'domain_name:task_name'"),
        ("cheetah:runn", r"unknown task 'cheetah:runn'.*'cheetah:run'"),
    ],
)
def test_bad_names_are_one_error(name, message):
    with pytest.raises(ValueError, match=message):
        _state_env(name)


def test_pixels_are_channel_first_uint8_images():
    env = suite_dmc.load("cheetah:run", image_size=16, render_mode="rgb_array")
    try:
        ts = env.reset()
    except Exception as e:  # no OpenGL (EGL / OSMesa) on this machine
        pytest.skip(f"dm_control cannot render here: {e}")
    spec = env.observation_spec()
    assert tuple(spec.shape) == (3, 16, 16) and spec.dtype == torch.uint8
    assert ts.observation.shape == (3, 16, 16) and ts.observation.dtype == np.uint8
    assert ts.observation.max() > ts.observation.min()  # something is drawn
    frame = env.render("rgb_array")  # as alf.bin.play records it: [H, W, 3]
    assert frame.shape == (16, 16, 3)
    np.testing.assert_array_equal(frame.transpose(2, 0, 1), ts.observation)
    env.close()


def test_batched_in_processes_with_seeds():
    load = functools.partial(suite_dmc.load, from_pixels=False, max_episode_steps=3)
    kwargs = dict(env_name="cheetah:run", env_load_fn=load, num_parallel_environments=2, seed=5)
    env = create_environment(**kwargs)
    try:
        assert tuple(env.observation_spec().shape) == (17,) and env.batch_size == 2
        ts = env.reset()
        first = ts.observation.clone()
        assert ts.observation.shape == (2, 17) and not torch.equal(first[0], first[1])
        for _ in range(3):
            ts = env.step(torch.zeros(2, 6))
        assert ts.step_type.tolist() == [LAST, LAST] and ts.discount.tolist() == [1.0, 1.0]
    finally:
        env.close()
    same = create_environment(nonparallel=True, **kwargs)  # the same seeds in this process
    torch.testing.assert_close(same.reset().observation, first)
    same.close()
