"""An env stepped in this process is bounded too: ``create_environment(nonparallel=True,
step_timeout=T)`` interrupts a step that hangs (sleeping, or spinning in Python) after ``T``
seconds, and a stop signal abandons a hung step after the grace period."""

import functools
import os
import signal
import threading
import time

import pytest
import torch

from alf.environments import step_guard, suite_gym
from alf.environments.step_guard import EnvironmentStepTimeout, StepInterrupted
from alf.environments.utils import create_environment
from alf.trainers.signals import SignalCatcher
from tests.environments.faulty_envs import HangAt

FAULTY_ENVS = os.path.join(os.path.dirname(__file__), "faulty_envs.py")


def _in_process_env(num_envs, at=3, spin=False, **kwargs):
    hang = functools.partial(HangAt, at=at, spin=spin)
    load = functools.partial(suite_gym.load, gym_env_wrappers=(hang,))
    return create_environment("CartPole-v1", load, num_envs, nonparallel=True, seed=0, **kwargs)


def _alarm():
    """SIGALRM's handler and the interval timer's remaining seconds (pytest-timeout sets both)."""
    return signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)[0]


def _assert_alarm_restored(before, seconds_since):
    handler, remaining = _alarm()
    assert handler is before[0]
    if before[1] == 0:
        assert remaining == 0
    else:  # the other user's timer runs on, less the time spent in between
        assert before[1] - seconds_since - 1 <= remaining <= before[1]


def _step_until_it_raises(env, expected, steps=10):
    action = torch.zeros(env.batch_size, dtype=torch.int64)
    env.reset()
    start = time.monotonic()
    with pytest.raises(expected) as raised:
        for _ in range(steps):
            env.step(action)
    return raised.value, time.monotonic() - start


@pytest.mark.parametrize("num_envs, spin", [(1, False), (1, True), (3, False), (3, True)])
def test_a_hung_in_process_step_times_out_naming_the_env_and_the_code(num_envs, spin):
    env = _in_process_env(num_envs, spin=spin, step_timeout=0.5)
    before, start = _alarm(), time.monotonic()
    try:
        error, waited = _step_until_it_raises(env, EnvironmentStepTimeout)
    finally:
        env.close()
    assert 0.5 <= waited < 10  # two healthy steps, then 0.5 s of hanging
    message = str(error)
    assert "CartPole-v1 (env_id=0)" in message
    assert "a step took longer than step_timeout=0.5 s" in message
    assert f"(stuck in step at {FAULTY_ENVS}:" in message
    # the guard cleaned up after itself: SIGALRM as before, nothing marked as running
    _assert_alarm_restored(before, time.monotonic() - start)
    assert step_guard._state.guard is None


def test_healthy_steps_are_not_interrupted_and_leave_no_alarm():
    env = _in_process_env(2, at=10**9, step_timeout=0.2)
    action = torch.zeros(2, dtype=torch.int64)
    before, start = _alarm(), time.monotonic()
    try:
        env.reset()
        for _ in range(300):
            env.step(action)
        time.sleep(0.3)  # longer than the timeout, outside any step: no alarm fires
    finally:
        env.close()
    _assert_alarm_restored(before, time.monotonic() - start)


@pytest.mark.parametrize("spin", [False, True])
def test_a_stop_signal_abandons_a_hung_step_after_the_grace_period(spin):
    env = _in_process_env(1, spin=spin)  # no timeout: only the stop can end the hang
    try:
        with SignalCatcher(grace=0.5) as catcher:
            timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
            timer.start()
            try:
                error, waited = _step_until_it_raises(env, StepInterrupted)
            finally:
                timer.cancel()
            assert catcher.caught == "SIGTERM"
            assert 0.9 <= waited < 10  # the signal after 0.5 s, then 0.5 s of grace
            assert "a step was still running when the stop signal's grace period ended" in str(
                error
            )
            # a step that starts after the grace period is not started at all
            with pytest.raises(StepInterrupted, match="this step was not started"):
                env.reset()
        assert not step_guard.stop_requested()  # the catcher's exit clears the stop
    finally:
        env.close()


def test_a_signal_taken_by_another_thread_still_wakes_a_main_thread_blocked_in_a_step():
    """The kernel may hand a process signal to any thread (torch and tensorboard run
    several): the sleeping main thread must still hear of it and stop within the grace."""
    env = _in_process_env(1)  # sleeps in its 3rd step
    try:
        with SignalCatcher(grace=0.5) as catcher:

            def signal_this_thread():
                time.sleep(0.5)
                signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

            thread = threading.Thread(target=signal_this_thread)
            thread.start()
            try:
                error, waited = _step_until_it_raises(env, StepInterrupted)
            finally:
                thread.join()
            assert catcher.caught == "SIGTERM"
            assert 0.9 <= waited < 10, waited
            assert "grace period ended" in str(error)
    finally:
        env.close()


def test_steps_on_another_thread_are_left_alone():
    env = _in_process_env(1, at=10**9, step_timeout=0.2)  # arming would fail off the main thread
    result = {}

    def steps():
        env.reset()
        action = torch.zeros(1, dtype=torch.int64)
        result["rewards"] = [float(env.step(action).reward) for _ in range(2)]

    try:
        thread = threading.Thread(target=steps)
        thread.start()
        thread.join(timeout=30)
    finally:
        env.close()
    assert result["rewards"] == [1.0, 1.0]


def test_a_non_positive_step_timeout_is_refused():
    with pytest.raises(ValueError, match="step_timeout must be a positive number of seconds"):
        _in_process_env(1, step_timeout=0)
