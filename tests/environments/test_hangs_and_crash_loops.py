"""Hung workers cost one timeout together, closing them is bounded in total, and a worker
that dies on every step exhausts ``restart_on_crash``'s budget instead of looping."""

import functools
import time

import pytest
import torch

from alf.environments import suite_gym
from alf.environments.process_protocol import EnvironmentProcessCrashed, EnvironmentProcessError
from alf.environments.utils import create_environment
from tests.environments.faulty_envs import DieAt, HangAt


def _env(wrapper, num_envs, **kwargs):
    load = functools.partial(suite_gym.load, gym_env_wrappers=(wrapper,))
    return create_environment("CartPole-v1", load, num_envs, seed=0, **kwargs)


def test_hung_workers_cost_one_timeout_and_close_is_bounded():
    env = _env(functools.partial(HangAt, at=3), 4, step_timeout=2.0)
    action = torch.zeros(4, dtype=torch.int64)
    try:
        env.reset()
        with pytest.raises(EnvironmentProcessError, match=r"did not answer within 2 s"):
            for _ in range(5):  # all 4 hang together in their 3rd step at most
                start = time.monotonic()
                env.step(action)
        waited = time.monotonic() - start
    finally:
        start = time.monotonic()
        env.close()
        closing = time.monotonic() - start
    assert waited < 6  # one after the other they would take 4 x 2 s
    assert closing < 15  # one after the other: 4 x (5 s grace + terminate)


def test_a_worker_dying_on_every_step_exhausts_the_restart_budget():
    env = _env(
        functools.partial(DieAt, at=2), 2, restart_on_crash=True, max_restarts=3, restart_window=60
    )
    action = torch.zeros(2, dtype=torch.int64)
    try:
        env.reset()
        with pytest.raises(EnvironmentProcessCrashed) as crashed:
            for _ in range(20):  # each worker dies on its 2nd step: a restart every 2 steps
                env.step(action)
    finally:
        env.close()
    message = str(crashed.value)
    assert "died with exit code 3" in message
    assert "it crashed 4 times within 60 s, more than restart_on_crash allows" in message
    assert "(max_restarts=3 per restart_window)" in message
