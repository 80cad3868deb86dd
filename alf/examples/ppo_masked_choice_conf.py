"""PPO on ``MaskedChoice-v0``: a policy over the legal actions only (seconds on a CPU).

The env (``alf/environments/masked_choice.py``) makes half of its 4 actions legal each step
and says which in ``observation['action_mask']``; the legal action of the highest rank pays
+1, an illegal one ends the episode with -10. PPO splits the mask off the observation (the
networks read only the ranks) and restricts its policy to the legal actions
(``alf/utils/action_mask.py``), so no action it samples or evaluates is illegal. The
optimal return is 10 (10 steps of +1); ``AverageEnvInfo/illegal`` (train and eval) is
the share of steps that took an illegal action (0).
"""

import functools

import alf
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.environments import masked_choice
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam

alf.config(
    "create_environment",
    env_name="alf.environments.masked_choice:MaskedChoice-v0",
    num_parallel_environments=8,
    nonparallel=True,
)
del masked_choice  # imported to register the id

alf.config("PPOLoss", gamma=0.9, td_lambda=0.95, normalize_advantages=True)
alf.config(
    "PPOAlgorithm",
    actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=(32,)),
    value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=(32,)),
    optimizer=Adam(lr=1e-2),
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=PPOAlgorithm,
    unroll_length=16,
    mini_batch_length=1,
    mini_batch_size=64,
    num_updates_per_train_iter=4,
    num_iterations=40,
    evaluate=True,
    eval_interval=10,
    num_eval_episodes=16,
    num_eval_environments=8,
    summary_interval=10,
    num_checkpoints=2,
)
