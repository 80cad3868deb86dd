"""Tests of ``create_environment``: backends, env ids, seeding, discounts and errors."""

import functools
import time

import pytest
import torch

import alf
from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.batched_environment import BatchedEnvironment
from alf.environments.parallel_environment import FastParallelEnvironment
from alf.environments.process_environment import EnvironmentProcessError
from alf.environments.thread_environment import ThreadEnvironment
from alf.environments.utils import create_environment

COUNTING = "alf.environments.toy_envs:CountingEnv-v0"
RANDOM_START = "alf.environments.toy_envs:RandomStartEnv-v0"
BROKEN = "alf.environments.toy_envs:BrokenEnv-v0"
FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _trajectory(env, actions):
    """The ``[T+1, B, ...]`` observations, rewards and step types of reset() and each step."""
    time_steps = [env.reset()] + [env.step(action) for action in actions]
    return (
        torch.stack([t.observation for t in time_steps]),
        torch.stack([t.reward for t in time_steps]),
        torch.stack([t.step_type for t in time_steps]),
    )


def _random_actions(num_steps, batch_size, seed=0):
    return torch.randint(
        0, 2, (num_steps, batch_size), generator=torch.Generator().manual_seed(seed)
    )


@pytest.mark.parametrize(
    "kwargs, expected_type, num_workers",
    [
        (dict(num_parallel_environments=1, nonparallel=True), ThreadEnvironment, 0),
        (dict(num_parallel_environments=3, nonparallel=True), BatchedEnvironment, 0),
        (dict(num_parallel_environments=3), FastParallelEnvironment, 3),
        (dict(num_parallel_environments=4, batch_size_per_env=2), FastParallelEnvironment, 2),
    ],
)
def test_backends_and_env_ids(kwargs, expected_type, num_workers):
    env = create_environment(COUNTING, **kwargs)
    try:
        assert type(env) is expected_type
        batch_size = kwargs["num_parallel_environments"]
        assert env.batched and env.batch_size == batch_size
        if num_workers:
            assert len(env.envs) == num_workers
        assert env.reset().env_id.tolist() == list(range(batch_size))
    finally:
        env.close()


def test_batch_size_per_env_must_divide():
    with pytest.raises(ValueError, match="num_parallel_environments=3.*batch_size_per_env=2"):
        create_environment(COUNTING, num_parallel_environments=3, batch_size_per_env=2)


@pytest.mark.parametrize("batch_size_per_env", [1, 2])
def test_discount_table_through_processes(batch_size_per_env):
    """Row 0 terminates at step 2, row 1 is truncated at step 3 (different load kwargs)."""
    env = create_environment(
        COUNTING,
        env_load_fn=functools.partial(
            _load_counting_by_id, {0: dict(terminate_at=2), 1: dict(truncate_at=3)}
        ),
        num_parallel_environments=2,
        batch_size_per_env=batch_size_per_env,
    )
    try:
        time_step = env.reset()
        assert time_step.reward.tolist() == [0, 0] and time_step.prev_action.tolist() == [0, 0]
        rows = []
        for action in ([1, 2], [3, 1], [2, 2], [1, 3]):
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
            ([LAST, MID], [0, 1], [3, 1], [3, 1]),  # terminated: discount 0
            ([FIRST, LAST], [1, 1], [0, 2], [0, 2]),  # truncated: discount 1
            ([MID, FIRST], [1, 1], [1, 0], [1, 0]),
        ]
    finally:
        env.close()


CARTPOLE_BACKENDS = {
    "nonparallel": dict(nonparallel=True),
    "processes": dict(batch_size_per_env=2),
    "envpool": dict(batched_backend="envpool"),
}


@pytest.mark.parametrize("backend", list(CARTPOLE_BACKENDS))
def test_cartpole_discount_table_on_every_backend(backend):
    """CartPole-v1 with a 15-step limit: a LAST has discount 0 exactly when the pole fell
    or the cart left (termination), else it is the 15th step with discount 1 (time limit);
    the next step is the row's FIRST (reward 0, discount 1, prev_action 0)."""
    limit, kwargs = 15, dict(CARTPOLE_BACKENDS[backend])
    if backend == "envpool":
        pytest.importorskip("envpool")
        alf.config("EnvpoolEnvironment", max_episode_steps=limit)
    else:
        kwargs["env_load_fn"] = functools.partial(suite_gym.load, max_episode_steps=limit)
    env = create_environment("CartPole-v1", num_parallel_environments=2, seed=0, **kwargs)
    counts = {"terminated": 0, "truncated": 0}
    try:
        previous, length = env.reset(), [0, 0]
        assert previous.step_type.tolist() == [FIRST, FIRST]
        for action in _random_actions(200, 2):
            time_step = env.step(action)
            for row in range(2):
                step_type, discount = int(time_step.step_type[row]), float(time_step.discount[row])
                reward, prev_action = float(time_step.reward[row]), int(time_step.prev_action[row])
                if int(previous.step_type[row]) == LAST:
                    assert (step_type, discount, reward, prev_action) == (FIRST, 1.0, 0.0, 0)
                    length[row] = 0
                    continue
                length[row] += 1
                assert (reward, prev_action) == (1.0, int(action[row]))
                x, angle = time_step.observation[row, 0], time_step.observation[row, 2]
                fell = bool(abs(x) > 2.4 or abs(angle) > 0.2095)
                if step_type == LAST and fell:
                    counts["terminated"] += 1
                    assert discount == 0.0
                elif step_type == LAST:
                    counts["truncated"] += 1
                    assert (discount, length[row]) == (1.0, limit)
                else:
                    assert (step_type, discount, fell) == (MID, 1.0, False)
                    assert length[row] < limit
            previous = time_step
    finally:
        env.close()
        alf.reset_configs()
    assert counts["terminated"] >= 5 and counts["truncated"] >= 2


@pytest.mark.parametrize("nonparallel", [True, False])
def test_configured_values_reach_the_env_workers(nonparallel):
    """Values configured in this process apply where the envs are built: a time limit
    configured for ``suite_gym.load`` cuts the episodes of process workers too."""
    alf.config("suite_gym.load", max_episode_steps=4)
    try:
        env = create_environment(COUNTING, num_parallel_environments=2, nonparallel=nonparallel)
        try:
            _, _, step_types = _trajectory(env, torch.zeros(10, 2, dtype=torch.int64))
        finally:
            env.close()
    finally:
        alf.reset_configs()
    row = [FIRST, MID, MID, MID, LAST] * 2 + [FIRST]
    assert step_types.tolist() == [[s, s] for s in row]


def _load_counting_by_id(kwargs_by_id, env_name, env_id):
    kwargs = {"terminate_at": None, **kwargs_by_id[env_id]}
    return suite_gym.load(env_name, env_id=env_id, **kwargs)


def test_same_seed_same_trajectories_across_backends():
    actions = _random_actions(60, 2)

    def run(**kwargs):
        env = create_environment(RANDOM_START, num_parallel_environments=2, **kwargs)
        try:
            return _trajectory(env, actions)
        finally:
            env.close()

    process = run(seed=7)
    for other in (run(seed=7), run(seed=7, batch_size_per_env=2), run(seed=7, nonparallel=True)):
        for a, b in zip(process, other):
            assert torch.equal(a, b)
    different = run(seed=8)
    assert not torch.equal(process[0], different[0])
    assert (process[2] == FIRST).sum() > 2  # several episodes, reset with fresh randomness


def test_seed_is_seed_plus_env_id():
    actions = _random_actions(5, 2)
    pair = create_environment(RANDOM_START, num_parallel_environments=2, seed=3, nonparallel=True)
    single = create_environment(RANDOM_START, num_parallel_environments=1, seed=4, nonparallel=True)
    pair_obs = _trajectory(pair, actions)[0]
    single_obs = _trajectory(single, actions[:, 1:])[0]
    assert torch.equal(pair_obs[:, 1], single_obs[:, 0])


def test_broken_constructor_reaches_caller_quickly():
    start = time.monotonic()
    with pytest.raises(EnvironmentProcessError) as info:
        create_environment(BROKEN, num_parallel_environments=2)
    assert time.monotonic() - start < 10
    assert "BrokenEnv constructor failed on purpose" in str(info.value)
    assert "Traceback" in str(info.value)


def test_unknown_environment_in_process():
    with pytest.raises(EnvironmentProcessError, match="Unknown gymnasium environment id"):
        create_environment("NoSuchEnv-v3", num_parallel_environments=1)


def test_spare_envs_rejected():
    with pytest.raises(NotImplementedError):
        create_environment(COUNTING, num_parallel_environments=1, num_spare_envs=1)
