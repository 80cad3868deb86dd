"""``create_environment``: the configurable factory of the training environment.

Following ALF, ``num_parallel_environments`` envs are made by ``env_load_fn`` with
``env_id`` 0..N-1 and seeded with ``seed + env_id``; they are laid out as rows
0..N-1 of one batched torch environment:

- ``nonparallel=True``: everything in the main process: a ``ThreadEnvironment`` for
  one env, a ``BatchedEnvironment`` for several (the fast path for cheap simulators);
- otherwise ``N / batch_size_per_env`` worker processes (``ParallelAlfEnvironment``
  of ``ProcessEnvironment``s), each holding ``batch_size_per_env`` consecutive envs
  (one unbatched env, or a numpy ``BatchedEnvironment`` of several).

``batched_backend='envpool'`` replaces all of this by one ``EnvpoolEnvironment``: envpool
steps the ``N`` envs in C++ threads (docs/envpool.md).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import alf
from alf.configuration.argtypes import Count, NonNegativeInt, PositiveFloat
from alf.configuration.registry import lookup_slot
from alf.environments import suite_gym
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.batched_environment import BatchedEnvironment, member_seeds
from alf.environments.envpool_environment import EnvpoolEnvironment
from alf.environments.parallel_environment import FastParallelEnvironment
from alf.environments.thread_environment import ThreadEnvironment


def make_env(env_load_fn: Callable, env_name: str, env_id: int, seed: int | None):
    """``env_load_fn(env_name, env_id=env_id)``, seeded with ``seed`` when given.

    A module-level function, so ``functools.partial(make_env, ...)`` pickles by
    reference for the worker processes.
    """
    env = env_load_fn(env_name, env_id=env_id)
    if seed is not None:
        env.seed(seed)
    return env


def env_constructors(
    env_name: str, env_load_fn: Callable, num_envs: int, seed: int | None, first_env_id: int = 0
):
    """Picklable zero-argument constructors of envs ``first_env_id + i`` for ``i`` in
    0..num_envs-1 (seeds ``seed + env_id``, ``member_seeds``; unseeded when ``seed`` is
    None)."""
    ids = range(first_env_id, first_env_id + num_envs)
    if seed is None:
        seeds = [None] * num_envs
    else:
        seeds = member_seeds(seed + first_env_id if first_env_id else seed, num_envs)
    return [
        functools.partial(make_env, env_load_fn, env_name, env_id, env_seed)
        for env_id, env_seed in zip(ids, seeds)
    ]


def _group_constructors(constructors: list, batch_size_per_env: int) -> list:
    """One constructor per worker: the env itself, or a numpy batch of consecutive envs."""
    if batch_size_per_env == 1:
        return constructors
    return [
        functools.partial(
            BatchedEnvironment,
            constructors[start : start + batch_size_per_env],
            torch_output=False,
        )
        for start in range(0, len(constructors), batch_size_per_env)
    ]


@alf.configurable
def create_environment(
    env_name: str = "CartPole-v1",
    env_load_fn: Callable = suite_gym.load,
    num_parallel_environments: Count = 1,
    nonparallel: bool = False,
    flatten: bool = True,
    start_serially: bool = True,
    num_spare_envs: NonNegativeInt = 0,
    torch_num_threads_per_env: NonNegativeInt = 1,
    parallel_environment_ctor: Callable = FastParallelEnvironment,
    seed: int | None = None,
    batch_size_per_env: Count = 1,
    restart_on_crash: bool = False,
    step_timeout: PositiveFloat | None = None,
    max_restarts: NonNegativeInt = 10,
    restart_window: PositiveFloat = 60.0,
    batched_backend: str = "alf",
    first_env_id: NonNegativeInt = 0,
) -> AlfEnvironment:
    """Create the batched (torch) training environment.

    Args:
        env_name: the environment name passed to ``env_load_fn``.
        env_load_fn: ``env_load_fn(env_name, env_id=...)`` returns an unbatched
            numpy ``AlfEnvironment``; must be picklable (a module-level function or a
            ``functools.partial`` of one) unless ``nonparallel``.
        num_parallel_environments: number of envs ``N`` (the batch size).
        nonparallel: run all envs in the main process.
        flatten: workers exchange data through shared memory (see
            ``FastParallelEnvironment``, ALF's name of ``ParallelAlfEnvironment``).
        start_serially: start the workers one after the other.
        num_spare_envs: spare envs of ALF; must be 0 (not supported).
        torch_num_threads_per_env: torch threads in each worker.
        parallel_environment_ctor: class of the multi-process environment.
        seed: env ``i`` is seeded with ``seed + i``; None leaves the envs unseeded.
        batch_size_per_env: number of envs per worker process; must divide ``N``.
        restart_on_crash: replace a crashed worker (its rows restart with FIRST).
        step_timeout: seconds a step or reset may take before it is an error naming the
            env: the worker processes share one deadline (None: the parallel environment's
            default, 300 s); with ``nonparallel`` a watchdog interrupts the step in this
            process (``alf.environments.step_guard``; None: no limit).
        max_restarts, restart_window: with ``restart_on_crash``, a worker that crashed
            more than ``max_restarts`` times within ``restart_window`` seconds stops the
            run with its crash instead of being restarted again.
        batched_backend: ``'alf'``: the envs made by ``env_load_fn``, batched as the
            module doc says; ``'envpool'``: an ``EnvpoolEnvironment`` of ``env_name``
            (envpool's C++ thread pool; ``pip install alf[envpool]``): ``env_load_fn``
            must be ``suite_gym.load`` (envpool makes the envs itself; its time limit
            and discount are ``EnvpoolEnvironment``'s), the process options do not
            apply, ``seed`` and ``step_timeout`` do.
        first_env_id: the env_id of row 0: the envs are ``first_env_id .. first_env_id +
            N - 1`` of a larger run, each seeded with ``seed + env_id`` (a remote sampler
            holds such a slice, ``alf.samplers``).

    Returns:
        A batched ``AlfEnvironment`` of batch size ``N`` whose row ``i`` has
        ``env_id == first_env_id + i``.
    """
    if num_parallel_environments < 1:
        raise ValueError(f"num_parallel_environments must be >= 1, got {num_parallel_environments}")
    if batch_size_per_env < 1 or num_parallel_environments % batch_size_per_env:
        raise ValueError(
            f"num_parallel_environments={num_parallel_environments} must be a positive "
            f"multiple of batch_size_per_env={batch_size_per_env}"
        )
    if batched_backend == "envpool":
        if first_env_id:
            raise ValueError(
                "batched_backend='envpool' numbers its envs from 0: it cannot hold a slice "
                f"starting at env_id {first_env_id} (remote samplers need batched_backend='alf')"
            )
        return _envpool_environment(
            env_name, env_load_fn, num_parallel_environments, seed, step_timeout, restart_on_crash
        )
    if batched_backend != "alf":
        raise ValueError(f"batched_backend must be 'alf' or 'envpool', got {batched_backend!r}")
    constructors = env_constructors(
        env_name, env_load_fn, num_parallel_environments, seed, first_env_id
    )
    if nonparallel:
        if num_parallel_environments == 1:
            return ThreadEnvironment(constructors[0], step_timeout=step_timeout)
        return BatchedEnvironment(constructors, step_timeout=step_timeout)
    kwargs = {}
    if restart_on_crash:
        kwargs.update(restart_on_crash=True, max_restarts=max_restarts)
        kwargs.update(restart_window=restart_window)
    if step_timeout is not None:
        kwargs["timeout"] = step_timeout
    return parallel_environment_ctor(
        _group_constructors(constructors, batch_size_per_env),
        flatten=flatten,
        start_serially=start_serially,
        num_spare_envs=num_spare_envs,
        torch_num_threads_per_env=torch_num_threads_per_env,
        **kwargs,
    )


def _envpool_environment(
    env_name, env_load_fn, num_envs, seed, step_timeout, restart_on_crash
) -> EnvpoolEnvironment:
    """``create_environment``'s envpool backend (see its ``batched_backend``)."""
    if env_load_fn is not suite_gym.load:
        raise ValueError(
            f"batched_backend='envpool' makes the envs itself, so env_load_fn must be "
            f"suite_gym.load, got {env_load_fn!r}"
        )
    if restart_on_crash:
        raise ValueError("batched_backend='envpool' does not support restart_on_crash")
    configured = [
        name
        for name in inspect.signature(suite_gym.load).parameters
        if name not in ("environment_name", "env_id", "make_kwargs")
        and lookup_slot(f"suite_gym.load.{name}").configured
    ]
    if configured:
        raise ValueError(
            f"batched_backend='envpool' does not use suite_gym.load, but suite_gym.load."
            f"{configured[0]} is configured; configure EnvpoolEnvironment instead "
            "(max_episode_steps, discount, make_kwargs)"
        )
    return EnvpoolEnvironment(env_name, num_envs=num_envs, seed=seed, step_timeout=step_timeout)
