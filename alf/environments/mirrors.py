"""Left/right mirror maps of standard environments, for ``MirrorWrapper`` and the mirror loss.

See ``alf.utils.mirror`` for the representation (a permutation plus signs) and
Abdolhosseini et al. 2019, "On Learning Symmetric Locomotion", for the loss.

``WALKER2D_V5_MIRROR``: Gymnasium's ``Walker2d-v5`` (default
``exclude_current_positions_from_observation=True``) is a planar walker: every
joint rotates about the same axis (y), so reflecting the body through its sagittal
plane swaps the right and left legs and changes no sign. Torso terms map to
themselves. Observation (17) = ``qpos[1:]`` (8) then ``qvel`` (9):

| obs | entry                  | mirror | obs | entry                      | mirror |
|-----|------------------------|--------|-----|----------------------------|--------|
| 0   | rootz (torso height)   | 0      | 8   | rootx velocity             | 8      |
| 1   | rooty (torso angle)    | 1      | 9   | rootz velocity             | 9      |
| 2   | thigh_joint angle      | 5      | 10  | rooty angular velocity     | 10     |
| 3   | leg_joint angle        | 6      | 11  | thigh_joint velocity       | 14     |
| 4   | foot_joint angle       | 7      | 12  | leg_joint velocity         | 15     |
| 5   | thigh_left_joint angle | 2      | 13  | foot_joint velocity        | 16     |
| 6   | leg_left_joint angle   | 3      | 14  | thigh_left_joint velocity  | 11     |
| 7   | foot_left_joint angle  | 4      | 15  | leg_left_joint velocity    | 12     |
|     |                        |        | 16  | foot_left_joint velocity   | 13     |

("mirror": the entry the mirrored observation reads there; all signs +1.)

Action (6): torques of thigh, leg, foot (right: 0-2), then thigh_left, leg_left,
foot_left (3-5); mirrored as ``[3, 4, 5, 0, 1, 2]``.

``tests/environments/test_mirrors.py`` checks the map against the MuJoCo model's joint
names, the observation layout against ``qpos``/``qvel``, and that the left and right
legs have the same masses, geoms, friction, joint ranges and gears.
"""

from __future__ import annotations

from alf.utils.mirror import Mirror

_WALKER2D_LEG_SWAP = [3, 4, 5, 0, 1, 2]  # (thigh, leg, foot) right <-> left

WALKER2D_V5_MIRROR = Mirror(
    observation_indices=[0, 1]
    + [2 + i for i in _WALKER2D_LEG_SWAP]
    + [8, 9, 10]
    + [11 + i for i in _WALKER2D_LEG_SWAP],
    action_indices=_WALKER2D_LEG_SWAP,
    name="Walker2d-v5",
)
