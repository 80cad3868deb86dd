"""DIAYN (Eysenbach et al. 2018) on PointMass-v0: SAC learns ``num_of_skills`` skills with no
reward but the skill discriminator's.

``alf/environments/point_mass_env.py``: a point starting at the origin of ``[-1, 1]^2``,
action = velocity in ``[-1, 1]^2`` (0.1 per step at most), 30-step episodes, reward 0.
An ``Agent`` composes SAC with a ``RandomCategoricalGoalGenerator`` (a one-hot skill
``z ~ p(z)`` uniform, drawn at each episode's start; SAC sees ``[position, z]``) and a
``DIAYNAlgorithm`` whose discriminator :math:`q(z|s)` classifies the position; SAC is
trained on :math:`\\log q(z|s_t) - \\log p(z)` alone (``extrinsic_reward_coef=0``).

    python -m alf.bin.train --conf alf/examples/diayn_point_conf.py --root_dir ~/runs/diayn
    python -m alf.examples.diayn_skills --root_dir ~/runs/diayn --png /tmp/skills.png

``alf/examples/diayn_skills.py`` plays each skill and prints the discriminator's accuracy per
skill (``benchmarks/results/diayn_point.json`` has a seeded run's). There is no return to
evaluate: ``evaluate=False``. Small networks (64x64) and lr 1e-3 keep the run to a few
minutes on one CPU core.
"""

import functools

import torch

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.diayn_algorithm import DIAYNAlgorithm, create_discrete_skill_spec
from alf.algorithms.goal_generator import RandomCategoricalGoalGenerator
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.define_config("num_of_skills", 6)
num_of_skills = alf.get_config_value("num_of_skills")

alf.config(
    "create_environment",
    env_name="alf.environments.point_mass_env:PointMass-v0",
    num_parallel_environments=4,
    nonparallel=True,
)

hidden = (64, 64)
lr = 1e-3
alf.config(
    "SacAlgorithm",
    actor_network_ctor=functools.partial(
        SquashedNormalActorNetwork, fc_layer_params=hidden, activation=torch.relu_
    ),
    critic_network_ctor=functools.partial(
        CriticNetwork, joint_fc_layer_params=hidden, activation=torch.relu_
    ),
    num_critic_replicas=2,
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.9),
    target_update_tau=0.01,
    actor_optimizer=Adam(lr=lr, name="actor_adam"),
    critic_optimizer=Adam(lr=lr, name="critic_adam"),
    alpha_optimizer=Adam(lr=lr, name="alpha_adam"),
)
alf.config("RandomCategoricalGoalGenerator", num_of_goals=num_of_skills)
alf.config(
    "DIAYNAlgorithm",
    skill_spec=create_discrete_skill_spec(num_of_skills),
    hidden_size=hidden,
    optimizer=Adam(lr=lr, name="diayn_adam"),
)
alf.config(
    "Agent",
    rl_algorithm_cls=SacAlgorithm,
    goal_generator=RandomCategoricalGoalGenerator,
    intrinsic_reward_module=DIAYNAlgorithm,
    intrinsic_reward_coef=1.0,
    extrinsic_reward_coef=0.0,
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=Agent,
    unroll_length=1,
    mini_batch_length=2,
    mini_batch_size=128,
    num_updates_per_train_iter=1,
    replay_buffer_length=20_000,
    initial_collect_steps=200,
    num_iterations=4000,
    evaluate=False,
    summary_interval=200,
    num_checkpoints=2,
)
