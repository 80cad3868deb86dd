"""SAC + hindsight experience replay on PointGoal-v0 (a 2-D point reaching a goal).

``alf/environments/point_goal_env.py``: dict observation (``observation``,
``achieved_goal``, ``desired_goal``), sparse reward 0 within 0.05 of the goal and -1
otherwise, 50-step episodes, ``env_info['is_success']``. With random goals the
sparse reward is almost never 0, so plain SAC has nothing to learn from;
``HindsightExperienceTransformer`` (Andrychowicz et al. 2017, "future" strategy)
relabels 80% of the replayed transitions with goals achieved later in their episode
and recomputes the reward with the env's own rule (``l2_distance_reward_fn`` with
the same threshold).

    python -m alf.bin.train --conf alf/examples/sac_her_goal_conf.py --root_dir ~/runs/her
    python -m alf.bin.train --conf alf/examples/sac_her_goal_conf.py --root_dir ~/runs/no_her \\
        --conf_param use_her=False

``benchmarks/RESULTS.md`` ("Retired benchmarks") has the success rate with and without HER.
Hyperparameters follow the HER paper where it applies (gamma 0.98, Polyak 0.95
i.e. ``tau = 0.05``, batch 256, lr 1e-3) with SAC's automatic entropy tuning.
"""

import functools

import torch

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_transformers import HindsightExperienceTransformer, l2_distance_reward_fn
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.define_config("use_her", True)
alf.define_config("her_proportion", 0.8)

alf.config(
    "create_environment",
    env_name="alf.environments.point_goal_env:PointGoal-v0",
    num_parallel_environments=4,
    nonparallel=True,
)

hidden = (128, 128)
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
    critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=0.98),
    initial_log_alpha=-2.0,
    target_update_tau=0.05,
    target_update_period=1,
    actor_optimizer=Adam(lr=lr, name="actor_adam"),
    critic_optimizer=Adam(lr=lr, name="critic_adam"),
    alpha_optimizer=Adam(lr=lr, name="alpha_adam"),
)

her = functools.partial(
    HindsightExperienceTransformer,
    her_proportion=alf.get_config_value("her_proportion"),
    reward_fn=functools.partial(l2_distance_reward_fn, distance_threshold=0.05),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
    data_transformer_ctor=[her] if alf.get_config_value("use_her") else None,
    unroll_length=1,
    mini_batch_length=2,
    mini_batch_size=256,
    num_updates_per_train_iter=2,
    replay_buffer_length=50_000,
    initial_collect_steps=100,
    num_env_steps=20_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=1000,
    num_eval_episodes=20,
    num_eval_environments=10,
    summary_interval=250,
    num_checkpoints=2,
)
