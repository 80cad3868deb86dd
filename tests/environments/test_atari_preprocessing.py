"""DMAtariPreprocessing's numbers on a scripted fake ALE game (no ale-py needed).

The fake game's frame ``k`` (``k`` emulator frames after the reset) has the screen
``screens(k)`` and the reward ``k``; lives are lost at the frames of ``life_loss_frames``.
"""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from alf.environments.atari_preprocessing import (
    DMAtariPreprocessing,
    area_weights,
    resize_screen,
)
from alf.environments.gym_wrappers import DMAtariPreprocessing as FromGymWrappers

H, W = 210, 160


def _flat(value):
    return np.full((H, W), value, dtype=np.uint8)


class _FakeAle:
    def __init__(self, game):
        self._game = game

    def getScreenGrayscale(self, out):  # noqa: N802 (ALE's name)
        out[...] = self._game.screen

    def getScreenRGB(self, out):  # noqa: N802 (ALE's name)
        out[...] = self._game.screen[:, :, None]

    def lives(self):
        return self._game.num_lives


class FakeAtari(gym.Env):
    observation_space = spaces.Box(0, 255, (H, W, 3), dtype=np.uint8)
    action_space = spaces.Discrete(4)

    def __init__(self, screens=_flat, life_loss_frames=(), lives=3, meanings=None):
        self.ale = _FakeAle(self)
        self._screens = screens
        self._life_loss_frames = set(life_loss_frames)
        self._start_lives = lives
        self._meanings = meanings or ["NOOP", "FIRE", "RIGHT", "LEFT"]
        self.actions = []

    def get_action_meanings(self):
        return self._meanings

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.frame, self.num_lives, self.actions = 0, self._start_lives, []
        self.screen = self._screens(0)
        return np.zeros((H, W, 3), np.uint8), {"episode_frame_number": 0}

    def step(self, action):
        self.frame += 1
        self.actions.append(int(action))
        self.screen = self._screens(self.frame)
        if self.frame in self._life_loss_frames:
            self.num_lives -= 1
        info = {"episode_frame_number": self.frame}
        obs = np.zeros((H, W, 3), np.uint8)
        return obs, float(self.frame), self.num_lives == 0, False, info


def _wrap(game, **kwargs):
    kwargs.setdefault("noop_max", 0)
    kwargs.setdefault("fire_on_reset", False)
    return DMAtariPreprocessing(game, **kwargs)


def test_max_pools_the_last_two_frames_and_sums_the_rewards():
    left, right = np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8)
    left[:, : W // 2] = 200
    right[:, W // 2 :] = 100
    screens = {3: left, 4: right}
    env = _wrap(FakeAtari(screens=lambda k: screens.get(k, _flat(255 if k else 7))))
    obs, info = env.reset(seed=0)
    assert obs.shape == (84, 84, 1) and obs.dtype == np.uint8 and (obs == 7).all()
    obs, reward, terminated, truncated, info = env.step(3)
    # max(frame 3, frame 4): left half 200, right half 100; frames 1 and 2 (255) unseen.
    assert (obs[:, :42, 0] == 200).all() and (obs[:, 42:, 0] == 100).all()
    assert reward == 1 + 2 + 3 + 4 and not terminated and not truncated
    assert env.unwrapped.actions == [3, 3, 3, 3]
    assert info == {"lives": 3, "episode_frame_number": 4}


def test_resize_is_area_averaging_to_uint8():
    # The weights of one axis: output pixel 1 of 160 -> 84 covers input [1.905, 3.810).
    weights = area_weights(160, 84)
    scale = 160 / 84
    assert weights[1, 1] == pytest.approx((2 - scale) / scale, abs=1e-6)
    assert weights[1, 2] == pytest.approx(1 / scale, abs=1e-6)
    assert weights[1, 3] == pytest.approx((2 * scale - 3) / scale, abs=1e-6)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)
    # Alternate white columns: each output pixel is 255 x its white area, within rounding.
    screen = np.zeros((H, W), np.uint8)
    screen[:, 1::2] = 255
    resized = resize_screen(screen, 84)
    assert resized.shape == (84, 84, 1) and resized.dtype == np.uint8
    white = weights[:, 1::2].sum(axis=1) * 255
    assert np.abs(resized[0, :, 0] - white).max() <= 0.5 + 1e-3
    assert set(np.unique(resized)) == {121, 128, 134}
    rgb = resize_screen(np.full((H, W, 3), 9, np.uint8), 84)
    assert rgb.shape == (84, 84, 3) and (rgb == 9).all()


def test_gray_scale_false_gives_rgb_observations():
    env = _wrap(FakeAtari(), gray_scale=False, screen_size=42)
    assert env.observation_space.shape == (42, 42, 3)
    obs, _ = env.reset()
    assert obs.shape == (42, 42, 3) and obs.dtype == np.uint8


def test_a_lost_life_ends_the_step_and_fires():
    env = _wrap(FakeAtari(life_loss_frames={2}))
    env.reset()
    obs, reward, terminated, _, info = env.step(3)
    # frames 1-2 with the action, then FIRE (frame 3) and action 2 (frame 4)
    assert env.unwrapped.actions == [3, 3, 1, 2]
    assert reward == 1 + 2 + 3 + 4 and not terminated
    assert (obs == 4).all() and info["lives"] == 2  # the screen after FIRE, not pooled


def test_no_fire_when_disabled_or_when_the_game_has_no_fire():
    env = _wrap(FakeAtari(life_loss_frames={2}), fire_on_life_loss=False)
    env.reset()
    obs, reward, *_ = env.step(3)
    assert env.unwrapped.actions == [3, 3] and reward == 3 and (obs == 2).all()
    env = _wrap(FakeAtari(meanings=["NOOP", "UP", "DOWN"]), fire_on_reset=True)
    assert not env.needs_fire
    env.reset()
    assert env.unwrapped.actions == []


def test_game_over_ends_the_step_with_the_last_screen():
    env = _wrap(FakeAtari(life_loss_frames={3}, lives=1))
    env.reset()
    obs, reward, terminated, _, info = env.step(2)
    assert terminated and reward == 1 + 2 + 3 and (obs == 3).all() and info["lives"] == 0
    assert env.unwrapped.actions == [2, 2, 2]


def test_frame_skip_one_shows_each_frame_unpooled():
    env = _wrap(FakeAtari(), frame_skip=1)
    env.reset()
    for k in (1, 2, 3):
        obs, reward, *_ = env.step(0)
        assert (obs == k).all() and reward == k


def test_noop_starts_draw_from_1_to_noop_max_then_fire():
    game = FakeAtari()
    env = DMAtariPreprocessing(game, noop_max=30)
    counts = []
    for seed in range(200):
        _, info = env.reset(seed=seed)
        actions = game.actions
        assert actions[-2:] == [1, 2] and set(actions[:-2]) == {0}
        counts.append(len(actions) - 2)
        assert info["episode_frame_number"] == len(actions)
    assert min(counts) == 1 and max(counts) == 30 and len(set(counts)) == 30
    env.reset(seed=5)
    again = len(game.actions)
    env.reset(seed=5)
    assert len(game.actions) == again  # seeded
    env = DMAtariPreprocessing(FakeAtari(), noop_max=0, fire_on_reset=False)
    env.reset(seed=0)
    assert env.unwrapped.actions == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"frame_skip": 0}, "frame_skip must be >= 1"),
        ({"noop_max": -1}, "noop_max must be >= 0"),
        ({"screen_size": 0}, "screen_size must be >= 1"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DMAtariPreprocessing(FakeAtari(), **kwargs)


def test_a_non_atari_env_is_refused_by_name():
    with pytest.raises(ValueError, match="needs an Atari .*CartPole-v1.*has no ALE"):
        DMAtariPreprocessing(gym.make("CartPole-v1"))


def test_alf_path():
    assert FromGymWrappers is DMAtariPreprocessing
