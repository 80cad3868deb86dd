"""A seconds-long off-policy run with prioritized replay, for replay-buffer checkpoint tests.

``ReplayProbeAlgorithm`` (random actions, a linear reward model) samples minibatches
from a never-cleared, prioritized buffer on two CountingEnvs; 6 iterations with a
checkpoint every 3. ``priority_replay_beta`` is 1, so the importance-weight exponent
stays 1 instead of being annealed over the progress ``iteration / num_iterations``: a
run stopped early by a smaller ``num_iterations`` then trains as the uninterrupted run
did, and the resume test can compare them.
"""

import alf
from tests.algorithms.test_off_policy_replay import ReplayProbeAlgorithm

alf.config(
    "create_environment",
    env_name="alf.environments.toy_envs:CountingEnv-v0",
    num_parallel_environments=2,
    nonparallel=True,
)
alf.config(
    "TrainerConfig",
    algorithm_ctor=ReplayProbeAlgorithm,
    unroll_length=4,
    mini_batch_size=3,
    mini_batch_length=2,
    num_updates_per_train_iter=2,
    replay_buffer_length=16,
    priority_replay=True,
    priority_replay_alpha=0.6,
    priority_replay_beta=1.0,
    num_env_steps=0,
    num_iterations=6,
    checkpoint_interval=3,
    evaluate=False,
    summary_interval=1,
    random_seed=1,
    progress_bar=False,
)
