"""ALF's gym environment ids translated to gymnasium's.

ALF's confs name environments by their gym (0.15-0.21) ids; gymnasium renamed some and
dropped others. ``translate_env_id`` gives the gymnasium id for an old gym id and logs,
once per process and id, a warning naming both:

- ``RENAMED``: ids whose environment gymnasium only has under a later version
  (``Pendulum-v0`` -> ``Pendulum-v1``, ``BipedalWalker-v2`` -> ``-v3``, ...);
- MuJoCo ``-v2``/``-v3`` ids (``HalfCheetah-v2``...): gymnasium still registers them but
  they need ``mujoco-py``, which does not build against today's MuJoCo; they become
  ``-v5`` (the ``mujoco`` bindings). ``-v4`` ids are valid and kept;
- gymnasium-robotics' goal tasks under their mujoco-py ids (``ROBOTICS``): ``Fetch*-v1``
  (``-v0``..``-v3``) becomes ``-v4``, ``HandReach-v0`` ``-v3``, ``HandManipulate*-v0`` ``-v1``
  (the same tasks on the ``mujoco`` bindings, ``suite_robotics``).

The later versions are the same tasks with fixes (e.g. BipedalWalker-v3 and
LunarLander-v3 fixed reward and physics bugs; MuJoCo v5 fixed contact and observation
details), so returns are comparable but not identical. Ids gymnasium registers
(``CartPole-v0``, ``MountainCar-v0``...) are kept as they are.
"""

import logging
import re

RENAMED = {
    "Pendulum-v0": "Pendulum-v1",
    "BipedalWalker-v2": "BipedalWalker-v3",
    "BipedalWalkerHardcore-v2": "BipedalWalkerHardcore-v3",
    "LunarLander-v2": "LunarLander-v3",
    "LunarLanderContinuous-v2": "LunarLanderContinuous-v3",
    "CarRacing-v0": "CarRacing-v3",
    "CarRacing-v1": "CarRacing-v3",
    "CarRacing-v2": "CarRacing-v3",
    "FrozenLake-v0": "FrozenLake-v1",
    "FrozenLake8x8-v0": "FrozenLake8x8-v1",
    "Taxi-v2": "Taxi-v4",
    "Taxi-v3": "Taxi-v4",
    "Blackjack-v0": "Blackjack-v1",
    "CliffWalking-v0": "CliffWalking-v1",
}
"""Old gym id -> gymnasium id."""

MUJOCO = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "HumanoidStandup",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Pusher",
    "Reacher",
    "Swimmer",
    "Walker2d",
)
"""gymnasium's MuJoCo environments (their ``-v2``/``-v3`` ids become ``-v5``)."""

_MUJOCO_OLD = re.compile(r"(?P<name>" + "|".join(MUJOCO) + r")-v[23]")

ROBOTICS = (
    (re.compile(r"(?P<name>Fetch(?:Reach|Push|Slide|PickAndPlace)(?:Dense)?)-v[0-3]"), "v4"),
    (re.compile(r"(?P<name>HandReach(?:Dense)?)-v[0-2]"), "v3"),
    (re.compile(r"(?P<name>HandManipulate\w+)-v0"), "v1"),
)
"""gymnasium-robotics' mujoco-py ids (pattern) and the version of the same task on the
``mujoco`` bindings."""

_WARNED = set()


def translate_env_id(env_id: str) -> str:
    """The gymnasium id of ALF's gym id ``env_id`` (module doc); ``env_id`` itself when it
    needs no translation. A ``'module:Id'`` name is kept as it is."""
    if ":" in env_id:
        return env_id
    new_id = RENAMED.get(env_id)
    match = _MUJOCO_OLD.fullmatch(env_id)
    if match is not None:
        new_id = f"{match['name']}-v5"
    for pattern, version in ROBOTICS:
        match = pattern.fullmatch(env_id)
        if match is not None:
            new_id = f"{match['name']}-{version}"
    if new_id is None:
        return env_id
    if env_id not in _WARNED:
        _WARNED.add(env_id)
        logging.warning("%s", translation_warning(env_id, new_id))
    return new_id


def translation_warning(old_id: str, new_id: str) -> str:
    """The warning logged when ``old_id`` is translated to ``new_id``."""
    return (
        f"gym environment id '{old_id}' is not available in gymnasium; using '{new_id}' "
        "(the same task with gymnasium's fixes: returns may differ slightly)"
    )
