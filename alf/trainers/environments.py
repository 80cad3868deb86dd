"""The environments of a training run: the training env (or the remote samplers') and the
evaluation env, seeded from the run's ``RunState``."""

from __future__ import annotations

from alf.environments.utils import create_environment
from alf.samplers.group import create_samplers


def create_training_env(run):
    """``(env, samplers)``: the remote samplers' env and the samplers when ``SamplerConfig``
    asks for them, else ``(create_environment(...), None)``; with K learner ranks, this
    rank's share of the envs (``run.num_parallel_environments``): envs ``first_env_id ..``
    of the run, env ``g`` seeded with the run's seed plus ``g`` wherever it runs (its
    ``env_id`` counts from 0 on each rank: the rows of the rank's replay buffer).

    Args:
        run: the trainer's ``RunState``.
    """
    num_envs = run.num_parallel_environments
    first = run.first_env_id
    samplers = create_samplers(run.seed, num_envs=num_envs, first_env_id=first)
    if samplers is not None:
        return samplers.env, samplers
    kwargs = {} if num_envs is None else {"num_parallel_environments": num_envs}
    # the rank's env_ids stay 0.. (its replay buffer's rows); the seeds carry the offset
    return create_environment(seed=run.seed + first, **kwargs), None


def create_eval_env(config, run):
    """The evaluation env, by ALF's rule: in the main process unless
    ``TrainerConfig.no_thread_env_for_conf``; seeded with ``run.eval_seed``."""
    return create_environment(
        num_parallel_environments=config.num_eval_environments,
        nonparallel=not config.no_thread_env_for_conf,
        seed=run.eval_seed,
    )
