"""PPO on CartPole-v1 as a member of a population-based training (PBT) population.

``ppo_cart_pole_conf.py`` with constant values where PBT mutates (a learning rate or clip
range that follows a schedule is not one number to mutate) and a small entropy bonus (a
perturbation multiplies: 0 would stay 0). Run a population of 4 with::

    python -m alf.bin.pbt_launch --conf alf/examples/pbt_ppo_cart_pole_conf.py \\
        --workspace runs/pbt_cart_pole --num_policies 4 --max_parallel 2

Every 10,000 env steps each member publishes its weights and objective (the training
AverageReturn) to the workspace; from 20,000 env steps on, the worst quarter copies one of
the best and mutates the four values below (``alf.pbt.member``).
"""

import alf
from alf.optimizers import Adam

alf.import_config("ppo_cart_pole_conf.py")

alf.config(
    "PPOLoss",
    entropy_regularization=1e-3,
    importance_ratio_clipping=0.2,
)
alf.config("PPOAlgorithm", optimizer=Adam(lr=1e-3, eps=1e-5, gradient_clipping=0.5))
alf.config("TrainerConfig", num_env_steps=100_000)
alf.config(
    "PBTConfig",
    interval_steps=10_000,
    start_after=10_000,
    initial_delay=20_000,
    replace_fraction_worst=0.25,
    mutation={
        "Adam.lr": {"kind": "perturb", "min": 1e-5, "max": 1e-2},
        "PPOLoss.entropy_regularization": {"kind": "perturb", "min": 1e-5, "max": 0.05},
        "PPOLoss.importance_ratio_clipping": {"kind": "perturb", "min": 0.05, "max": 0.5},
        "PPOLoss.gamma": {"kind": "discount", "min": 0.9, "max": 0.999},
    },
)
