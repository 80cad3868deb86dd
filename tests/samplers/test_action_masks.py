"""Remote samplers act with action masks as the in-process unroller does: the mask is an
observation leaf (``observation['action_mask']``), so it reaches the inference server with
the rest of the observation, and every action the server's ``rollout_step`` returns is
legal (``alf/examples/ppo_masked_choice_conf.py``, 2 process samplers, server inference)."""

from __future__ import annotations

import os

from tests.samplers.conftest import build_trainer, record_unrolls, sampler_params

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(REPO, "alf", "examples", "ppo_masked_choice_conf.py")


def test_server_inference_samples_only_legal_actions(tmp_path):
    params = sampler_params(2, "server") + ["create_environment.num_parallel_environments=4"]
    trainer = build_trainer(CONF, params, tmp_path)
    try:
        algorithm = trainer.algorithm
        unrolls = record_unrolls(algorithm)
        for _ in range(3):
            algorithm.train_iter()
    finally:
        trainer.close()
    steps = 0
    for unroll in unrolls:
        mask = unroll.time_step.observation["action_mask"].bool()  # [T, B, 4]
        legal = mask.gather(-1, unroll.action.long().unsqueeze(-1)).squeeze(-1)
        assert legal.all()
        # the learner trains on what the env did: no step was an illegal move's -10
        assert not (unroll.time_step.reward == -10).any()
        steps += legal.numel()
    # 3 iterations x (16 steps + the bootstrap row) x 4 envs (2 per sampler)
    assert steps == 3 * 17 * 4
