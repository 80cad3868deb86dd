"""gymnasium-robotics goal tasks (``pip install 'alf[robotics]'``) as alf environments.

``load('FetchReach-v4')`` (also ``FetchPush``, ``FetchSlide``, ``FetchPickAndPlace``, their
``Dense`` variants, and the Shadow hand's ``HandReach`` / ``HandManipulate*``) makes the task
and wraps it as ALF's ``suite_robotics`` does::

    gym.make ─> [concat observation + desired_goal] ─> [SuccessWrapper] ─> ObservationClipWrapper
        ─> [SparseReward] ─> gym_env_wrappers ─> AlfGymWrapper ─> TimeLimit ─> alf_env_wrappers

ALF's gym ids (``FetchReach-v1``, ``HandManipulateBlock-v0``...) name the mujoco-py versions,
which need the unbuildable ``mujoco-py``; they are translated to the same tasks on the
``mujoco`` bindings (``FetchReach-v4``...) with a warning (``alf.environments.gym_ids``).

Observations. The task's goal dict has ``observation`` (the robot's state, 10 numbers for
FetchReach, 25 for the object tasks), ``achieved_goal`` and ``desired_goal`` (3 each).

- ``concat_desired_goal=True`` (ALF's default): one float32 vector, ``observation`` then
  ``desired_goal`` (13 numbers for FetchReach), for plain agents;
- ``concat_desired_goal=False``: the dict, float32, as hindsight relabeling needs it
  (``alf.data_transformers.HindsightExperienceTransformer`` with ``l2_distance_reward_fn`` at
  the tasks' threshold, 0.05).

Every observation is clipped to ``[-200, 200]`` (OpenAI baselines' ``ObservationClipWrapper``).

Rewards and episodes. The tasks' sparse reward is -1, or 0 within 0.05 of the goal; their
episodes never terminate and are cut by alf's ``TimeLimit`` after the registered 50 steps
(``max_episode_steps=None``): a LAST with discount 1. ``sparse_reward=True`` (ALF's
``SparseReward``) adds 1 to the reward (0/1) and ends the episode when the goal is reached: a
real termination, a LAST with discount 0. ``use_success_wrapper`` (ALF) replaces the info's
``is_success`` by ``success``, 1 only at a step at or after ``since_episode_steps`` (the
time limit, so: success at the end of the episode), reported as ``env_info['success']`` and
averaged over the episodes at their LAST by the evaluation metrics.

Compatibility. gymnasium-robotics 1.4.2 compares MuJoCo's joint-type enums with numpy
integers in an order that is false under mujoco >= 3.12 (``enum == np.int32`` is False), so
every Fetch and hand task fails an assertion when it is made. ``patch_joint_type_comparisons``
(applied by ``load``) replaces the four joint accessors of ``gymnasium_robotics.utils.mujoco_utils``
with ones comparing Python ints (the fix Gymnasium-Robotics merged after its 1.4.2
release); it does nothing where the comparison works.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import alf
from alf.environments import gym_ids, suite_gym
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.mujoco_gl import headless_mujoco_gl

_INSTALL_HINT = "pip install 'alf[robotics]'"
_PREFIXES = ("Fetch", "HandManipulate", "HandReach")


def is_available() -> bool:
    """Whether gymnasium-robotics is installed."""
    return importlib.util.find_spec("gymnasium_robotics") is not None


# ----------------------------------------------------------------------------
# gymnasium-robotics 1.4.2 on mujoco >= 3.12


def _joint(model, name: str):
    import mujoco

    joint_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    assert joint_id != -1, f"Joint with name '{name}' is not part of the model!"
    return joint_id, int(model.jnt_type[joint_id])


def _qpos_size(joint_type: int) -> int:
    import mujoco

    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    return {free: 7, ball: 4}.get(joint_type, 1)


def _qvel_size(joint_type: int) -> int:
    import mujoco

    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    return {free: 6, ball: 3}.get(joint_type, 1)


def _set_joint_qpos(model, data, name, value):
    joint_id, joint_type = _joint(model, name)
    start, size = model.jnt_qposadr[joint_id], _qpos_size(joint_type)
    value = np.array(value)
    if size > 1:
        assert value.shape == (size,), f"Value has incorrect shape {name}: {value}"
    data.qpos[start : start + size] = value


def _set_joint_qvel(model, data, name, value):
    joint_id, joint_type = _joint(model, name)
    start, size = model.jnt_dofadr[joint_id], _qvel_size(joint_type)
    value = np.array(value)
    if size > 1:
        assert value.shape == (size,), f"Value has incorrect shape {name}: {value}"
    data.qvel[start : start + size] = value


def _get_joint_qpos(model, data, name):
    joint_id, joint_type = _joint(model, name)
    start = model.jnt_qposadr[joint_id]
    return data.qpos[start : start + _qpos_size(joint_type)].copy()


def _get_joint_qvel(model, data, name):
    joint_id, joint_type = _joint(model, name)
    start = model.jnt_dofadr[joint_id]
    return data.qvel[start : start + _qvel_size(joint_type)].copy()


def joint_type_comparison_broken() -> bool:
    """Whether ``mjtJoint.mjJNT_SLIDE == np.int32(mjJNT_SLIDE)`` is False (mujoco >= 3.12)."""
    import mujoco

    slide = mujoco.mjtJoint.mjJNT_SLIDE
    return not slide == np.int32(int(slide))  # noqa: SIM201 (the enum's own __eq__)


def patch_joint_type_comparisons() -> bool:
    """Make gymnasium-robotics' joint accessors compare Python ints (see the module doc).

    Returns:
        Whether the accessors were replaced (False: not needed, or already done).
    """
    from gymnasium_robotics.utils import mujoco_utils

    if getattr(mujoco_utils, "_alf_patched", False) or not joint_type_comparison_broken():
        return False
    mujoco_utils.set_joint_qpos = _set_joint_qpos
    mujoco_utils.set_joint_qvel = _set_joint_qvel
    mujoco_utils.get_joint_qpos = _get_joint_qpos
    mujoco_utils.get_joint_qvel = _get_joint_qvel
    mujoco_utils._alf_patched = True
    return True


def _import_robotics() -> None:
    """Import gymnasium-robotics (registering its ids) and patch it where needed."""
    if not is_available():
        raise ValueError(f"suite_robotics needs gymnasium-robotics: {_INSTALL_HINT}")
    headless_mujoco_gl()
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    patch_joint_type_comparisons()


# ----------------------------------------------------------------------------
# ALF's wrappers


class SparseReward(gym.Wrapper):
    """Rewards -1/0 become 0/1, and reaching the goal (reward 0) ends the episode."""

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        if reward == 0:
            terminated = True
        return observation, reward + 1, terminated, truncated, info


@alf.configurable
class SuccessWrapper(gym.Wrapper):
    """Report ``info['success']``: 1 at a step at or after ``since_episode_steps`` whose
    ``info['is_success']`` is 1, else 0 (``is_success`` is removed).

    Args:
        env: a goal env reporting ``info['is_success']``.
        since_episode_steps: the first step (counted from 1 after each reset) at which a
            success counts.
    """

    def __init__(self, env: gym.Env, since_episode_steps: int):
        super().__init__(env)
        self._since_episode_steps = int(since_episode_steps)
        self._steps = 0

    def reset(self, **kwargs):
        self._steps = 0
        observation, info = self.env.reset(**kwargs)
        info = dict(info)
        info.pop("is_success", None)
        info["success"] = 0.0
        return observation, info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        info = dict(info)
        success = float(info.pop("is_success", 0.0))
        info["success"] = float(self._steps >= self._since_episode_steps and success == 1)
        return observation, reward, terminated, truncated, info


@alf.configurable
class ObservationClipWrapper(gym.ObservationWrapper):
    """Clip every observation (or every array of a dict observation) to ``[min_v, max_v]``.

    Args:
        env: the env.
        min_v, max_v: the bounds (OpenAI baselines' -200, 200).
    """

    def __init__(self, env: gym.Env, min_v: float = -200.0, max_v: float = 200.0):
        super().__init__(env)
        self.min_v, self.max_v = float(min_v), float(max_v)

    def observation(self, observation):
        if isinstance(observation, dict):
            return {k: np.clip(v, self.min_v, self.max_v) for k, v in observation.items()}
        return np.clip(observation, self.min_v, self.max_v)


class ConcatDesiredGoal(gym.ObservationWrapper):
    """A goal dict observation → ``concat(observation, desired_goal)``, one vector."""

    KEYS = ("observation", "desired_goal")

    def __init__(self, env: gym.Env):
        super().__init__(env)
        parts = [env.observation_space[k] for k in self.KEYS]
        low = np.concatenate([p.low.reshape(-1) for p in parts])
        high = np.concatenate([p.high.reshape(-1) for p in parts])
        self.observation_space = spaces.Box(low, high, dtype=parts[0].dtype)

    def observation(self, observation):
        return np.concatenate([np.asarray(observation[k]).reshape(-1) for k in self.KEYS])


# ----------------------------------------------------------------------------


def find_robotics_spec(environment_name: str) -> gym.envs.registration.EnvSpec:
    """The spec of a goal task's id (ALF's gym ids translated); a ``ValueError`` otherwise."""
    if not environment_name.startswith(_PREFIXES):
        raise ValueError(
            f"suite_robotics only supports the Fetch and Shadow hand goal tasks, got "
            f"'{environment_name}' (load other envs with suite_gym.load)"
        )
    _import_robotics()
    return suite_gym.find_env_spec(gym_ids.translate_env_id(environment_name))


@alf.configurable
def load(
    environment_name: str,
    env_id: int | None = None,
    concat_desired_goal: bool = True,
    discount: float = 1.0,
    max_episode_steps: int | None = None,
    sparse_reward: bool = False,
    use_success_wrapper: bool = True,
    gym_env_wrappers: Sequence[Callable] = (),
    alf_env_wrappers: Sequence[Callable] = (),
    wrap_with_process: bool = False,
    render_mode: str | None = None,
    **make_kwargs,
) -> AlfEnvironment:
    """Make a gymnasium-robotics goal task as an unbatched ``AlfEnvironment`` (ALF's arguments).

    Args:
        environment_name: ``'FetchReach-v4'``, ALF's ``'FetchReach-v1'`` (translated), ...
        env_id: id of the env (``TimeStep.env_id``); 0 when None.
        concat_desired_goal: observe ``concat(observation, desired_goal)`` (True) or the goal
            dict (False, for hindsight relabeling).
        discount: discount of MID steps and of time-limit LASTs.
        max_episode_steps: None: the registered limit (50 for Fetch); > 0: this limit; 0 or
            negative: none. Also the ``SuccessWrapper``'s ``since_episode_steps``.
        sparse_reward: rewards 0/1 and the episode ends when the goal is reached (LAST with
            discount 0).
        use_success_wrapper: report ``env_info['success']`` (success at the episode's end)
            instead of ``is_success``.
        gym_env_wrappers: gymnasium wrappers applied after ALF's (e.g. ``FrameSkip``).
        alf_env_wrappers: alf wrappers applied after the time limit.
        wrap_with_process: accepted for ALF's confs; alf runs envs in processes through
            ``create_environment`` (``num_parallel_environments``, ``nonparallel=False``), so
            this must be False.
        render_mode: None or ``'rgb_array'`` (``alf.bin.play`` videos).
        **make_kwargs: keyword arguments of the task (``reward_type``, ``distance_threshold``...).

    Returns:
        The alf environment.

    Raises:
        ValueError: gymnasium-robotics is missing, the id is not a goal task or unknown, or
            ``wrap_with_process`` is set.
    """
    if wrap_with_process:
        raise ValueError(
            "suite_robotics.load: wrap_with_process is not supported; create_environment runs "
            "the envs in worker processes (nonparallel=False)"
        )
    env_spec = find_robotics_spec(environment_name)
    max_episode_steps = suite_gym._resolve_time_limit(max_episode_steps, env_spec)
    if render_mode is not None:
        make_kwargs["render_mode"] = render_mode
    # max_episode_steps=-1: no gymnasium TimeLimit; alf's is added by wrap_env.
    env = gym.make(env_spec, max_episode_steps=-1, **make_kwargs)
    if concat_desired_goal:
        env = ConcatDesiredGoal(env)
    if use_success_wrapper:
        env = SuccessWrapper(env, max_episode_steps)
    env = ObservationClipWrapper(env)
    if sparse_reward:
        env = SparseReward(env)
    return suite_gym.wrap_env(
        env,
        env_id=env_id,
        discount=discount,
        max_episode_steps=max_episode_steps,
        gym_env_wrappers=gym_env_wrappers,
        alf_env_wrappers=alf_env_wrappers,
        image_channel_first=False,
    )
