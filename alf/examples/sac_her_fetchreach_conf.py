"""SAC + hindsight experience replay on gymnasium-robotics' FetchReach (``pip install -e
'.[robotics]'``).

``suite_robotics.load(concat_desired_goal=False)`` keeps the goal dict (``observation``,
``achieved_goal``, ``desired_goal``) that ``HindsightExperienceTransformer`` relabels; the
reward is -1, or 0 within 0.05 of the goal, recomputed for relabeled goals by
``l2_distance_reward_fn`` at the same threshold. Episodes are the registered 50 steps (a
LAST with discount 1); ``env_info['success']`` (the goal reached at the last step) is
averaged by the evaluation as ``Metrics/AverageEnvInfo/success``.

The setup is that of ``sac_her_goal_conf.py`` (the HER paper's gamma 0.98, tau 0.05, batch
256, lr 1e-3, 80% relabeled), with ALF's Fetch networks (three hidden layers of 256) and 4
envs in worker processes.

    python -m alf.bin.train --conf alf/examples/sac_her_fetchreach_conf.py --root_dir ~/runs/fetch
"""

import functools

import torch

import alf
from alf.algorithms.sac_algorithm import SacAlgorithm, SquashedNormalActorNetwork
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_transformers import HindsightExperienceTransformer, l2_distance_reward_fn
from alf.environments import suite_robotics
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam

alf.define_config("use_her", True)

alf.config(
    "create_environment",
    env_name="FetchReach-v4",
    env_load_fn=suite_robotics.load,
    num_parallel_environments=4,
)
alf.config("suite_robotics.load", concat_desired_goal=False)

hidden = (256, 256, 256)
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
    her_proportion=0.8,
    reward_fn=functools.partial(l2_distance_reward_fn, distance_threshold=0.05),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=SacAlgorithm,
    data_transformer_ctor=[her] if alf.get_config_value("use_her") else None,
    unroll_length=1,
    mini_batch_length=2,
    mini_batch_size=256,
    num_updates_per_train_iter=1,
    replay_buffer_length=50_000,
    initial_collect_steps=200,
    num_env_steps=20_000,
    num_iterations=0,
    evaluate=True,
    eval_interval=500,
    num_eval_episodes=20,
    num_eval_environments=4,
    summary_interval=250,
    num_checkpoints=2,
)
