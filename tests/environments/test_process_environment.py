"""Tests of ``ProcessEnvironment``: protocol, data paths, errors, crashes and cleanup."""

import functools
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import time

import numpy as np
import psutil
import pytest

from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.batched_environment import BatchedEnvironment
from alf.environments.process_environment import (
    EnvironmentProcessCrashed,
    EnvironmentProcessError,
    MessageType,
    ProcessEnvironment,
)

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
BROKEN = "alf.environments.toy_envs:BrokenEnv-v0"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def worker_processes() -> list[psutil.Process]:
    """Live descendants of this process, except multiprocessing's fork server and tracker."""
    infrastructure = {
        getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None),
        getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None),
    }
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.pid not in infrastructure and child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def _counting(env_id=0, **kwargs):
    return functools.partial(suite_gym.load, COUNTING, env_id=env_id, **kwargs)


def _rows(env, actions):
    """``(step_type, discount, reward, obs, prev_action)`` of reset() and each step."""
    time_steps = [env.reset()] + [env.step(np.int64(a)) for a in actions]
    return [
        (
            int(t.step_type),
            float(t.discount),
            float(t.reward),
            float(t.observation[0]),
            int(t.prev_action),
        )
        for t in time_steps
    ]


@pytest.fixture(params=[True, False], ids=["shared_memory", "pickle"])
def flatten(request):
    return request.param


def test_discount_table_terminated(flatten):
    with ProcessEnvironment(_counting(terminate_at=2), env_id=0, flatten=flatten) as env:
        assert _rows(env, [3, 2, 1, 1]) == [
            (FIRST, 1.0, 0.0, 0.0, 0),  # reward 0 and prev_action zeros at FIRST
            (MID, 1.0, 3.0, 1.0, 3),  # reward at t is the action at t-1
            (LAST, 0.0, 2.0, 2.0, 2),  # terminated: discount 0
            (FIRST, 1.0, 0.0, 0.0, 0),  # auto reset ignores the action
            (MID, 1.0, 1.0, 1.0, 1),
        ]


def test_discount_table_truncated(flatten):
    with ProcessEnvironment(
        _counting(terminate_at=None, truncate_at=2), env_id=0, flatten=flatten
    ) as env:
        assert _rows(env, [1, 2, 3]) == [
            (FIRST, 1.0, 0.0, 0.0, 0),
            (MID, 1.0, 1.0, 1.0, 1),
            (LAST, 1.0, 2.0, 2.0, 2),  # truncated: discount stays 1
            (FIRST, 1.0, 0.0, 0.0, 0),
        ]


def test_time_step_matches_spec_and_env_id(flatten):
    with ProcessEnvironment(_counting(env_id=7), env_id=7, flatten=flatten) as env:
        spec = env.time_step_spec()
        assert not env.batched and env.batch_size == 1
        time_step = env.step(np.int64(1))  # the first step is a reset
        assert int(time_step.step_type) == FIRST
        time_step = env.step(np.int64(2))
        for value, leaf_spec in zip(
            [time_step.step_type, time_step.reward, time_step.observation, time_step.env_id],
            [spec.step_type, spec.reward, spec.observation, spec.env_id],
        ):
            assert isinstance(value, np.ndarray)
            assert value.shape == tuple(leaf_spec.shape) and value.dtype == leaf_spec.numpy_dtype
        assert int(time_step.env_id) == 7
        assert int(time_step.env_info["count"]) == 1


def test_returned_arrays_are_not_overwritten_by_later_steps():
    with ProcessEnvironment(_counting(terminate_at=None)) as env:
        first = env.reset()
        second = env.step(np.int64(2))
        env.step(np.int64(3))
        assert float(first.observation[0]) == 0.0 and float(second.reward) == 2.0


def test_batched_numpy_member():
    constructor = functools.partial(
        BatchedEnvironment,
        [_counting(0, terminate_at=1), _counting(1, terminate_at=3)],
        torch_output=False,
    )
    with ProcessEnvironment(constructor, env_id=range(0, 2)) as env:
        assert env.batched and env.batch_size == 2
        env.reset()
        time_step = env.step(np.array([2, 3]))
        np.testing.assert_array_equal(time_step.step_type, [LAST, MID])
        np.testing.assert_array_equal(time_step.discount, [0.0, 1.0])
        np.testing.assert_array_equal(time_step.reward, [2.0, 3.0])
        time_step = env.step(np.array([1, 1]))
        np.testing.assert_array_equal(time_step.step_type, [FIRST, MID])
        np.testing.assert_array_equal(time_step.env_id, [0, 1])


def test_action_outside_spec_is_forwarded_with_env_and_spec(flatten):
    with ProcessEnvironment(_counting(env_id=4), env_id=4, flatten=flatten) as env:
        env.reset()
        with pytest.raises(EnvironmentProcessError) as info:
            env.step(np.int64(9))
        message = str(info.value)
        assert "env_id=4" in message and "ValueError" in message
        assert "BoundedTensorSpec" in message and "maximum=3" in message
        assert "Traceback in the worker process" in message
        assert isinstance(info.value.__cause__, ValueError)
        # the worker survives a raising step
        assert float(env.step(np.int64(2)).reward) == 2.0


def test_constructor_error_reaches_caller_quickly():
    start = time.monotonic()
    with pytest.raises(EnvironmentProcessError) as info:
        ProcessEnvironment(functools.partial(suite_gym.load, BROKEN), env_id=5)
    assert time.monotonic() - start < 10
    message = str(info.value)
    assert "BrokenEnv constructor failed on purpose" in message and "env_id=5" in message
    assert "Traceback" in message and "toy_envs.py" in message
    assert not worker_processes()


def test_unknown_env_id_error_reaches_caller():
    with pytest.raises(EnvironmentProcessError, match="Unknown gymnasium environment id"):
        ProcessEnvironment(functools.partial(suite_gym.load, "NoSuchEnv-v7"))


def test_killed_worker_raises_with_env_id_and_exit_code(flatten):
    env = ProcessEnvironment(_counting(env_id=3, terminate_at=None), env_id=3, flatten=flatten)
    env.reset()
    env.step(np.int64(1))
    os.kill(env.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(EnvironmentProcessCrashed) as info:
        env.step(np.int64(1))
    assert time.monotonic() - start < 10
    assert "env_id=3" in str(info.value) and "-9" in str(info.value)
    assert "SIGKILL" in str(info.value)
    assert info.value.exitcode == -signal.SIGKILL and info.value.env_id == 3
    with pytest.raises(EnvironmentProcessCrashed):  # stays failed, without waiting
        env.step(np.int64(1))
    env.close()
    assert not worker_processes()


def test_restart_on_crash(flatten):
    env = ProcessEnvironment(
        _counting(terminate_at=None), env_id=0, flatten=flatten, restart_on_crash=True
    )
    env.reset()
    assert int(env.step(np.int64(1)).step_type) == MID
    old_pid = env.pid
    os.kill(old_pid, signal.SIGKILL)
    time_step = env.step(np.int64(1))
    assert int(time_step.step_type) == FIRST and env.pid != old_pid and env.num_restarts == 1
    time_step = env.step(np.int64(3))
    assert int(time_step.step_type) == MID and float(time_step.reward) == 3.0
    env.close()
    assert not psutil.pid_exists(old_pid) or psutil.Process(old_pid).status() == "zombie"
    assert not worker_processes()


def test_hung_worker_times_out():
    env = ProcessEnvironment(_counting(), timeout=0.5)
    env.reset()
    os.kill(env.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        with pytest.raises(EnvironmentProcessError, match="did not answer within 0.5 s"):
            env.step(np.int64(1))
        assert time.monotonic() - start < 5
    finally:
        os.kill(env.pid, signal.SIGCONT)
    # the late answer is drained before the next request
    assert int(env.step(np.int64(2)).step_type) in (MID, FIRST)
    env.close()


def test_close_is_idempotent_and_leaves_no_process():
    env = ProcessEnvironment(_counting())
    pid = env.pid
    env.reset()
    assert psutil.pid_exists(pid)
    env.close()
    env.close()
    assert not worker_processes()
    with pytest.raises(EnvironmentProcessError, match="closed"):
        env.step(np.int64(1))


def test_remote_call_and_attribute():
    with ProcessEnvironment(_counting(env_id=2, terminate_at=2)) as env:
        assert env.get_attr("env_id") == 2
        assert env.call("action_spec") == env.action_spec()
        env.seed(3)


def test_message_types_are_distinct_bytes():
    assert len({int(kind) for kind in MessageType}) == len(MessageType)
    assert all(0 < int(kind) < 256 for kind in MessageType)
