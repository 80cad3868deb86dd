"""The inference server's batching: ``max_batch_size`` caps the rows of one
``rollout_step``; rows keep their env's state whatever batch they are in."""

from __future__ import annotations

import torch

from alf.environments.utils import create_environment
from tests.samplers.conftest import TINY_PPO, build_trainer, record_unrolls, sampler_params


def test_max_batch_size_caps_each_batch(tmp_path):
    trainer = build_trainer(TINY_PPO, sampler_params(2, "server", max_batch_size=1), tmp_path)
    try:
        algorithm = trainer.algorithm
        unrolls = record_unrolls(algorithm)
        server = algorithm.unroller.server
        for _ in range(2):
            start = len(server.batch_log)
            assert algorithm.train_iter() == 32
            batches = [batch for _, batch in server.batch_log[start:]]
            # one sampler (1 env) per rollout_step: 16 steps of each sampler, each alone
            assert sorted(batches) == [(0,)] * 16 + [(1,)] * 16
        seed = trainer.random_seed
    finally:
        trainer.close()
    # each env got its own actions: replaying them in fresh envs seeded alike gives the
    # very time steps the samplers sent
    env = create_environment(num_parallel_environments=2, seed=seed, nonparallel=True)
    try:
        time_step = env.reset()
        for unroll in unrolls:
            assert unroll.time_step.env_id.tolist() == [[0, 1]] * 17
            for t in range(16):
                assert torch.equal(time_step.observation, unroll.time_step.observation[t])
                time_step = env.step(unroll.action[t])
            assert torch.equal(time_step.observation, unroll.time_step.observation[16])
    finally:
        env.close()
