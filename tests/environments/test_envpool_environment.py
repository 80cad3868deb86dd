"""The envpool backend (``create_environment(batched_backend='envpool')``) gives the
``TimeStep`` stream of alf's gymnasium path: the same step types, discounts (0 at a
termination, 1 at a time limit), rewards, ``prev_action``, specs and per-row auto reset.
Every test that needs envpool skips when it is not installed."""

import sys

import numpy as np
import pytest
import torch

import alf
from alf.data_structures import StepType
from alf.environments import step_guard, suite_gym
from alf.environments.envpool_environment import EnvpoolEnvironment, resolve_task_id
from alf.environments.step_guard import EnvironmentStepTimeout, StepInterrupted
from alf.environments.utils import create_environment

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


@pytest.fixture
def envpool():
    return pytest.importorskip("envpool")


@pytest.fixture(autouse=True)
def _fresh_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()


def _cartpole_state(env):
    """The gymnasium CartPole inside ``suite_gym.load``'s ``TimeLimit(AlfGymWrapper)``."""
    return env.wrapped_env().gym.unwrapped


def _random_actions(num_steps, batch_size, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (num_steps, batch_size), generator=generator)


def test_cartpole_stream_matches_the_gymnasium_path(envpool):
    """Row by row, a gymnasium CartPole started from envpool's first observation gives the
    same step types, discounts, rewards, prev_actions and observations, through
    terminations (discount 0), time limits (discount 1) and auto resets."""
    limit, num_envs = 20, 3
    env = EnvpoolEnvironment("CartPole-v1", num_envs, seed=1, max_episode_steps=limit)
    refs = [suite_gym.load("CartPole-v1", env_id=i, max_episode_steps=limit) for i in range(3)]
    counts = {"terminated": 0, "truncated": 0, "first": 0, "terminated at the limit": 0}
    try:
        time_step = env.reset()
        for row, ref in enumerate(refs):
            ref.reset()
            _cartpole_state(ref).state = time_step.observation[row].numpy().astype(np.float64)
        steps_in_episode = [0] * num_envs
        for action in _random_actions(300, num_envs):
            time_step = env.step(action)
            for row, ref in enumerate(refs):
                expected = ref.step(action[row].numpy())
                got = [int(time_step.step_type[row]), float(time_step.discount[row])]
                got += [float(time_step.reward[row]), int(time_step.prev_action[row])]
                assert got == [
                    int(expected.step_type),
                    float(expected.discount),
                    float(expected.reward),
                    int(expected.prev_action),
                ]
                assert int(time_step.env_id[row]) == row
                observation = time_step.observation[row].numpy()
                if int(expected.step_type) == FIRST:  # a new episode from envpool's state
                    _cartpole_state(ref).state = observation.astype(np.float64)
                    steps_in_episode[row] = 0
                    counts["first"] += 1
                    continue
                np.testing.assert_allclose(observation, expected.observation, atol=1e-4)
                steps_in_episode[row] += 1
                if int(expected.step_type) != LAST:
                    continue
                fell = abs(observation[0]) > 2.4 or abs(observation[2]) > 12 * 2 * np.pi / 360
                assert float(time_step.discount[row]) == (0.0 if fell else 1.0)
                assert fell or steps_in_episode[row] == limit
                counts["terminated" if fell else "truncated"] += 1
                counts["terminated at the limit"] += fell and steps_in_episode[row] == limit
    finally:
        env.close()
    assert counts["terminated"] >= 5 and counts["truncated"] >= 2 and counts["first"] >= 8
    # the pole fell at the time limit: a termination (envpool alone calls it a truncation)
    assert counts["terminated at the limit"] >= 1


def _stream(env, actions):
    """``[T+1, B]`` step types, discounts, rewards of reset() and each step(action)."""
    time_steps = [env.reset()] + [env.step(action) for action in actions]
    return [torch.stack([getattr(t, f) for t in time_steps]) for f in ("step_type", "discount")]


def test_a_mujoco_time_limit_is_a_last_with_discount_one(envpool):
    """HalfCheetah never terminates: every 5th step is a time-limit LAST with discount 1
    (both rows at once, so the next step restarts the whole batch), then FIRST."""
    env = EnvpoolEnvironment("HalfCheetah-v5", 2, seed=0, max_episode_steps=5)
    try:
        actions = torch.full((12, 2, 6), 0.5)
        time_steps = [env.reset()] + [env.step(action) for action in actions]
    finally:
        env.close()
    episode = [FIRST, MID, MID, MID, MID, LAST]
    step_types = torch.stack([t.step_type for t in time_steps])
    assert step_types.tolist() == [[s, s] for s in episode * 2 + [FIRST]]
    assert all(t.discount.tolist() == [1.0, 1.0] for t in time_steps)
    for t in time_steps:
        is_first = bool(t.step_type[0] == FIRST)
        assert t.prev_action.tolist() == [[0.0 if is_first else 0.5] * 6] * 2
        assert (t.reward == 0).all() == is_first  # HalfCheetah's reward is never exactly 0
    # a new episode starts from a fresh state, near the origin again
    assert time_steps[6].observation.abs().max() < 0.5 < time_steps[5].observation.abs().max()


def test_a_mujoco_termination_has_discount_zero(envpool):
    """Hopper falls under a constant push: a LAST with discount 0 well before the limit."""
    env = EnvpoolEnvironment("Hopper-v5", 2, seed=0)
    try:
        step_types, discounts = _stream(env, torch.ones(300, 2, 3))
    finally:
        env.close()
    assert env.max_episode_steps == 1000
    first_last = int((step_types[:, 0] == LAST).nonzero()[0])
    assert 5 < first_last < 300
    assert float(discounts[first_last, 0]) == 0.0
    assert int(step_types[first_last + 1, 0]) == FIRST
    assert float(discounts[first_last + 1, 0]) == 1.0
    assert discounts[step_types != LAST].eq(1).all()


@pytest.mark.parametrize(
    "env_name", ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0"]
)
def test_specs_and_time_limits_match_the_gymnasium_path(envpool, env_name):
    env = create_environment(env_name, num_parallel_environments=2, batched_backend="envpool")
    reference = suite_gym.load(env_name)
    try:
        assert env.time_step_spec() == reference.time_step_spec()
        assert env.max_episode_steps == reference.duration
        time_step = env.reset()
        for value, spec in zip(time_step, env.time_step_spec()):
            for leaf, leaf_spec in zip(alf.nest.flatten(value), alf.nest.flatten(spec)):
                assert leaf.dtype == leaf_spec.dtype and leaf.shape == (2, *leaf_spec.shape)
        assert time_step.env_id.tolist() == [0, 1]
    finally:
        env.close()


def test_no_time_limit_when_max_episode_steps_is_zero(envpool):
    """Pendulum never terminates; its 200-step limit is off with max_episode_steps=0."""
    env = EnvpoolEnvironment("Pendulum-v1", 1, seed=0, max_episode_steps=0)
    try:
        step_types, _ = _stream(env, torch.zeros(250, 1, 1))
    finally:
        env.close()
    assert step_types[0].tolist() == [FIRST] and step_types[1:].eq(MID).all()


def _observations(num_envs, seed, actions, **kwargs):
    env = create_environment(
        "CartPole-v1", num_parallel_environments=num_envs, seed=seed, batched_backend="envpool"
    )
    try:
        return torch.stack([env.reset().observation] + [env.step(a).observation for a in actions])
    finally:
        env.close()


def test_env_i_is_seeded_with_seed_plus_i(envpool):
    actions = _random_actions(60, 2)
    pair = _observations(2, 3, actions)
    assert torch.equal(pair, _observations(2, 3, actions))
    assert torch.equal(pair[:, 1], _observations(1, 4, actions[:, 1:])[:, 0])
    assert not torch.equal(pair[:, 0], pair[:, 1])
    assert not torch.equal(pair, _observations(2, 5, actions))
    unseeded = [_observations(1, None, actions[:, :1]) for _ in range(2)]
    assert not torch.equal(*unseeded)


def test_an_out_of_range_action_names_the_row_unless_the_row_restarts(envpool):
    env = EnvpoolEnvironment("CartPole-v1", 2, seed=0, max_episode_steps=2)
    try:
        env.reset()
        with pytest.raises(ValueError, match=r"Action 2 of row 1 is outside .* CartPole-v1"):
            env.step(torch.tensor([0, 2]))
        env.step(torch.tensor([0, 1]))
        assert env.step(torch.tensor([0, 1])).step_type.tolist() == [LAST, LAST]
        time_step = env.step(torch.tensor([7, -3]))  # ignored: both rows restart
        assert time_step.step_type.tolist() == [FIRST, FIRST]
        assert time_step.prev_action.tolist() == [0, 0]
    finally:
        env.close()


def test_atari_observations_are_envpool_frames(envpool):
    env = EnvpoolEnvironment("Pong-v5", 2, seed=0)
    try:
        spec = env.observation_spec()
        assert (spec.shape, spec.dtype) == ((4, 84, 84), torch.uint8)
        assert env.action_spec().maximum == 5
        time_step = env.reset()
        assert time_step.observation.dtype == torch.uint8
        assert time_step.observation.shape == (2, 4, 84, 84)
        for _ in range(5):
            time_step = env.step(torch.tensor([1, 2]))
        assert time_step.step_type.tolist() == [MID, MID]
        assert time_step.prev_action.tolist() == [1, 2]
    finally:
        env.close()


class _HangingPool:
    """An envpool stand-in whose ``at``-th step hangs in Python."""

    def __init__(self, pool, at):
        self._pool, self._at, self._steps = pool, at, 0

    def step(self, *args, **kwargs):
        self._steps += 1
        if self._steps == self._at:
            import time

            time.sleep(30)
        return self._pool.step(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._pool, name)


def test_steps_go_through_the_step_guard(envpool):
    env = create_environment(
        "CartPole-v1", num_parallel_environments=2, batched_backend="envpool", step_timeout=0.5
    )
    env._pool = _HangingPool(env._pool, at=3)
    try:
        env.reset()
        with pytest.raises(EnvironmentStepTimeout, match=r"envpool CartPole-v1 \(2 envs\)"):
            for _ in range(5):
                env.step(torch.zeros(2, dtype=torch.int64))
        assert step_guard._state.guard is None
        step_guard.request_stop(0.0)
        try:
            with pytest.raises(StepInterrupted, match="envpool CartPole-v1"):
                env.step(torch.zeros(2, dtype=torch.int64))
        finally:
            step_guard.clear_stop()
    finally:
        env.close()
        env.close()  # idempotent
    assert env._pool is None


def test_unknown_env_id_is_one_line_naming_it_and_envpools_versions(envpool):
    with pytest.raises(ValueError) as raised:
        create_environment("HalfCheetah-v2", batched_backend="envpool")
    assert str(raised.value) == (
        "envpool has no environment 'HalfCheetah-v2'; it has HalfCheetah-v3, HalfCheetah-v4, "
        "HalfCheetah-v5"
    )


def test_resolve_task_id_never_substitutes_a_version():
    available = ["Hopper-v3", "Hopper-v4", "CartPole-v1", "Hop-v9"]
    assert resolve_task_id("Hopper-v4", available) == "Hopper-v4"
    assert resolve_task_id("Hopper", available) == "Hopper-v4"  # unversioned: the latest
    with pytest.raises(ValueError, match="no environment 'Hopper-v5'; it has Hopper-v3, Hop"):
        resolve_task_id("Hopper-v5", available)
    with pytest.raises(ValueError, match=r"'Walker-v1'; see envpool.list_all_envs\(\)"):
        resolve_task_id("Walker-v1", available)


def test_without_envpool_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "envpool", None)  # makes `import envpool` fail
    with pytest.raises(ImportError) as raised:
        create_environment("CartPole-v1", batched_backend="envpool")
    message = str(raised.value)
    assert "pip install alf[envpool]" in message and "\n" not in message


def test_backend_options_are_checked():
    with pytest.raises(ValueError, match="batched_backend must be 'alf' or 'envpool'"):
        create_environment("CartPole-v1", batched_backend="envpol")
    with pytest.raises(ValueError, match="env_load_fn must be suite_gym.load"):
        create_environment(
            "CartPole-v1", env_load_fn=lambda *a, **k: None, batched_backend="envpool"
        )
    with pytest.raises(ValueError, match="does not support restart_on_crash"):
        create_environment("CartPole-v1", batched_backend="envpool", restart_on_crash=True)
    alf.config("suite_gym.load", max_episode_steps=30)
    with pytest.raises(ValueError, match="suite_gym.load.max_episode_steps is configured"):
        create_environment("CartPole-v1", batched_backend="envpool")


def test_envpool_environment_is_configurable(envpool):
    alf.config("EnvpoolEnvironment", max_episode_steps=7, discount=0.5)
    env = create_environment("CartPole-v1", num_parallel_environments=1, batched_backend="envpool")
    try:
        step_types, discounts = _stream(env, torch.tensor([[0], [1]] * 4))
    finally:
        env.close()
    assert step_types[:, 0].tolist() == [FIRST] + [MID] * 6 + [LAST, FIRST]
    assert discounts[:, 0].tolist() == [1.0] + [0.5] * 7 + [1.0]


def test_seed_remakes_the_episodes_of_that_seed(envpool):
    env = EnvpoolEnvironment("CartPole-v1", 2, seed=11)
    edge = EnvpoolEnvironment("CartPole-v1", 3, seed=2**31 - 2)  # seeds wrap into int32
    try:
        first = env.reset().observation
        for _ in range(5):
            env.step(torch.ones(2, dtype=torch.int64))
        env.seed(11)
        assert env.current_time_step() is None  # the next step() resets
        assert torch.equal(env.step(torch.ones(2, dtype=torch.int64)).observation, first)
        wrapped = edge.reset().observation[2]
    finally:
        env.close()
        edge.close()
    assert torch.equal(wrapped, _observations(1, 0, torch.zeros(0, 1, dtype=torch.int64))[0, 0])
