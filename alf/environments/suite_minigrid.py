"""MiniGrid grid worlds (``pip install 'alf[minigrid]'``) as alf environments.

``load('MiniGrid-DoorKey-5x5-v0')`` makes a MiniGrid task (any id the ``minigrid`` package
registers: ``MiniGrid-Empty-*``, ``-DoorKey-*``, ``-MultiRoom-*``, ``-KeyCorridor*``,
``BabyAI-*``...) and wraps it::

    gym.make ─> [FullyObsWrapper] ─> observation (one-hot symbolic | RGB) ─> MiniGridSuccess
        ─> [FirstActions(num_actions)] ─> gym_env_wrappers ─> [ImageChannelFirst]
        ─> AlfGymWrapper ─> alf_env_wrappers

These are sparse-reward, hard-exploration tasks that step fast on a CPU (no physics, no
rendering for the symbolic observations).

Observations (``observation=``); the mission string is dropped (every task of one id has
one fixed mission, or a family an agent cannot read without a language encoder):

- ``'symbolic'`` (default): the agent's egocentric 7x7 view (MiniGrid's ``(object, colour,
  state)`` index triple per cell, the agent at the bottom middle facing up, walls and
  closed doors hiding what is behind them) one-hot encoded per cell, flattened, and
  followed by the one-hot of the agent's direction: one float32 vector of
  ``7 * 7 * 21 + 4 = 1033`` zeros and ones. Each cell's 21 slots are its object (11:
  unseen, empty, wall, floor, door, key, ball, box, goal, lava, agent), its colour (6) and
  its state (4: open, closed, locked; in the full view, the agent cell's state is the
  agent's direction 0..3). A flat vector is what an ``EncodingNetwork`` /
  ``ActorDistributionNetwork`` with ``fc_layer_params`` takes without a preprocessing
  combiner, and one-hot slots suit an MLP (and RND's random target network) better than
  the raw indices;
- ``'fully_observable'``: the same encoding of the whole ``width x height`` grid
  (MiniGrid's ``FullyObsWrapper``: the agent is the cell ``(agent, red, direction)``), plus
  the direction one-hot: ``width * height * 21 + 4`` floats (529 for a 5x5 grid, 1348
  for 8x8);
- ``'image'``: the egocentric view rendered as RGB (``RGBImgPartialObsWrapper``), uint8
  ``[3, 7 * tile_size, 7 * tile_size]`` (``[3, 56, 56]`` for the default ``tile_size=8``),
  channels first as alf's Atari and dm_control pixel observations; the direction is
  dropped (the view is already egocentric);
- ``'fully_observable_image'``: the whole grid rendered with the agent drawn in it and its
  7x7 view shaded lighter (``RGBImgObsWrapper`` with MiniGrid's ``highlight=True``), uint8
  ``[3, height * tile_size, width * tile_size]``.

Actions: MiniGrid's ``Discrete(7)`` (0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle,
6 done), kept whole by default. ``num_actions=n`` keeps the first ``n`` of them, shrinking
the space an exploring agent searches: 3 (left, right, forward) for the ``Empty`` rooms,
6 for the tasks with doors (``DoorKey`` picks up a key and toggles the locked door,
``MultiRoom`` toggles closed doors open).

Rewards, episodes and discounts (docs/design.md's table). MiniGrid pays
``1 - 0.9 * step_count / max_steps`` when the agent steps onto the goal, 0 otherwise. Reaching
the goal (or stepping into lava) terminates the episode: a LAST with discount 0. MiniGrid
truncates its episodes itself after ``max_steps`` steps (e.g. ``10 * size**2`` for DoorKey,
``4 * size**2`` for Empty): a LAST with discount ``discount`` (1 by default), so values
bootstrap. ``max_episode_steps`` replaces the task's ``max_steps`` (the truncation and the
reward formula use the same number). ``env_info['success']`` is 1 at the step that reaches
the goal (a termination with a positive reward), else 0; the evaluation metrics average it
over episodes at their LAST.

Seeding: ``env.seed(s)`` (``create_environment(seed=...)``) makes the next ``reset`` regenerate
the grid from ``s``: same seed, same layouts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import alf
from alf.environments import suite_gym
from alf.environments.alf_environment import AlfEnvironment

_INSTALL_HINT = "pip install 'alf[minigrid]'"

#: the observations ``load`` offers (see the module doc)
OBSERVATIONS = ("symbolic", "fully_observable", "image", "fully_observable_image")

#: the one-hot slots of one cell: objects, colours, states (MiniGrid's index tables)
NUM_OBJECTS, NUM_COLORS, NUM_STATES = 11, 6, 4
CELL_SLOTS = NUM_OBJECTS + NUM_COLORS + NUM_STATES
NUM_DIRECTIONS = 4
#: MiniGrid's full action set
NUM_MINIGRID_ACTIONS = 7


def is_available() -> bool:
    """Whether the ``minigrid`` package is installed."""
    return importlib.util.find_spec("minigrid") is not None


def _import_minigrid():
    """``minigrid`` imported (registering its ids); a one-line ``ValueError`` when missing."""
    if not is_available():
        raise ValueError(f"suite_minigrid needs the minigrid package: {_INSTALL_HINT}")
    import minigrid

    return minigrid


class OneHotSymbolicObservation(gym.ObservationWrapper):
    """MiniGrid's ``{'image': [W, H, 3] indices, 'direction': d}`` → one flat float32 vector.

    Every cell's ``(object, colour, state)`` triple becomes ``CELL_SLOTS`` (21) zeros and
    ones (one per part), cells in MiniGrid's ``(x, y)`` order; the direction's one-hot (4)
    follows. See the module doc.

    Args:
        env: a MiniGrid env (or one under ``FullyObsWrapper``).
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        width, height, parts = env.observation_space["image"].shape
        if parts != 3:
            raise ValueError(f"OneHotSymbolicObservation: expected [W, H, 3] cells, got {parts}")
        self._cells = width * height
        self._offsets = np.array([0, NUM_OBJECTS, NUM_OBJECTS + NUM_COLORS], np.int64)
        self._highest = np.array([NUM_OBJECTS, NUM_COLORS, NUM_STATES], np.int64) - 1
        size = self._cells * CELL_SLOTS + NUM_DIRECTIONS
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)

    def observation(self, observation) -> np.ndarray:
        cells = np.asarray(observation["image"], np.int64).reshape(self._cells, 3)
        slots = np.minimum(cells, self._highest) + self._offsets
        flat = np.zeros(self._cells * CELL_SLOTS + NUM_DIRECTIONS, np.float32)
        rows = np.arange(self._cells, dtype=np.int64)[:, None] * CELL_SLOTS
        flat[(rows + slots).reshape(-1)] = 1.0
        flat[self._cells * CELL_SLOTS + int(observation["direction"]) % NUM_DIRECTIONS] = 1.0
        return flat


class ImageOnly(gym.ObservationWrapper):
    """A MiniGrid dict observation → its ``'image'`` array (the RGB frame)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = env.observation_space["image"]

    def observation(self, observation) -> np.ndarray:
        return observation["image"]


class MiniGridSuccess(gym.Wrapper):
    """Report ``info['success']``: 1.0 at a step that terminates with a positive reward (the
    goal reached), else 0.0 (also at reset)."""

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return observation, {**info, "success": 0.0}

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        success = float(bool(terminated) and reward > 0)
        return observation, reward, terminated, truncated, {**info, "success": success}


class FirstActions(gym.Wrapper):
    """Keep the first ``num_actions`` actions of a ``Discrete`` action space (same indices).

    Args:
        env: an env with a ``Discrete`` action space starting at 0.
        num_actions: how many actions to keep (1 .. the env's number).
    """

    def __init__(self, env: gym.Env, num_actions: int):
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, spaces.Discrete) or int(space.start) != 0:
            raise ValueError(f"FirstActions needs a Discrete space from 0, got {space}")
        if not 1 <= num_actions <= int(space.n):
            raise ValueError(f"num_actions must be in [1, {int(space.n)}], got {num_actions}")
        self.action_space = spaces.Discrete(int(num_actions))

    def step(self, action):
        if not self.action_space.contains(int(action)):
            raise ValueError(f"action {action} is outside {self.action_space}")
        return self.env.step(action)


def _check_arguments(environment_name, observation, max_episode_steps, num_actions, tile_size):
    if not isinstance(environment_name, str) or not environment_name:
        raise ValueError(
            f"suite_minigrid: environment_name must be an id, got {environment_name!r}"
        )
    if observation not in OBSERVATIONS:
        raise ValueError(
            f"suite_minigrid: observation must be one of {OBSERVATIONS}, got {observation!r}"
        )
    if max_episode_steps is not None and int(max_episode_steps) < 1:
        raise ValueError(
            "suite_minigrid: max_episode_steps must be None (the task's max_steps) or >= 1, "
            f"got {max_episode_steps} (MiniGrid's reward needs a limit)"
        )
    if num_actions is not None and not 1 <= int(num_actions) <= NUM_MINIGRID_ACTIONS:
        raise ValueError(
            f"suite_minigrid: num_actions must be None or in [1, {NUM_MINIGRID_ACTIONS}], "
            f"got {num_actions}"
        )
    if int(tile_size) < 1:
        raise ValueError(f"suite_minigrid: tile_size must be >= 1, got {tile_size}")


def _observation_wrappers(observation: str, tile_size: int) -> list[Callable]:
    """The gymnasium wrappers turning MiniGrid's dict observation into ``observation``."""
    from minigrid.wrappers import FullyObsWrapper, RGBImgObsWrapper, RGBImgPartialObsWrapper

    if observation == "symbolic":
        return [OneHotSymbolicObservation]
    if observation == "fully_observable":
        return [FullyObsWrapper, OneHotSymbolicObservation]
    if observation == "image":
        return [lambda env: RGBImgPartialObsWrapper(env, tile_size=tile_size), ImageOnly]
    return [lambda env: RGBImgObsWrapper(env, tile_size=tile_size), ImageOnly]


@alf.configurable
def load(
    environment_name: str = "MiniGrid-DoorKey-5x5-v0",
    env_id: int | None = None,
    discount: float = 1.0,
    max_episode_steps: int | None = None,
    gym_env_wrappers: Sequence[Callable] = (),
    alf_env_wrappers: Sequence[Callable] = (),
    observation: str = "symbolic",
    tile_size: int = 8,
    num_actions: int | None = None,
    render_mode: str | None = None,
    **make_kwargs,
) -> AlfEnvironment:
    """Make a MiniGrid task as an unbatched ``AlfEnvironment`` (see the module doc).

    Args:
        environment_name: a MiniGrid id (``'MiniGrid-DoorKey-5x5-v0'``, ...).
        env_id: id of the env (``TimeStep.env_id``); 0 when None.
        discount: discount of MID steps and of time-limit LASTs (a reached goal: 0).
        max_episode_steps: None: the task's own ``max_steps``; >= 1: this many steps (also
            the ``max_steps`` of the reward ``1 - 0.9 * step_count / max_steps``).
        gym_env_wrappers: gymnasium wrappers applied in order after alf's observation and
            action wrappers.
        alf_env_wrappers: alf wrappers applied in order after ``AlfGymWrapper``.
        observation: ``'symbolic'`` (egocentric view, one-hot, flat float32),
            ``'fully_observable'`` (the whole grid, same encoding), ``'image'`` (egocentric
            RGB ``[3, 7 * tile_size, 7 * tile_size]`` uint8) or ``'fully_observable_image'``.
        tile_size: pixels per grid cell of the image observations.
        num_actions: keep MiniGrid's first ``num_actions`` actions (3: left, right,
            forward); None: all 7.
        render_mode: None or ``'rgb_array'`` (``alf.bin.play`` videos).
        **make_kwargs: keyword arguments of the task's constructor (``size``, ...).

    Returns:
        The alf environment.

    Raises:
        ValueError: minigrid is missing, the id is unknown, or an argument is out of range.
    """
    _import_minigrid()
    _check_arguments(environment_name, observation, max_episode_steps, num_actions, tile_size)
    env_spec = suite_gym.find_env_spec(environment_name)
    if render_mode is not None:
        make_kwargs["render_mode"] = render_mode
    env = gym.make(env_spec, max_episode_steps=-1, disable_env_checker=True, **make_kwargs)
    if max_episode_steps is not None:
        env.unwrapped.max_steps = int(max_episode_steps)
    for wrapper in _observation_wrappers(observation, int(tile_size)):
        env = wrapper(env)
    env = MiniGridSuccess(env)
    if num_actions is not None:
        env = FirstActions(env, int(num_actions))
    return suite_gym.wrap_env(
        env,
        env_id=env_id,
        discount=discount,
        max_episode_steps=None,  # MiniGrid truncates at its max_steps itself
        gym_env_wrappers=gym_env_wrappers,
        alf_env_wrappers=alf_env_wrappers,
        image_channel_first=True,
    )
