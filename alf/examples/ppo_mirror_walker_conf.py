"""PPO with the mirror (symmetry) loss on MuJoCo Walker2d-v5 (needs ``pip install -e '.[mujoco]'``).

Abdolhosseini, Ling, Xie, van de Panne and Yin 2019, "On Learning Symmetric
Locomotion": the loss ``mirror_loss_coeff * MSE(mu(s), Psi_a(mu(Psi_o(s))))`` on the
deterministic action ``mu`` asks the policy to treat the left leg in a mirrored state
as it treats the right leg (see ``alf/algorithms/mirror_loss.py``).

Walker2d-v5 is planar, so its mirror swaps the right and left legs with no sign flips
and keeps the torso terms (``alf.environments.mirrors.WALKER2D_V5_MIRROR``, tested
against the MuJoCo joint names in ``tests/environments/test_mirrors.py``):

| observation entries               | right leg                  | left leg                   |
|-----------------------------------|----------------------------|----------------------------|
| 0, 1 (rootz, rooty): unchanged    | 2, 3, 4: thigh, leg, foot  | 5, 6, 7: thigh, leg, foot  |
| 8, 9, 10 (root velocities): same  | 11, 12, 13: their vels     | 14, 15, 16: their vels     |
| action                            | 0, 1, 2: thigh, leg, foot  | 3, 4, 5: thigh, leg, foot  |

(right entries and left entries swap; mirrored observation = ``obs[[0, 1, 5, 6, 7, 2,
3, 4, 8, 9, 10, 14, 15, 16, 11, 12, 13]]``, mirrored action = ``act[[3, 4, 5, 0, 1,
2]]``.)

``MirrorWrapper`` declares the mirror on the env (and checks it against the spaces);
``PPOLoss`` gets the same ``Mirror``. Turn the loss off with
``--conf_param PPOLoss.mirror_loss_coeff=0``. Everything else is ``ppo_mujoco_conf.py``
(rl-baselines3-zoo's PPO MuJoCo entry: 1 env, 512 steps, minibatch 64, 20 epochs, clip
0.1, 256x256 ReLU) with zoo's Walker2d values: learning rate 5.05e-5, gamma 0.99, lambda
0.95, value coefficient 0.87, entropy 5.85e-4, grad clip 1.
``mirror_loss_coeff=1`` is our choice: it makes the mirror term comparable to the policy
loss of normalized advantages.
"""

import functools

import alf
from alf.environments import suite_gym
from alf.environments.gym_wrappers import ContinuousActionClip, MirrorWrapper
from alf.environments.mirrors import WALKER2D_V5_MIRROR
from alf.optimizers import Adam

alf.import_config("ppo_mujoco_conf.py")

alf.config(
    "create_environment",
    env_name="Walker2d-v5",
    env_load_fn=functools.partial(
        suite_gym.load,
        gym_env_wrappers=(
            ContinuousActionClip,
            functools.partial(MirrorWrapper, mirror=WALKER2D_V5_MIRROR),
        ),
    ),
)
alf.config(
    "PPOLoss",
    gamma=0.99,
    td_lambda=0.95,
    td_loss_weight=0.87,
    entropy_regularization=5.85e-4,
    mirror_loss_coeff=1.0,
    mirror=WALKER2D_V5_MIRROR,
)
alf.config("PPOAlgorithm", optimizer=Adam(lr=5.05e-5, eps=1e-5, gradient_clipping=1.0))
