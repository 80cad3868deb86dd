"""OAC (optimistic actor-critic) on MuJoCo HalfCheetah-v5 (needs ``pip install -e '.[mujoco]'``).

Ciosek et al. 2019's MuJoCo settings: SAC with Stable-Baselines3's hyperparameters
(``sac_sb3_conf.py``: 256x256 ReLU networks, Adam lr 3e-4, batch 256, gamma 0.99, tau
0.005, replay buffer 1e6, one gradient step per env step, α tuned towards -dim(A))
exploring with the optimistic shift of ``OacAlgorithm``: β_UB = 4.66 and δ = 23.53 (the
paper's table), i.e. ``explore_delta = sqrt(2 δ) = 6.86``. As in ``sac_halfcheetah_conf.py``,
10,000 uniformly random steps first, torch's default ``nn.Linear`` init; 1e6 env steps.
(ALF's own ``oac_halfcheetah_conf.py`` runs too: explore_delta 6 and ALF's ``sac_conf``.)
"""

import alf
from alf.algorithms.oac_algorithm import OacAlgorithm

alf.import_config("sac_halfcheetah_conf.py")

alf.config(
    "OacAlgorithm",
    explore=True,
    explore_delta=(2 * 23.53) ** 0.5,
    beta_ub=4.66,
    random_initial_collect=True,
)
alf.config("TrainerConfig", algorithm_ctor=OacAlgorithm)
