"""Shared checks of the SAC variants (QRSAC, DSAC, TQC, REDQ): learning the continuous
counting env, Pendulum, same seed → same parameters, checkpoint round trip, and a
hand-made ``[T, B]`` minibatch."""

from __future__ import annotations

import functools
import io

import torch

from alf.algorithms.config import TrainerConfig
from alf.algorithms.sac_algorithm import SacRolloutInfo, SquashedNormalActorNetwork
from alf.data_structures import Experience, StepType, TimeStep
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.optimizers import Adam
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import evaluate, parameters_of

CONTINUOUS_COUNTING_ENV = "alf.environments.toy_envs:ContinuousCountingEnv-v0"
#: ContinuousCountingEnv pays the sum of the 2-d action in [-1, 3]^2 for 5 steps: the
#: optimum is 30, a uniformly random policy gets 10.
CONTINUOUS_OPTIMUM = 30.0


def config(**kwargs) -> TrainerConfig:
    args = dict(
        unroll_length=4,
        mini_batch_length=2,
        mini_batch_size=64,
        num_updates_per_train_iter=4,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        replay_buffer_length=1000,
        initial_collect_steps=8,
    )
    args.update(kwargs)
    return TrainerConfig(**args)


def make_env(name=CONTINUOUS_COUNTING_ENV, num_envs=4, seed=0):
    return create_environment(
        env_name=name,
        env_load_fn=suite_gym.load,
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


def build(algorithm_cls, env, cfg=None, lr=3e-3, hidden=(32, 32), **kwargs):
    """``algorithm_cls`` on ``env`` with small actor and Adam(lr) for the actor, critics
    and α (``alpha_optimizer=None`` in ``kwargs`` leaves α without one)."""
    kwargs.setdefault("alpha_optimizer", Adam(lr=lr))
    return algorithm_cls(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=cfg or config(),
        actor_network_ctor=functools.partial(SquashedNormalActorNetwork, fc_layer_params=hidden),
        actor_optimizer=Adam(lr=lr),
        critic_optimizer=Adam(lr=lr),
        **kwargs,
    )


def learns_counting_env(make, num_iterations=100) -> float:
    """The evaluation return after ``num_iterations`` on the continuous counting env."""
    seeding.set_random_seed(0)
    env = make_env(seed=0)
    eval_env = make_env(num_envs=2, seed=7)
    try:
        alg = make(env, config())
        for _ in range(num_iterations):
            alg.train_iter()
        return evaluate(alg, eval_env)
    finally:
        env.close()
        eval_env.close()


def learns_pendulum(make, num_iterations=6000) -> float:
    """SAC's slow test's settings on Pendulum-v1 (``test_sac_learns_pendulum_slow``)."""
    seeding.set_random_seed(0)
    env = make_env("Pendulum-v1", num_envs=1, seed=0)
    eval_env = make_env("Pendulum-v1", num_envs=5, seed=7)
    cfg = config(
        unroll_length=1,
        mini_batch_size=256,
        num_updates_per_train_iter=1,
        replay_buffer_length=10_000,
        initial_collect_steps=100,
    )
    try:
        alg = make(env, cfg)
        for _ in range(num_iterations):
            alg.train_iter()
        return evaluate(alg, eval_env, num_episodes=5)
    finally:
        env.close()
        eval_env.close()


def _short_run(make, seed):
    seeding.set_random_seed(seed)
    env = make_env(num_envs=2, seed=seed)
    alg = make(env, config(initial_collect_steps=4))
    for _ in range(4):
        alg.train_iter()
    return alg, env


def check_same_seed_same_parameters(make) -> None:
    """Two runs with one seed end with equal parameters; another seed differs."""
    runs = [_short_run(make, seed) for seed in (3, 3, 4)]
    try:
        pa, pb, pc = (parameters_of(alg) for alg, _ in runs)
        assert all(torch.equal(pa[k], pb[k]) for k in pa)
        assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    finally:
        for _, env in runs:
            env.close()


def check_checkpoint_round_trip(make, num_optimizers=3) -> None:
    """A trained algorithm's ``state_dict`` loaded into a fresh one: the same policy and
    critics, and the same next update."""
    a, env = _short_run(make, 5)
    try:
        buffer = io.BytesIO()
        torch.save(a.state_dict(), buffer)
        buffer.seek(0)
        state = torch.load(buffer, weights_only=True)
        assert sum(k.startswith("_optimizers.") for k in state) == num_optimizers
        assert any("_target_critic_networks" in k for k in state)
        seeding.set_random_seed(99)
        b = make(env, config(initial_collect_steps=4))
        b.load_state_dict(state)
        pa, pb = parameters_of(a), parameters_of(b)
        assert all(torch.equal(pa[k], pb[k]) for k in pa)
        obs = torch.linspace(0, 5, 6).reshape(6, 1)
        ts = TimeStep(step_type=torch.ones(6, dtype=torch.int32), observation=obs)
        assert torch.equal(a.predict_step(ts, ()).output, b.predict_step(ts, ()).output)
        seeding.set_random_seed(7)
        a.learner._train_on_samples()
        seeding.set_random_seed(7)
        b.learner._replay_buffer = a.learner._replay_buffer
        b.learner._train_on_samples()
        pa, pb = parameters_of(a), parameters_of(b)
        assert all(torch.equal(pa[k], pb[k]) for k in pa)
    finally:
        env.close()


def minibatch(obs_dim=1, action_dim=2, batch_size=3, seed=0) -> Experience:
    """A ``[T=2, B]`` minibatch of random observations and actions, rewards 1, 2, ...;
    column 1's row 1 is a terminal LAST (discount 0)."""
    g = torch.Generator().manual_seed(seed)
    step_type = torch.full((2, batch_size), int(StepType.MID), dtype=torch.int32)
    discount = torch.ones(2, batch_size)
    if batch_size > 1:
        step_type[1, 1] = int(StepType.LAST)
        discount[1, 1] = 0.0
    reward = torch.arange(2 * batch_size, dtype=torch.float32).reshape(2, batch_size)
    ts = TimeStep(
        step_type=step_type,
        reward=reward,
        discount=discount,
        observation=torch.rand(2, batch_size, obs_dim, generator=g),
        prev_action=torch.zeros(2, batch_size, action_dim),
    )
    action = torch.rand(2, batch_size, action_dim, generator=g) * 4 - 1
    return Experience(time_step=ts, rollout_info=SacRolloutInfo(action=action))
