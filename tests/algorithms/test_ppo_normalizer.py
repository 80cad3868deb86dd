"""PPO with a rollout-mode ObservationNormalizer: replay normalizes an unroll exactly as
rollout did, so the first update of every iteration starts at importance ratio 1."""

import functools

import pytest

from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_transformers import ObservationNormalizer, create_data_transformer
from alf.environments.utils import create_environment
from alf.optimizers import Adam
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import small_networks


@pytest.mark.parametrize("update_mode", ["rollout", "replay"])
def test_first_update_of_each_iteration_has_ratio_one(update_mode):
    seeding.set_random_seed(0)
    env = create_environment(
        env_name="CartPole-v1", num_parallel_environments=4, nonparallel=True, seed=0
    )
    config = TrainerConfig(
        unroll_length=16,
        mini_batch_length=1,
        mini_batch_size=32,
        num_updates_per_train_iter=2,
        replay_buffer_length=16,
    )
    transformer = create_data_transformer(
        [functools.partial(ObservationNormalizer, update_mode=update_mode)],
        env.observation_spec(),
    )
    alg = PPOAlgorithm(
        observation_spec=transformer.transformed_observation_spec,
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config,
        loss=PPOLoss(gamma=0.99),
        optimizer=Adam(lr=1e-2),
        **small_networks(),
    )
    alg.set_data_transformer(transformer)
    calc_loss = alg.calc_loss
    gaps = []

    def recording_calc_loss(info):
        gaps.append(float((info.log_prob - info.rollout_log_prob).detach().abs().max()))
        return calc_loss(info)

    alg.calc_loss = recording_calc_loss
    stats = alg.data_transformer.members[0].normalizer.statistics[0]
    try:
        for _ in range(4):
            first = len(gaps)
            count = int(stats.count)
            alg.train_iter()
            assert int(stats.count) > count  # the statistics moved in every iteration
            # the first minibatch of the iteration: parameters not updated yet
            assert gaps[first] < 1e-5, gaps
            assert max(gaps[first + 1 :]) > 1e-4  # later minibatches did move the policy
    finally:
        env.close()
