"""A sampler that dies is replaced and training goes on; one that dies too often stops
the run with an error naming it; the inference server does not wait for a silent one.

Env 1 (sampler 1's only env, ``tests/confs/tiny_ppo_sampler_fault_conf.py``) kills its
process on its 21st step: in the second unroll (16 steps each), mid-fragment.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from alf.data_structures import StepType
from alf.samplers import SamplerError
from tests.samplers.conftest import CONFS, build_trainer, record_unrolls, sampler_params

FAULT_CONF = os.path.join(CONFS, "tiny_ppo_sampler_fault_conf.py")


@pytest.mark.parametrize("inference", ["local", "server"])
def test_sampler_killed_mid_unroll_is_replaced_and_training_continues(inference, tmp_path):
    marker = tmp_path / "died"
    params = sampler_params(2, inference) + [
        "sampler_fault_step=21",
        f"sampler_fault_marker={str(marker)!r}",
    ]
    trainer = build_trainer(FAULT_CONF, params, tmp_path / "run")
    try:
        algorithm = trainer.algorithm
        unrolls = record_unrolls(algorithm)
        pool = algorithm.unroller.pool
        first_pid = pool.channels[1].pid
        for _ in range(4):
            assert algorithm.train_iter() == 32
        assert marker.read_text() == str(first_pid)  # it died, in the second unroll
        assert pool.num_replacements == 1 and pool.channels[1].pid != first_pid
        assert [u.time_step.step_type.shape for u in unrolls] == [(17, 2)] * 4
        # the dead sampler's fragment was discarded and acted again from a reset: its
        # rows of the second unroll start with FIRST; sampler 0's went on where its rows of
        # the first unroll ended (an unroll starts with the previous one's last step)
        first, second = unrolls[0].time_step, unrolls[1].time_step
        assert second.step_type[0, 1] == StepType.FIRST
        assert second.step_type[0, 0] == first.step_type[-1, 0]
        assert torch.equal(second.observation[0, 0], first.observation[-1, 0])
        assert second.env_id[0].tolist() == [0, 1]
        # learning went on with the new sampler: its rows count episodes and rewards
        assert int((unrolls[3].time_step.reward[:, 1] == 1).sum()) > 0
    finally:
        trainer.close()


def test_sigkilled_sampler_is_replaced(tmp_path):
    trainer = build_trainer(FAULT_CONF, sampler_params(2, "local"), tmp_path / "run")
    try:
        algorithm = trainer.algorithm
        unrolls = record_unrolls(algorithm)
        pool = algorithm.unroller.pool
        algorithm.train_iter()
        os.kill(pool.channels[0].pid, signal.SIGKILL)
        algorithm.train_iter()
        algorithm.train_iter()
        assert pool.num_replacements == 1
        assert unrolls[1].time_step.step_type[0, 0] == StepType.FIRST
        assert unrolls[2].time_step.step_type.shape == (17, 2)
    finally:
        trainer.close()


def test_sampler_dying_over_and_over_stops_the_run_naming_it(tmp_path):
    params = sampler_params(2, "server", max_restarts=2) + ["sampler_fault_step=5"]
    trainer = build_trainer(FAULT_CONF, params, tmp_path / "run")
    try:
        start = time.monotonic()
        with pytest.raises(SamplerError, match=r"sampler 1 .*SamplerConfig.max_restarts=2") as e:
            trainer.algorithm.train_iter()
        assert e.value.index == 1
        assert trainer.algorithm.unroller.pool.num_replacements == 2
        assert time.monotonic() - start < 60
    finally:
        trainer.close()


def test_server_answers_the_other_samplers_while_one_is_silent(tmp_path):
    params = sampler_params(2, "server", batch_timeout=0.05, timeout=4.0)
    trainer = build_trainer(FAULT_CONF, params, tmp_path / "run")
    try:
        algorithm = trainer.algorithm
        unrolls = record_unrolls(algorithm)
        unroller = algorithm.unroller
        algorithm.train_iter()
        silent_pid = unroller.pool.channels[1].pid
        os.kill(silent_pid, signal.SIGSTOP)
        start = time.monotonic()
        algorithm.train_iter()
        took = time.monotonic() - start
        log = [(t - start, batch) for t, batch in unroller.server.batch_log if t >= start]
        alone = [t for t, batch in log if batch == (0,)]
        # the first step of both was batched together (the server held both time steps);
        # sampler 1 never answered it, and sampler 0's other 15 steps were answered
        # without it, each after one batch_timeout, long before its silence was given up on
        assert log[0][1] == (0, 1)
        assert len(alone) == 15
        assert alone[-1] < 2.0, alone
        # sampler 1 was replaced after SamplerConfig.timeout and its fragment redone
        assert 4.0 <= took < 30.0
        assert unroller.pool.num_replacements == 1
        assert unroller.pool.channels[1].pid != silent_pid
        assert unrolls[1].time_step.step_type[0, 1] == StepType.FIRST
        assert unrolls[1].time_step.step_type.shape == (17, 2)
    finally:
        trainer.close()
