"""Load gymnasium environments as alf environments.

``load('CartPole-v1')`` makes the gymnasium env, applies the gym wrappers,
adapts it with ``AlfGymWrapper``, adds alf's ``TimeLimit`` and the alf wrappers:

    gym.make ─> gym_env_wrappers ─> [ImageChannelFirst] ─> AlfGymWrapper
             ─> TimeLimit(max_episode_steps) ─> alf_env_wrappers

Time limits follow ALF: ``max_episode_steps=None`` uses the limit registered in
the gymnasium spec, a positive value overrides it, and 0 or a negative value
means no limit. The limit is always alf's ``TimeLimit`` (gymnasium's own
``TimeLimit`` is not applied), so a time limit gives LAST with discount 1.

Any gymnasium id works, including ``'some.module:EnvId-v0'``: gymnasium imports
the module (which registers the id) inside ``gym.make``, so the same id also
works in a freshly started subprocess. ALF's gym ids that gymnasium renamed
(``Pendulum-v0``, ``BipedalWalker-v2``, MuJoCo ``-v2``/``-v3``...) are translated with a
warning naming both ids (``gym_ids``).
Atari ids (``'BreakoutNoFrameskip-v4'``,
``'ALE/Breakout-v5'``) are registered by importing ``ale_py``, which is done when an
id is not found and ale-py is installed (``suite_atari`` loads them preprocessed).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence

import gymnasium as gym

import alf
from alf.environments import alf_wrappers, gym_ids, gym_wrappers
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.alf_gym_wrapper import AlfGymWrapper


def _import_env_module(environment_name: str) -> str:
    """Import the ``module`` of ``'module:EnvId'`` and return ``EnvId``."""
    if ":" not in environment_name:
        return environment_name
    module, _, env_name = environment_name.partition(":")
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise ValueError(
            f"Cannot load environment '{environment_name}': importing module '{module}' "
            f"(which should register '{env_name}') failed: {e}"
        ) from e
    return env_name


def _register_ale_envs() -> bool:
    """Import ``ale_py`` (registering the Atari ids) if installed; whether it was imported."""
    if "ale_py" in sys.modules or importlib.util.find_spec("ale_py") is None:
        return False
    importlib.import_module("ale_py")
    return True


def _latest_version_id(env_name: str) -> str | None:
    """``'Name-vN'`` with the highest registered N for an unversioned ``'Name'``."""
    ns, name, version = gym.envs.registration.parse_env_id(env_name)
    if version is not None:
        return None
    latest = gym.envs.registration.find_highest_version(ns, name)
    if latest is None:
        return None
    return gym.envs.registration.get_env_id(ns, name, latest)


def _with_module(env_id: str, environment_name: str) -> str:
    """``'module:env_id'`` if ``env_id`` comes from the module named in ``environment_name``."""
    module = environment_name.partition(":")[0] if ":" in environment_name else None
    entry_point = gym.envs.registry[env_id].entry_point
    if module and isinstance(entry_point, str) and entry_point.startswith(module + ":"):
        return f"{module}:{env_id}"
    return env_id


def find_env_spec(environment_name: str) -> gym.envs.registration.EnvSpec:
    """The gymnasium ``EnvSpec`` of ``environment_name`` (``'Id'`` or ``'module:Id'``).

    Raises:
        ValueError: the id is not registered; the message lists close ids.
    """
    env_name = _import_env_module(gym_ids.translate_env_id(environment_name))
    registry = gym.envs.registry
    if env_name not in registry and _register_ale_envs():
        registry = gym.envs.registry
    if env_name not in registry:
        env_name = _latest_version_id(env_name) or env_name
    if env_name in registry:
        return registry[env_name]
    close = difflib.get_close_matches(env_name, list(registry.keys()), n=3, cutoff=0.6)
    close = [_with_module(c, environment_name) for c in close]
    hint = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(
        f"Unknown gymnasium environment id '{environment_name}'.{hint} "
        "(A custom env can be given as 'module.path:EnvId' to import its registering module.)"
    )


def _resolve_time_limit(max_episode_steps: int | None, env_spec) -> int:
    """ALF's rule: None → the spec's limit; ≤ 0 → no limit (returned as 0)."""
    if max_episode_steps is None:
        max_episode_steps = env_spec.max_episode_steps or 0
    return max(int(max_episode_steps), 0)


@alf.configurable
def load(
    environment_name: str,
    env_id: int | None = None,
    discount: float = 1.0,
    max_episode_steps: int | None = None,
    gym_env_wrappers: Sequence[Callable] = (),
    alf_env_wrappers: Sequence[Callable] = (),
    image_channel_first: bool = True,
    render_mode: str | None = None,
    **make_kwargs,
) -> AlfEnvironment:
    """Make a gymnasium env and wrap it as an unbatched ``AlfEnvironment``.

    Args:
        environment_name: a registered gymnasium id, or ``'module:EnvId'``.
        env_id: id of the env (``TimeStep.env_id``); 0 when None.
        discount: discount of non-terminal steps (see ``AlfGymWrapper``).
        max_episode_steps: None: the gymnasium spec's limit; > 0: this limit;
            0 or negative: no limit. Implemented by ``alf_wrappers.TimeLimit``.
        gym_env_wrappers: callables ``gym_env -> gym_env`` applied in order.
        alf_env_wrappers: callables ``alf_env -> alf_env`` applied in order after
            the time limit.
        image_channel_first: transpose ``[H, W, C]`` image observations (3-D ``Box``
            spaces) to ``[C, H, W]``, the layout alf's conv networks take (True, as in ALF;
            other observations are left as they are).
        render_mode: gymnasium render mode (``'rgb_array'`` to use ``render()``).
        **make_kwargs: extra keyword arguments of ``gym.make`` / the env constructor.

    Returns:
        The alf environment.

    Raises:
        ValueError: unknown environment id (with close registered ids suggested).
    """
    env_spec = find_env_spec(environment_name)
    if render_mode is not None:
        make_kwargs["render_mode"] = render_mode
    # max_episode_steps=-1 tells gym.make not to add its TimeLimit; alf's is added below.
    gym_env = gym.make(env_spec, max_episode_steps=-1, **make_kwargs)
    return wrap_env(
        gym_env,
        env_id=env_id,
        discount=discount,
        max_episode_steps=_resolve_time_limit(max_episode_steps, env_spec),
        gym_env_wrappers=gym_env_wrappers,
        alf_env_wrappers=alf_env_wrappers,
        image_channel_first=image_channel_first,
    )


@alf.configurable
def wrap_env(
    gym_env: gym.Env,
    env_id: int | None = None,
    discount: float = 1.0,
    max_episode_steps: int | None = None,
    gym_env_wrappers: Sequence[Callable] = (),
    alf_env_wrappers: Sequence[Callable] = (),
    time_limit_wrapper: Callable = alf_wrappers.TimeLimit,
    image_channel_first: bool = True,
) -> AlfEnvironment:
    """Wrap a made gymnasium env into an unbatched ``AlfEnvironment``.

    Args:
        gym_env: the gymnasium env.
        env_id: id of the env (0 when None).
        discount: discount of non-terminal steps.
        max_episode_steps: time limit applied with ``time_limit_wrapper``; None,
            0 or negative for none (unlike ``load``, None here means no limit:
            there is no spec to read it from).
        gym_env_wrappers: callables ``gym_env -> gym_env`` applied in order.
        alf_env_wrappers: callables ``alf_env -> alf_env`` applied after the time limit.
        time_limit_wrapper: ``(alf_env, duration) -> alf_env``.
        image_channel_first: transpose ``[H, W, C]`` image observations (3-D ``Box``
            spaces) to ``[C, H, W]``, the layout alf's conv networks take (True, as in ALF;
            other observations are left as they are).

    Returns:
        The alf environment.
    """
    for wrapper in gym_env_wrappers:
        gym_env = wrapper(gym_env)
    if image_channel_first:
        gym_env = gym_wrappers.ImageChannelFirst(gym_env)
    env = AlfGymWrapper(gym_env, env_id=0 if env_id is None else env_id, discount=discount)
    if max_episode_steps is not None and max_episode_steps > 0:
        env = time_limit_wrapper(env, max_episode_steps)
    for wrapper in alf_env_wrappers:
        env = wrapper(env)
    return env
