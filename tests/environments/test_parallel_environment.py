"""Tests of ``ParallelAlfEnvironment``: batching, per-row auto reset, errors, Ctrl-C."""

import functools
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium
import numpy as np
import psutil
import pytest
import torch

from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.batched_environment import BatchedEnvironment
from alf.environments.parallel_environment import ParallelAlfEnvironment
from alf.environments.process_environment import (
    EnvironmentProcessCrashed,
    EnvironmentProcessError,
)

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
BROKEN = "alf.environments.toy_envs:BrokenEnv-v0"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def _counting(env_id, **kwargs):
    return functools.partial(suite_gym.load, COUNTING, env_id=env_id, **kwargs)


def _batch(*constructors):
    return functools.partial(BatchedEnvironment, list(constructors), torch_output=False)


@pytest.fixture(params=[True, False], ids=["shared_memory", "pickle"])
def flatten(request):
    return request.param


def test_per_row_auto_reset_and_discounts(flatten):
    env = ParallelAlfEnvironment(
        [_counting(0, terminate_at=2), _counting(1, terminate_at=None, truncate_at=3)],
        flatten=flatten,
    )
    try:
        assert env.batched and env.batch_size == 2
        time_step = env.reset()
        assert time_step.step_type.tolist() == [FIRST, FIRST]
        assert time_step.reward.tolist() == [0, 0] and time_step.prev_action.tolist() == [0, 0]
        assert time_step.env_id.tolist() == [0, 1]
        rows = []
        for action in ([1, 2], [3, 1], [2, 2], [1, 3], [2, 1]):
            time_step = env.step(torch.tensor(action))
            rows.append(
                (
                    time_step.step_type.tolist(),
                    time_step.discount.tolist(),
                    time_step.reward.tolist(),
                    time_step.prev_action.tolist(),
                )
            )
        assert rows == [
            ([MID, MID], [1, 1], [1, 2], [1, 2]),
            ([LAST, MID], [0, 1], [3, 1], [3, 1]),  # env 0 terminates
            ([FIRST, LAST], [1, 1], [0, 2], [0, 2]),  # only env 0 resets; env 1 truncates
            ([MID, FIRST], [1, 1], [1, 0], [1, 0]),
            ([LAST, MID], [0, 1], [2, 1], [2, 1]),
        ]
        assert time_step.observation.dtype == torch.float32
        assert time_step.observation.shape == (2, 1)
    finally:
        env.close()


def test_batched_members_are_concatenated(flatten):
    env = ParallelAlfEnvironment(
        [_batch(_counting(0), _counting(1)), _batch(_counting(2), _counting(3, terminate_at=1))],
        flatten=flatten,
        start_serially=False,
    )
    try:
        assert env.batch_size == 4
        assert env.reset().env_id.tolist() == [0, 1, 2, 3]
        time_step = env.step(torch.tensor([0, 1, 2, 3]))
        assert time_step.reward.tolist() == [0, 1, 2, 3]
        assert time_step.step_type.tolist() == [MID, MID, MID, LAST]
        assert time_step.env_info["count"].tolist() == [1, 1, 1, 1]
        time_step = env.step(torch.tensor([1, 1, 1, 1]))
        assert time_step.step_type.tolist() == [MID, MID, MID, FIRST]
    finally:
        env.close()


def test_outputs_are_fresh_tensors():
    env = ParallelAlfEnvironment([_counting(0, terminate_at=None), _counting(1)])
    try:
        first = env.reset()
        second = env.step(torch.tensor([2, 3]))
        env.step(torch.tensor([1, 1]))
        assert first.observation[:, 0].tolist() == [0, 0]
        assert second.reward.tolist() == [2, 3]
    finally:
        env.close()


def test_different_specs_are_rejected():
    with pytest.raises(ValueError, match="same time_step_spec"):
        ParallelAlfEnvironment([_counting(0), _counting(1, num_actions=3)])
    assert not worker_processes()


def test_action_errors_name_env_and_spec():
    env = ParallelAlfEnvironment([_counting(0), _counting(1)])
    try:
        env.reset()
        with pytest.raises(EnvironmentProcessError) as info:
            env.step(torch.tensor([1, 7]))
        assert "env_id=1" in str(info.value) and "maximum=3" in str(info.value)
        with pytest.raises(ValueError, match="batch_size=2"):
            env.step(torch.tensor([1, 2, 3]))
        assert env.step(torch.tensor([2, 2])).reward.tolist() == [2, 2]
    finally:
        env.close()


def test_broken_constructor_error_reaches_caller_quickly():
    start = time.monotonic()
    with pytest.raises(EnvironmentProcessError) as info:
        ParallelAlfEnvironment(
            [_counting(0), functools.partial(suite_gym.load, BROKEN, env_id=1)],
            start_serially=False,
        )
    assert time.monotonic() - start < 10
    assert "BrokenEnv constructor failed on purpose" in str(info.value)
    assert "Traceback" in str(info.value)
    assert not worker_processes()


def test_killed_worker_raises_with_env_id_and_exit_code(flatten):
    env = ParallelAlfEnvironment([_counting(0), _counting(1), _counting(2)], flatten=flatten)
    env.reset()
    os.kill(env.envs[1].pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(EnvironmentProcessCrashed) as info:
        env.step(torch.tensor([1, 1, 1]))
    assert time.monotonic() - start < 10
    assert "env_id=1" in str(info.value) and "exit code -9" in str(info.value)
    env.close()
    env.close()
    assert not worker_processes()


def test_restart_on_crash_restarts_only_that_row(flatten):
    env = ParallelAlfEnvironment(
        [_counting(0, terminate_at=None), _batch(_counting(1, terminate_at=None), _counting(2))],
        flatten=flatten,
        restart_on_crash=True,
    )
    try:
        env.reset()
        env.step(torch.tensor([1, 1, 1]))
        os.kill(env.envs[1].pid, signal.SIGKILL)
        time_step = env.step(torch.tensor([2, 2, 2]))
        assert time_step.step_type.tolist() == [MID, FIRST, FIRST]
        assert time_step.env_id.tolist() == [0, 1, 2]
        time_step = env.step(torch.tensor([3, 3, 3]))
        assert time_step.step_type.tolist() == [MID, MID, MID]
        assert time_step.reward.tolist() == [3, 3, 3]
        assert env.envs[1].num_restarts == 1
    finally:
        env.close()
    assert not worker_processes()


def test_seed_rows():
    env = ParallelAlfEnvironment([_counting(0), _batch(_counting(1), _counting(2))])
    try:
        env.seed(10)
        with pytest.raises(ValueError, match="Expected 3 seeds"):
            env.seed([1, 2])
    finally:
        env.close()


def _cart_pole(env_id):
    return functools.partial(suite_gym.load, "CartPole-v1", env_id=env_id)


def _gym_first_observations(seeds):
    env = gymnasium.make("CartPole-v1")
    try:
        return torch.as_tensor(np.stack([env.reset(seed=seed)[0] for seed in seeds]))
    finally:
        env.close()


def test_seed_gives_row_r_seed_plus_r_across_members(flatten):
    """Row ``r`` (member 0, then the two rows of a batched member) starts its next episode
    from ``reset(seed=seed + r)``, as ``create_environment(seed=...)`` seeds env ``r``."""
    env = ParallelAlfEnvironment(
        [_cart_pole(0), _batch(_cart_pole(1), _cart_pole(2))], flatten=flatten
    )
    try:
        env.seed(10)
        first = env.reset().observation
        assert torch.equal(first, _gym_first_observations([10, 11, 12]))
        env.seed(10)
        assert torch.equal(env.reset().observation, first)  # same seed, same episode start
        env.seed([5, 7, 9])
        assert torch.equal(env.reset().observation, _gym_first_observations([5, 7, 9]))
    finally:
        env.close()


def test_spare_envs_are_not_supported():
    with pytest.raises(NotImplementedError, match="num_spare_envs"):
        ParallelAlfEnvironment([_counting(0)], num_spare_envs=1)


_CTRL_C_SCRIPT = """
import functools, sys
import torch
from alf.environments import suite_gym
from alf.environments.parallel_environment import ParallelAlfEnvironment

env = ParallelAlfEnvironment(
    [functools.partial(suite_gym.load, "CartPole-v1", env_id=i) for i in range(2)]
)
print("PIDS", *[e.pid for e in env.envs], flush=True)
env.reset()
action = torch.zeros(2, dtype=torch.int64)
{loop}
"""

_CAUGHT = """
try:
    while True:
        env.step(action)
except KeyboardInterrupt:
    env.close()
    print("INTERRUPTED", flush=True)
    sys.exit(3)
"""

_UNCAUGHT = """
while True:
    env.step(action)
"""


def _as_a_terminal_job():
    """SIGINT as a terminal job has it: a suite run in the background of a non-interactive
    shell (or under nohup) ignores SIGINT, its children inherit that, and Python then
    installs no KeyboardInterrupt handler, so Ctrl-C would never reach the script."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_until_signal(tmp_path, loop, sig):
    """Run the stepping script, send ``sig`` to its process group, return its outcome."""
    script = tmp_path / "ctrl_c.py"
    script.write_text(textwrap.dedent(_CTRL_C_SCRIPT.format(loop=loop)))
    environ = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        start_new_session=True,  # its own process group, like a terminal job
        preexec_fn=_as_a_terminal_job,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("PIDS"), process.stderr.read()
        worker_pids = [int(pid) for pid in line.split()[1:]]
        time.sleep(0.3)
        if sig == signal.SIGINT:
            os.killpg(process.pid, sig)  # Ctrl-C reaches the whole group
        else:
            os.kill(process.pid, sig)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process, worker_pids, stdout, stderr


def _assert_no_process_left(process, worker_pids):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _session_processes(process.pid):
        time.sleep(0.1)
    assert not _session_processes(process.pid)
    assert not any(_alive(pid) for pid in worker_pids)


def _alive(pid: int) -> bool:
    """Running (not a zombie: an orphan's exit may wait for a busy or absent init to reap)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("loop", [_CAUGHT, _UNCAUGHT], ids=["caught", "uncaught"])
def test_ctrl_c_in_parent_exits_cleanly(tmp_path, loop):
    process, worker_pids, stdout, stderr = _run_until_signal(tmp_path, loop, signal.SIGINT)
    if loop is _CAUGHT:
        assert process.returncode == 3 and "INTERRUPTED" in stdout, stderr
        assert "Traceback" not in stderr, stderr
    else:
        assert process.returncode in (-signal.SIGINT, 1, 130), stderr
        assert "KeyboardInterrupt" in stderr
    assert stderr.count("KeyboardInterrupt") <= 1, stderr  # workers ignore SIGINT
    _assert_no_process_left(process, worker_pids)


def test_killed_parent_leaves_no_orphan(tmp_path):
    """Workers see the pipe close when the parent is SIGKILLed, and exit."""
    process, worker_pids, _, _ = _run_until_signal(tmp_path, _UNCAUGHT, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    _assert_no_process_left(process, worker_pids)


def _session_processes(session_id: int) -> list[int]:
    """Live processes of the script's session (workers, fork server, tracker)."""
    pids = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getsid(proc.pid) == session_id and proc.info["status"] != "zombie":
                pids.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess, PermissionError):
            pass
    return pids
