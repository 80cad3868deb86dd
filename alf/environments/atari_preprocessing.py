"""``DMAtariPreprocessing``: the Atari 2600 preprocessing of DQN (Mnih et al. 2015), as ALF.

A gymnasium wrapper of an ALE env (``ale-py``, ``pip install 'alf[atari]'``) made with
``frameskip=1`` (``suite_atari.load`` makes it so). It does, per agent step:

- **frame skip** ``frame_skip`` (4): the action is repeated on that many emulator frames and
  their rewards are summed;
- **max-pooling** of the last two frames' screens (against the flicker of sprites drawn on
  alternate frames); when a step ends early (game over, time limit, life lost) or
  ``frame_skip`` is 1, the observation is the last screen alone;
- **84x84 grayscale** (``screen_size``, ``gray_scale``): ALE's own grayscale screen, resized
  by area averaging (OpenCV's ``INTER_AREA``, as SB3 and ALF; done with two small matrix
  sums here, so no OpenCV is needed), ``uint8``
  ``[screen_size, screen_size, 1]`` (``[.., 3]`` RGB when ``gray_scale=False``);
- **no-op starts**: ``reset`` plays a uniformly drawn number of NOOPs in ``[1, noop_max]``
  (from the env's seeded ``np_random``); 0 disables them;
- **FIRE** (then action 2) after ``reset`` and after a lost life, for games whose action 1
  is FIRE (Breakout, Pong, ...): without it a game may wait forever for a launch, which a
  deterministic evaluation policy might never press;
- a lost life ends the agent step early (the remaining frames of the skip are not played).

The episode is the whole game: a lost life is not a termination here. Training on lives
is ``alf_wrappers.AtariTerminalOnLifeLossWrapper`` (discount 0 at the step a life is lost,
the game going on), so evaluation and the episode metrics always count whole games
(docs/atari.md). ``info`` carries ``lives`` and ``episode_frame_number`` (emulator frames
since the reset, no-ops and FIRE presses included).
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import alf

# Games reset with a game over during their no-op starts are reset again this many times.
_MAX_RESETS = 10


def _env_name(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None and spec.id else type(env.unwrapped).__name__


@functools.lru_cache(maxsize=16)
def area_weights(in_size: int, out_size: int) -> np.ndarray:
    """``[out_size, in_size]`` weights of area averaging along one axis: output pixel ``i``
    covers ``[i, i + 1) * in_size / out_size`` of the input and averages the input pixels
    by the length of their overlap with it (OpenCV's ``INTER_AREA`` when shrinking)."""
    scale = in_size / out_size
    weights = np.zeros((out_size, in_size), dtype=np.float32)
    for i in range(out_size):
        start, end = i * scale, (i + 1) * scale
        for j in range(int(np.floor(start)), min(int(np.ceil(end)), in_size)):
            weights[i, j] = (min(end, j + 1) - max(start, j)) / scale
    return weights


@functools.lru_cache(maxsize=16)
def _area_taps(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``area_weights`` as ``[out_size, K]`` input indices and weights (K: the most input
    pixels an output pixel overlaps; padding has weight 0)."""
    weights = area_weights(in_size, out_size)
    taps = int((weights > 0).sum(axis=1).max())
    index = np.zeros((out_size, taps), dtype=np.int64)
    tap_weights = np.zeros((out_size, taps), dtype=np.float32)
    for i, row in enumerate(weights):
        (nonzero,) = np.nonzero(row)
        index[i, : len(nonzero)] = nonzero
        index[i, len(nonzero) :] = nonzero[-1]
        tap_weights[i, : len(nonzero)] = row[nonzero]
    return index, tap_weights


def resize_screen(screen: np.ndarray, size: int) -> np.ndarray:
    """Resize a ``uint8`` ``[H, W]`` or ``[H, W, 3]`` screen to ``[size, size, C]`` by area
    averaging (``area_weights`` along each axis), rounded to the nearest ``uint8``.

    Each output pixel reads its few input pixels directly (about 60 us for 210x160 → 84x84,
    30 times less than the dense matrix products)."""
    row_index, row_weights = _area_taps(screen.shape[0], size)
    col_index, col_weights = _area_taps(screen.shape[1], size)
    image = screen.astype(np.float32)
    if image.ndim == 2:
        image = image[:, :, None]
    rows = (image[row_index] * row_weights[:, :, None, None]).sum(axis=1)
    resized = (rows[:, col_index] * col_weights[None, :, :, None]).sum(axis=2)
    return np.rint(resized).clip(0, 255).astype(np.uint8)


@alf.configurable
class DMAtariPreprocessing(gym.Wrapper):
    """Atari preprocessing: frame skip with max-pooling, 84x84 gray, no-op starts, FIRE.

    See the module docstring for what it does and why.

    Args:
        env: an ALE env (``env.unwrapped.ale``) made with ``frameskip=1``.
        frame_skip: emulator frames per agent step (>= 1).
        noop_max: no-op starts play ``[1, noop_max]`` NOOPs after ``reset`` (0: none).
        screen_size: side of the square observation (>= 1).
        gray_scale: one gray channel (ALE's grayscale) instead of RGB.
        fire_on_reset: press FIRE after ``reset`` (only in games whose action 1 is FIRE).
        fire_on_life_loss: press FIRE after a lost life (only in such games).
    """

    def __init__(
        self,
        env: gym.Env,
        frame_skip: int = 4,
        noop_max: int = 30,
        screen_size: int = 84,
        gray_scale: bool = True,
        fire_on_reset: bool = True,
        fire_on_life_loss: bool = True,
    ):
        super().__init__(env)
        name = _env_name(env)
        limits = (("frame_skip", frame_skip, 1), ("noop_max", noop_max, 0))
        for arg, value, low in limits + (("screen_size", screen_size, 1),):
            if int(value) < low:
                raise ValueError(
                    f"DMAtariPreprocessing({name}): {arg} must be >= {low}, got {value}"
                )
        self._ale = getattr(env.unwrapped, "ale", None)
        if self._ale is None:
            raise ValueError(
                f"DMAtariPreprocessing needs an Atari (ale-py) env, got {name}: it has no ALE"
            )
        meanings = env.unwrapped.get_action_meanings()
        if meanings[0] != "NOOP":
            raise ValueError(f"DMAtariPreprocessing({name}): action 0 must be NOOP, got {meanings}")
        game_fires = len(meanings) >= 3 and meanings[1] == "FIRE"
        self._fire_on_reset = bool(fire_on_reset) and game_fires
        self._fire_on_life_loss = bool(fire_on_life_loss) and game_fires
        self._frame_skip = int(frame_skip)
        self._noop_max = int(noop_max)
        self._screen_size = int(screen_size)
        self._gray_scale = bool(gray_scale)
        height, width = env.observation_space.shape[:2]
        shape = (height, width) if gray_scale else (height, width, 3)
        self._screens = np.zeros((2, *shape), dtype=np.uint8)
        channels = 1 if gray_scale else 3
        self.observation_space = spaces.Box(
            0, 255, (self._screen_size, self._screen_size, channels), dtype=np.uint8
        )
        self._lives = 0

    @property
    def needs_fire(self) -> bool:
        """Whether the game's action 1 is FIRE (so FIRE is pressed when configured)."""
        return self._fire_on_reset or self._fire_on_life_loss

    # -- internals ---------------------------------------------------------------

    def _grab(self, out: np.ndarray) -> np.ndarray:
        if self._gray_scale:
            self._ale.getScreenGrayscale(out)
        else:
            self._ale.getScreenRGB(out)
        return out

    def _info(self, info: dict) -> dict:
        return {
            "lives": int(self._ale.lives()),
            "episode_frame_number": int(info.get("episode_frame_number", 0)),
        }

    def _press_fire(self):
        """FIRE then action 2 (as OpenAI baselines); returns reward, terminated, truncated, info."""
        total, terminated, truncated, info = 0.0, False, False, {}
        for action in (1, 2):
            _, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return total, terminated, truncated, info

    def _start_game(self, info: dict):
        """No-op starts and FIRE after an env reset; returns (info, game over?)."""
        num_noops = 0
        if self._noop_max > 0:
            num_noops = int(self.env.unwrapped.np_random.integers(1, self._noop_max + 1))
        for _ in range(num_noops):
            _, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                return info, True
        if self._fire_on_reset:
            _, terminated, truncated, info = self._press_fire()
            if terminated or truncated:
                return info, True
        return info, False

    def _observation(self, pool: bool) -> np.ndarray:
        screen = self._screens[0]
        if pool:
            screen = np.maximum(self._screens[0], self._screens[1])
        return resize_screen(screen, self._screen_size)

    # -- gymnasium API -----------------------------------------------------------

    def reset(self, *, seed=None, options=None):
        _, info = self.env.reset(seed=seed, options=options)
        for _ in range(_MAX_RESETS):
            info, over = self._start_game(info)
            if not over:
                break
            _, info = self.env.reset()
        else:
            raise RuntimeError(
                f"DMAtariPreprocessing({_env_name(self.env)}): the game ended during its no-op "
                f"start {_MAX_RESETS} times in a row; lower noop_max"
            )
        self._lives = self._ale.lives()
        self._grab(self._screens[0])
        return self._observation(pool=False), self._info(info)

    def step(self, action):
        total = 0.0
        terminated = truncated = ended = life_lost = False
        info = {}
        skip = self._frame_skip
        for i in range(skip):
            _, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            lives = self._ale.lives()
            life_lost, self._lives = lives < self._lives, lives
            ended = terminated or truncated or life_lost
            if ended:
                break
            if skip > 1 and i >= skip - 2:
                self._grab(self._screens[i - (skip - 2)])
        # A full skip pools the screens of its last two frames; an early end shows the last.
        pool = skip > 1 and not ended
        if not pool:
            self._grab(self._screens[0])
        if life_lost and not (terminated or truncated) and self._fire_on_life_loss:
            reward, terminated, truncated, info = self._press_fire()
            total += reward
            self._lives = self._ale.lives()
            self._grab(self._screens[0])
        return self._observation(pool), total, terminated, truncated, self._info(info)
