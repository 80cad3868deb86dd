"""``max_policy_lag``: off-policy learners may train on unrolls acted with older weights
while the samplers collect the next ones; unrolls older than the lag are dropped."""

from __future__ import annotations

import pytest

from alf.samplers import SamplerConfig
from tests.samplers.conftest import TINY_PPO, build_trainer, sampler_params

DQN_PARAMS = [
    "create_environment.num_parallel_environments=2",
    "TrainerConfig.unroll_length=8",
    "TrainerConfig.initial_collect_steps=8",
    "TrainerConfig.num_updates_per_train_iter=2",
    "TrainerConfig.num_iterations=8",
    "TrainerConfig.num_env_steps=0",
    "TrainerConfig.evaluate=False",
    "TrainerConfig.random_seed=3",
]


def _record_versions(algorithm) -> list:
    versions = []
    train = algorithm.learner.train

    def recording_train(unroll):
        versions.append(unroll.policy_version)
        train(unroll)

    algorithm.learner.train = recording_train
    return versions


def test_lagged_unrolls_are_trained_on_and_too_old_ones_dropped(tmp_path):
    params = sampler_params(2, "local", max_policy_lag=1) + DQN_PARAMS
    trainer = build_trainer("dqn_cart_pole_conf.py", params, tmp_path / "run")
    try:
        algorithm = trainer.algorithm
        unroller = algorithm.unroller
        versions = _record_versions(algorithm)
        for _ in range(4):
            assert algorithm.train_iter() == 16
        # the first unroll is synchronous; each later one was acted while the learner
        # trained on the one before, with the weights of one version before
        assert versions == [0, 0, 1, 2]
        assert unroller.num_dropped_unrolls == 0
        assert algorithm.replay_buffer.current_size().tolist() == [32, 32]
        # a learner two versions ahead of the unrolls being acted drops them (one per
        # sampler) and has them acted again with its newest weights
        unroller._version += 1
        assert algorithm.train_iter() == 16
        assert unroller.num_dropped_unrolls == 2
        assert versions[-1] == 5
        assert algorithm.replay_buffer.current_size().tolist() == [40, 40]
    finally:
        trainer.close()


def test_lag_zero_is_synchronous_for_off_policy(tmp_path):
    params = sampler_params(2, "local") + DQN_PARAMS
    trainer = build_trainer("dqn_cart_pole_conf.py", params, tmp_path / "run")
    try:
        versions = _record_versions(trainer.algorithm)
        for _ in range(3):
            trainer.algorithm.train_iter()
        assert versions == [0, 1, 2]
    finally:
        trainer.close()


def test_lag_needs_an_off_policy_algorithm_and_local_inference(tmp_path):
    with pytest.raises(ValueError, match=r"SamplerConfig.max_policy_lag=1 needs an off-policy"):
        build_trainer(TINY_PPO, sampler_params(1, "local", max_policy_lag=1), tmp_path / "a")
    with pytest.raises(
        ValueError, match=r"SamplerConfig.max_policy_lag > 0 needs inference='local'"
    ):
        SamplerConfig(num_samplers=2, inference="server", max_policy_lag=1)
