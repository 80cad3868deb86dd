"""The DeepMind Control Suite (``pip install 'alf[dmc]'``) as alf environments.

``load('cheetah:run')`` makes the dm_control task ``domain:task`` and wraps it as ALF does::

    dm_control suite.load ─> DMControlGymEnv ─> [FrameSkip(frame_skip)] ─> gym_env_wrappers
        ─> [ImageChannelFirst] ─> AlfGymWrapper ─> TimeLimit(max_episode_steps) ─> alf_env_wrappers

Observations (as ALF's ``DMCGYMWrapper``):

- ``from_pixels=False``: the task's observation dict (an ordered dict of arrays and scalars)
  flattened and concatenated in its order into one float32 vector (cheetah: 8 positions and
  9 velocities, 17 numbers);
- ``from_pixels=True`` (ALF's default): the ``camera_id`` camera rendered at
  ``image_size`` x ``image_size``, uint8 ``[3, H, W]``. Rendering needs OpenGL: without a
  display, ``MUJOCO_GL`` is set to EGL (or OSMesa) before dm_control is imported
  (``alf.environments.mujoco_gl``; a ``MUJOCO_GL`` set by the user is kept). Mesa renders
  on the CPU, about 60 ms a 84x84 frame: pixel tasks are slow without a GPU.

Actions: the task's bounded action spec as a float32 ``Box`` (``[-1, 1]`` for every suite task).

Discounts (the table of docs/design.md). dm_control reports a ``discount`` with every step;
its last step is a LAST with discount 1 when the episode ran out of time and with discount 0
when the task terminated it (``lqr``, when the state reaches the origin; a hand-made
``dm_env``). ``DMControlGymEnv`` maps a LAST with discount 0 to ``terminated`` (alf: LAST,
discount 0) and any other LAST to ``truncated`` (alf: LAST, discount ``discount``, 1 by
default, so values bootstrap). A MID step's dm_env discount, 1 in every suite task, is not
passed on (its alf discount is ``discount``).

Time limits follow ALF: dm_control's own limit (the task's simulated time, e.g. 20 s, 1000
control steps, for ``cheetah:run``) is switched off and alf's ``TimeLimit`` ends episodes
after ``max_episode_steps`` agent steps (1000 by default) with a LAST of discount 1.
``max_episode_steps=None`` keeps dm_control's own time limit instead (also
a LAST of discount 1); 0 means no limit at all.

Seeding: ``env.seed(s)`` reseeds the task's random state (``task.random``) at the next
reset, so the same seed gives the same initial states.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

import alf
from alf.environments import suite_gym
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.gym_wrappers import FrameSkip
from alf.environments.mujoco_gl import headless_mujoco_gl

_INSTALL_HINT = "pip install 'alf[dmc]'"

headless_mujoco_gl()  # before anything imports dm_control (see _import_suite)


def is_available() -> bool:
    """Whether dm_control is installed."""
    return importlib.util.find_spec("dm_control") is not None


def _import_suite(render: bool):
    """``dm_control.suite``, imported with a headless OpenGL backend where there is no display.

    dm_control picks its rendering backend once, at import, so the choice is made for the
    process even if its first env observes states: a pixel env made later renders too.
    """
    if not is_available():
        raise ValueError(f"suite_dmc needs dm_control: {_INSTALL_HINT}")
    if "dm_control.suite" in sys.modules:
        if render:
            _check_renderer()
        return sys.modules["dm_control.suite"]
    before = os.environ.get("MUJOCO_GL")
    backend = headless_mujoco_gl()
    try:
        from dm_control import suite
    except ImportError as e:
        if before is not None or backend is None:
            raise
        raise ImportError(
            f"suite_dmc: dm_control could not start its OpenGL backend MUJOCO_GL={backend} "
            f"(chosen because there is no display): {e}. Set MUJOCO_GL to 'osmesa', 'glfw' "
            "or, to observe states only, 'disable'"
        ) from e
    return suite


def _check_renderer() -> None:
    """A clear error for dm_control imported elsewhere first, with GLFW and no display."""
    from dm_control import _render

    if _render.BACKEND == "glfw" and not os.environ.get("DISPLAY"):
        raise ValueError(
            "suite_dmc: dm_control was imported before suite_dmc, with MUJOCO_GL unset, so it "
            "renders with GLFW, which needs a display; set MUJOCO_GL=egl (or osmesa) in the "
            "environment, or import alf.environments.suite_dmc first"
        )


def _spec_bounds(spec) -> tuple[np.ndarray, np.ndarray]:
    """Flat float32 ``(low, high)`` of a dm_env array spec (unbounded: -inf..inf)."""
    size = int(np.prod(spec.shape))
    if hasattr(spec, "minimum"):
        low = np.broadcast_to(np.asarray(spec.minimum, np.float32), spec.shape).reshape(size)
        high = np.broadcast_to(np.asarray(spec.maximum, np.float32), spec.shape).reshape(size)
        return low.copy(), high.copy()
    return np.full(size, -np.inf, np.float32), np.full(size, np.inf, np.float32)


def _box_of_specs(specs) -> spaces.Box:
    """The float32 ``Box`` of the concatenation of flattened dm_env array specs."""
    bounds = [_spec_bounds(s) for s in specs]
    low = np.concatenate([b[0] for b in bounds])
    high = np.concatenate([b[1] for b in bounds])
    return spaces.Box(low, high, dtype=np.float32)


def flatten_observation(observation) -> np.ndarray:
    """A dm_control observation dict flattened into one float32 vector, in the dict's order."""
    pieces = [np.asarray(v, np.float32).reshape(-1) for v in observation.values()]
    return np.concatenate(pieces)


class DMControlGymEnv(gym.Env):
    """A ``dm_env.Environment`` (a dm_control task) as a gymnasium env (see the module doc).

    Args:
        env: the dm_env environment.
        name: the env's name (``'domain:task'``), its ``spec.id``.
        from_pixels: observe ``camera_id``'s ``[height, width, 3]`` uint8 image instead of
            the flattened state.
        height, width: the image size (pixels and ``render()``).
        camera_id: the camera rendered.
        render_mode: None or ``'rgb_array'``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(
        self,
        env,
        name: str = "dm_env",
        from_pixels: bool = False,
        height: int = 84,
        width: int = 84,
        camera_id: int = 0,
        render_mode: str | None = None,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"DMControlGymEnv renders 'rgb_array' only, got {render_mode!r}")
        self._env = env
        self._from_pixels = bool(from_pixels)
        self._height, self._width, self._camera_id = int(height), int(width), int(camera_id)
        self.render_mode = render_mode
        self.spec = EnvSpec(id=name, entry_point=None)
        self.action_space = _box_of_specs([env.action_spec()])
        if self._from_pixels:
            shape = (self._height, self._width, 3)
            self.observation_space = spaces.Box(0, 255, shape=shape, dtype=np.uint8)
        else:
            self.observation_space = _box_of_specs(list(env.observation_spec().values()))
        self._action_shape = env.action_spec().shape
        self._action_dtype = env.action_spec().dtype

    @property
    def dm_env(self):
        """The wrapped dm_env environment."""
        return self._env

    def _observation(self, time_step) -> np.ndarray:
        if self._from_pixels:
            return self.render()
        return flatten_observation(time_step.observation)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            task = getattr(self._env, "task", None)
            random = getattr(task, "random", None)
            if isinstance(random, np.random.RandomState):
                random.seed(seed)
        time_step = self._env.reset()
        return self._observation(time_step), {}

    def step(self, action):
        action = np.asarray(action, self._action_dtype).reshape(self._action_shape)
        time_step = self._env.step(action)
        reward = float(time_step.reward or 0.0)
        terminated = bool(time_step.last() and time_step.discount == 0)
        truncated = bool(time_step.last() and not terminated)
        return self._observation(time_step), reward, terminated, truncated, {}

    def render(self):
        """The ``camera_id`` camera's ``[height, width, 3]`` uint8 frame."""
        return self._env.physics.render(
            height=self._height, width=self._width, camera_id=self._camera_id
        )

    def close(self):
        close = getattr(self._env, "close", None)
        if close is not None:
            close()


def _split_name(environment_name: str) -> tuple[str, str]:
    names = environment_name.split(":")
    if len(names) != 2 or not all(names):
        raise ValueError(
            "suite_dmc: environment_name must be 'domain_name:task_name' (e.g. 'cheetah:run'), "
            f"got {environment_name!r}"
        )
    return names[0], names[1]


def _check_task(suite, domain_name: str, task_name: str) -> None:
    """A ``ValueError`` naming close tasks if ``domain:task`` is not in the suite."""
    tasks = [f"{d}:{t}" for d, t in suite.ALL_TASKS]
    if f"{domain_name}:{task_name}" in tasks:
        return
    close = difflib.get_close_matches(f"{domain_name}:{task_name}", tasks, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"suite_dmc: unknown task '{domain_name}:{task_name}'.{hint}")


@alf.configurable
def load(
    environment_name: str = "cheetah:run",
    from_pixels: bool = True,
    image_size: int = 100,
    env_id: int | None = None,
    discount: float = 1.0,
    visualize_reward: bool = False,
    max_episode_steps: int | None = 1000,
    control_timestep: float | None = None,
    gym_env_wrappers: Sequence[Callable] = (),
    alf_env_wrappers: Sequence[Callable] = (),
    frame_skip: int = 1,
    camera_id: int = 0,
    render_mode: str | None = None,
    task_kwargs: dict | None = None,
) -> AlfEnvironment:
    """Make a DeepMind Control Suite task as an unbatched ``AlfEnvironment`` (ALF's arguments).

    Args:
        environment_name: ``'domain_name:task_name'`` (``'cheetah:run'``, ``'fish:swim'``...).
        from_pixels: observe the rendered image ``[3, image_size, image_size]`` uint8 (True,
            as ALF) or the flattened state vector (False).
        image_size: height and width of the image observations (and of ``render()``).
        env_id: id of the env (``TimeStep.env_id``); 0 when None.
        discount: discount of MID steps and of time-limit LASTs.
        visualize_reward: color the rendered frames by the reward (dm_control's option).
        max_episode_steps: alf's time limit in agent steps (1000, as ALF; dm_control's own is
            off); None: dm_control's own time limit instead; 0 or negative: no limit.
        control_timestep: seconds between two agent actions (dm_control's
            ``control_timestep``; None: the task's default). Unlike ``frame_skip`` the
            physics steps in between render nothing and give no reward.
        gym_env_wrappers: gymnasium wrappers applied in order (e.g. ALF's
            ``partial(FrameSkip, skip=2)``).
        alf_env_wrappers: alf wrappers applied after the time limit.
        frame_skip: repeat each action this many times summing the rewards (``FrameSkip``,
            applied before ``gym_env_wrappers``); 1: none.
        camera_id: the camera rendered for pixels and ``render()``.
        render_mode: None or ``'rgb_array'`` (``alf.bin.play`` videos).
        task_kwargs: more keyword arguments of the task (dm_control's ``task_kwargs``).

    Returns:
        The alf environment.

    Raises:
        ValueError: dm_control is missing, or the name is malformed or unknown (close task
            names suggested).
    """
    domain_name, task_name = _split_name(environment_name)
    if frame_skip < 1:
        raise ValueError(f"suite_dmc: frame_skip must be >= 1, got {frame_skip}")
    suite = _import_suite(render=from_pixels or render_mode is not None)
    _check_task(suite, domain_name, task_name)
    task_kwargs = dict(task_kwargs or {})
    if max_episode_steps is not None:
        task_kwargs.setdefault("time_limit", float("inf"))  # alf's TimeLimit ends episodes
    environment_kwargs = {}
    if control_timestep is not None:
        environment_kwargs["control_timestep"] = control_timestep
    try:
        dm_env = suite.load(
            domain_name,
            task_name,
            task_kwargs=task_kwargs,
            environment_kwargs=environment_kwargs or None,
            visualize_reward=visualize_reward,
        )
    except AttributeError as e:
        if "MjModel" not in str(e) and "MjData" not in str(e):
            raise
        raise RuntimeError(
            f"suite_dmc: dm_control does not match the installed mujoco ({e}); install the "
            f"pair that alf pins: {_INSTALL_HINT}"
        ) from e
    gym_env = DMControlGymEnv(
        dm_env,
        name=f"{domain_name}:{task_name}",
        from_pixels=from_pixels,
        height=image_size,
        width=image_size,
        camera_id=camera_id,
        render_mode=render_mode,
    )
    skip = [functools.partial(FrameSkip, skip=frame_skip)] if frame_skip > 1 else []
    return suite_gym.wrap_env(
        gym_env,
        env_id=env_id,
        discount=discount,
        max_episode_steps=max_episode_steps,
        gym_env_wrappers=[*skip, *gym_env_wrappers],
        alf_env_wrappers=alf_env_wrappers,
        image_channel_first=True,
    )
