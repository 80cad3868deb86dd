"""Tests of the gymnasium wrappers (``gym_wrappers``)."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from alf.environments import suite_gym
from alf.environments.gym_wrappers import (
    ContinuousActionClip,
    FrameGrayScale,
    FrameResize,
    FrameSkip,
    ImageChannelFirst,
    NormalizedAction,
)
from alf.environments.toy_envs import ContinuousCountingEnv, CountingEnv, ImageEnv


def test_continuous_action_clip_pendulum():
    env = ContinuousActionClip(gym.make("Pendulum-v1"))
    np.testing.assert_array_equal(env.action(np.array([5.0])), [2.0])
    np.testing.assert_array_equal(env.action(np.array([-7.0])), [-2.0])
    np.testing.assert_array_equal(env.action(np.array([0.5])), [0.5])
    assert env.action(np.array([5.0])).dtype == np.float32
    # Through suite_gym: the out-of-bounds action is passed by AlfGymWrapper, clipped here.
    clipped = suite_gym.load("Pendulum-v1", gym_env_wrappers=(ContinuousActionClip,))
    at_bound = suite_gym.load("Pendulum-v1")
    clipped.seed(0)
    at_bound.seed(0)
    clipped.reset()
    at_bound.reset()
    for _ in range(3):
        a = clipped.step(np.array([5.0], np.float32))
        b = at_bound.step(np.array([2.0], np.float32))
        np.testing.assert_array_equal(a.observation, b.observation)
        assert float(a.reward) == float(b.reward)


def test_continuous_action_clip_toy_env():
    env = ContinuousActionClip(
        ContinuousCountingEnv(action_low=[-1.0, 0.0], action_high=[3.0, 1.0])
    )
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([10.0, -5.0]))
    np.testing.assert_array_equal(info["last_action"], [3.0, 0.0])
    assert reward == 3.0


def test_normalized_action_maps_unit_box_to_bounds():
    env = NormalizedAction(ContinuousCountingEnv(action_low=[-1.0, 0.0], action_high=[3.0, 10.0]))
    assert env.action_space == spaces.Box(-1.0, 1.0, (2,), np.float32)
    env.reset(seed=0)
    for action, expected in [
        ([-1.0, -1.0], [-1.0, 0.0]),
        ([1.0, 1.0], [3.0, 10.0]),
        ([0.0, 0.5], [1.0, 7.5]),
    ]:
        info = env.step(np.array(action, np.float32))[4]
        np.testing.assert_allclose(info["last_action"], expected)
    pendulum = NormalizedAction(gym.make("Pendulum-v1"))
    np.testing.assert_allclose(pendulum.action(np.array([-1.0])), [-2.0])
    np.testing.assert_allclose(pendulum.action(np.array([1.0])), [2.0])


def test_normalized_action_through_suite_gym_spec():
    env = suite_gym.load("Pendulum-v1", gym_env_wrappers=(NormalizedAction,))
    spec = env.action_spec()
    assert float(spec.minimum) == -1.0 and float(spec.maximum) == 1.0


def test_normalized_action_needs_finite_bounds():
    class _Unbounded(ContinuousCountingEnv):
        def __init__(self):
            super().__init__()
            self.action_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)

    with pytest.raises(ValueError, match="finite"):
        NormalizedAction(_Unbounded())


def test_normalized_action_leaves_discrete_parts():
    class _DictAction(ContinuousCountingEnv):
        def __init__(self):
            super().__init__()
            self.action_space = spaces.Dict(
                {"k": spaces.Discrete(3), "x": spaces.Box(0.0, 4.0, (2,), np.float32)}
            )

        def step(self, action):
            return super().step(action["x"])

    env = NormalizedAction(_DictAction())
    assert env.action_space["k"] == spaces.Discrete(3)
    action = env.action({"k": 2, "x": np.array([-1.0, 0.0], np.float32)})
    assert action["k"] == 2
    np.testing.assert_allclose(action["x"], [0.0, 2.0])


def test_frame_skip_sums_rewards_and_stops_at_termination():
    env = FrameSkip(CountingEnv(terminate_at=4), skip=3)
    obs, _ = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(2)
    assert (obs[0], reward, terminated, info["count"]) == (3.0, 6.0, False, 3)
    obs, reward, terminated, truncated, info = env.step(3)  # only one repeat before the end
    assert (obs[0], reward, terminated, info["count"]) == (4.0, 3.0, True, 4)


def test_frame_skip_stops_at_truncation():
    env = FrameSkip(CountingEnv(terminate_at=None, truncate_at=2), skip=5)
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(1)
    assert (obs[0], reward, terminated, truncated) == (2.0, 2.0, False, True)
    with pytest.raises(ValueError):
        FrameSkip(CountingEnv(), skip=0)


def test_image_channel_first():
    inner = ImageEnv(height=6, width=8)
    env = ImageChannelFirst(inner)
    assert env.observation_space.shape == (3, 6, 8)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, np.transpose(inner.image(0), (2, 0, 1)))
    assert obs.flags.c_contiguous
    obs = env.step(0)[0]
    np.testing.assert_array_equal(obs[1, 2, 3], inner.image(1)[2, 3, 1])


def test_image_channel_first_dict_obs():
    inner = ImageEnv(height=6, width=8, dict_obs=True)
    env = ImageChannelFirst(inner)
    assert env.observation_space["image"].shape == (3, 6, 8)
    assert env.observation_space["count"].shape == (1,)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["image"], np.transpose(inner.image(0), (2, 0, 1)))
    np.testing.assert_array_equal(obs["count"], [0.0])
    assert env.observation_space.contains(obs)


def _block_mean(image, block):
    h, w, c = image.shape
    return image.reshape(h // block, block, w // block, block, c).astype(float).mean(axis=(1, 3))


def test_frame_resize_area_is_block_mean():
    inner = ImageEnv(height=6, width=8)
    env = FrameResize(inner, width=4, height=3)
    assert env.observation_space.shape == (3, 4, 3)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 4, 3) and obs.dtype == np.uint8
    expected = _block_mean(inner.image(0), 2)
    assert np.abs(obs.astype(float) - expected).max() <= 0.5 + 1e-6
    assert env.observation_space.contains(obs)


def test_frame_resize_nearest_and_single_channel():
    inner = ImageEnv(height=6, width=8)
    env = FrameResize(FrameGrayScale(inner), width=16, height=12, interpolation="nearest")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (12, 16, 1) and obs.dtype == np.uint8
    gray = FrameGrayScale(ImageEnv(height=6, width=8)).reset(seed=0)[0]
    np.testing.assert_array_equal(obs[::2, ::2], gray)  # 2x nearest upsampling repeats pixels
    with pytest.raises(ValueError, match="interpolation"):
        FrameResize(inner, interpolation="cubic-ish")


def test_frame_gray_scale_values():
    inner = ImageEnv(height=6, width=8)
    env = FrameGrayScale(inner)
    assert env.observation_space.shape == (6, 8, 1)
    obs, _ = env.reset(seed=0)
    image = inner.image(0).astype(float)
    expected = np.rint(0.299 * image[..., 0] + 0.587 * image[..., 1] + 0.114 * image[..., 2])
    assert np.abs(obs[..., 0].astype(float) - expected).max() <= 1.0
    assert obs[0, 0, 0] == 41  # rint(0.299 * 0 + 0.587 * 50 + 0.114 * 100) = rint(40.75)
    assert obs[1, 2, 0] == 57  # pixel (R, G, B) = (16, 66, 116): 4.784 + 38.742 + 13.224


def test_image_wrappers_fields():
    env = FrameResize(ImageEnv(dict_obs=True), width=4, height=3, fields=["image"])
    obs, _ = env.reset(seed=0)
    assert obs["image"].shape == (3, 4, 3)
    with pytest.raises(ValueError, match="not in observation space"):
        FrameResize(ImageEnv(dict_obs=True), fields=["pixels"])
