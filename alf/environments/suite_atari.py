"""Load Atari 2600 games (ALE, ``pip install 'alf[atari]'``) with the standard preprocessing.

``load('BreakoutNoFrameskip-v4')`` (or ``'ALE/Breakout-v5'``, ``'PongNoFrameskip-v4'``, ...)
makes the ALE env with ``frameskip=1`` and wraps it (``suite_gym.wrap_env``)::

    gym.make(id, frameskip=1) ─> DMAtariPreprocessing ─> gym_env_wrappers ─> ImageChannelFirst
        ─> AlfGymWrapper ─> TimeLimit(max_episode_steps) ─> [AtariTerminalOnLifeLossWrapper]
        ─> alf_env_wrappers

giving ``uint8`` observations ``[1, 84, 84]`` (``DMAtariPreprocessing``: frame skip 4 with
max-pooling of the last two frames, 84x84 gray, 1-30 no-op starts, FIRE after a reset and a
lost life). The rest of the standard setup is the conf's (``alf/examples/*_breakout_conf.py``):
``FrameStacker`` (4 frames, as ALF's Atari confs) then ``ImageScaleTransformer`` to ``[0, 1]``
and ``RewardClipping`` to ``[-1, 1]``, all data transformers.

Choices (docs/atari.md):

- **Time limit**: 27,000 agent steps (108,000 frames at frame skip 4), alf's ``TimeLimit``,
  a LAST with discount 1. ALE's own limit (``max_num_frames_per_episode``, 108,000 frames
  for the ids registered by ale-py, counting the no-op and FIRE frames too) stays as
  registered; it is also a time limit (``truncated``: LAST, discount 1).
- **Lost lives**: with ``terminal_on_life_loss`` (default) the step that loses a life has
  discount 0 but the game goes on (``AtariTerminalOnLifeLossWrapper``, as ALF); episodes,
  returns and evaluation are whole games. The evaluation envs get the same wrapper, which
  changes nothing they measure.
- **Sticky actions**: as the id registers them (``*NoFrameskip-v4``: none; ``ALE/*-v5``:
  ``repeat_action_probability=0.25``); pass ``repeat_action_probability`` to change it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import gymnasium as gym

import alf
from alf.environments import suite_gym
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.alf_wrappers import AtariTerminalOnLifeLossWrapper
from alf.environments.atari_preprocessing import DMAtariPreprocessing

#: 108,000 frames (30 minutes of play at 60 Hz) at frame skip 4.
DEFAULT_MAX_EPISODE_STEPS = 27_000

_ALE_ENTRY_POINT = "ale_py.env:AtariEnv"


def _check_ale_installed(environment_name: str) -> None:
    if importlib.util.find_spec("ale_py") is None:
        raise ValueError(
            f"suite_atari.load('{environment_name}') needs ale-py (Atari ROMs included): "
            "pip install 'alf[atari]'"
        )


def find_atari_spec(environment_name: str) -> gym.envs.registration.EnvSpec:
    """The gymnasium spec of an ALE id; a ``ValueError`` naming the id for anything else."""
    _check_ale_installed(environment_name)
    env_spec = suite_gym.find_env_spec(environment_name)
    if env_spec.entry_point != _ALE_ENTRY_POINT:
        raise ValueError(
            f"suite_atari.load: '{environment_name}' is not an Atari (ALE) id (its entry "
            f"point is {env_spec.entry_point!r}); load it with suite_gym.load"
        )
    return env_spec


@alf.configurable
def load(
    environment_name: str,
    env_id: int | None = None,
    discount: float = 1.0,
    max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS,
    terminal_on_life_loss: bool = True,
    gym_env_wrappers: Sequence[Callable] = (),
    alf_env_wrappers: Sequence[Callable] = (),
    render_mode: str | None = None,
    **make_kwargs,
) -> AlfEnvironment:
    """Make an Atari game as an unbatched ``AlfEnvironment`` with the standard preprocessing.

    Args:
        environment_name: an ALE id: ``'BreakoutNoFrameskip-v4'``, ``'ALE/Breakout-v5'``, ...
        env_id: id of the env (``TimeStep.env_id``); 0 when None.
        discount: discount of non-terminal steps.
        max_episode_steps: time limit in agent steps (LAST with discount 1); 0 or
            negative for none (ALE's own frame limit still applies).
        terminal_on_life_loss: discount 0 at the step a life is lost, the game going on
            (``AtariTerminalOnLifeLossWrapper``).
        gym_env_wrappers: gymnasium wrappers applied after ``DMAtariPreprocessing``
            (configure that one as ``DMAtariPreprocessing``).
        alf_env_wrappers: alf wrappers applied last.
        render_mode: gymnasium render mode (``'rgb_array'`` for ``alf.bin.play`` videos).
        **make_kwargs: keyword arguments of ``gym.make`` / ALE (``repeat_action_probability``,
            ``full_action_space``, ``mode``, ``difficulty``, ...); ``frameskip`` must be 1.

    Returns:
        The alf environment, observations ``uint8`` ``[1, 84, 84]``.

    Raises:
        ValueError: ale-py is missing, the id is unknown (close ids suggested) or not an
            Atari id, or ``frameskip`` is not 1.
    """
    env_spec = find_atari_spec(environment_name)
    frameskip = make_kwargs.pop("frameskip", 1)
    if frameskip != 1:
        raise ValueError(
            f"suite_atari.load('{environment_name}'): frameskip={frameskip!r}, but the ALE env "
            "must step single frames (configure DMAtariPreprocessing.frame_skip instead)"
        )
    if render_mode is not None:
        make_kwargs["render_mode"] = render_mode
    # max_episode_steps=-1: no gymnasium TimeLimit; alf's is added by wrap_env.
    gym_env = gym.make(env_spec, max_episode_steps=-1, frameskip=1, **make_kwargs)
    life_loss = [AtariTerminalOnLifeLossWrapper] if terminal_on_life_loss else []
    return suite_gym.wrap_env(
        gym_env,
        env_id=env_id,
        discount=discount,
        max_episode_steps=max_episode_steps,
        gym_env_wrappers=[DMAtariPreprocessing, *gym_env_wrappers],
        alf_env_wrappers=[*life_loss, *alf_env_wrappers],
        image_channel_first=True,
    )
