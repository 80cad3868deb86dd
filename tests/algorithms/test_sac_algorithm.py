"""SAC: the losses by hand, learning tiny envs, time-limit bootstrapping, determinism, save/load."""

from __future__ import annotations

import functools
import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from alf.algorithms.config import TrainerConfig
from alf.algorithms.sac_algorithm import (
    SacAlgorithm,
    SacInfo,
    SquashedNormalActorNetwork,
    _sample_with_log_prob,
)
from alf.algorithms.sac_loss import sac_loss
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_structures import StepType, TimeStep
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.critic_networks import CriticNetwork
from alf.networks.projection_networks import (
    BetaProjectionNetwork,
    StableNormalProjectionNetwork,
)
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import (
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    parameters_of,
)

CONTINUOUS_COUNTING_ENV = "alf.environments.toy_envs:ContinuousCountingEnv-v0"
#: ContinuousCountingEnv pays the sum of the 2-d action in [-1, 3]^2 for 5 steps:
#: the optimum is 5 * (3 + 3) = 30; a uniformly random policy gets 5 * (1 + 1) = 10.
CONTINUOUS_OPTIMUM = 30.0


# -- toy env for time-limit bootstrapping ----------------------------------------------


class ConstantRewardEnv(gym.Env):
    """Reward 1 at every step; the episode ends after ``episode_length`` steps.

    Args:
        end_by: ``'truncation'`` (a time limit: gymnasium ``truncated``) or
            ``'termination'`` (the task ends: ``terminated``).
        episode_length: number of steps of an episode.
        show_step: observe the fraction of the episode left, ``1 - t / episode_length``
            (else a constant 0).
    """

    def __init__(self, end_by="truncation", episode_length=20, show_step=False):
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self._terminate = end_by == "termination"
        self._length = episode_length
        self._show_step = show_step
        self._count = 0

    def _obs(self):
        left = 1.0 - self._count / self._length if self._show_step else 0.0
        return np.array([left], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._count = 0
        return self._obs(), {}

    def step(self, action):
        self._count += 1
        ended = self._count >= self._length
        return self._obs(), 1.0, ended and self._terminate, ended and not self._terminate, {}


if "SacConstantRewardEnv-v0" not in gym.envs.registry:
    gym.register(
        id="SacConstantRewardEnv-v0",
        entry_point=f"{__name__}:ConstantRewardEnv",
    )


# -- helpers ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op thread, as training uses (TrainerConfig.num_threads): with more, the
    small matrix products of these tests are several times slower on a busy machine."""
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)


def _config(**kwargs):
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


def _env(name, num_envs=4, seed=0, **load_kwargs):
    return create_environment(
        env_name=name,
        env_load_fn=functools.partial(suite_gym.load, **load_kwargs),
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


def _sac(env, config=None, lr=3e-3, hidden=(32, 32), gamma=0.9, actor_ctor=None, **kwargs):
    actor_ctor = actor_ctor or functools.partial(SquashedNormalActorNetwork, fc_layer_params=hidden)
    return SacAlgorithm(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config or _config(),
        actor_network_ctor=actor_ctor,
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=hidden),
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=gamma),
        actor_optimizer=Adam(lr=lr),
        critic_optimizer=Adam(lr=lr),
        alpha_optimizer=Adam(lr=lr),
        **kwargs,
    )


def _train(alg, num_iterations):
    for _ in range(num_iterations):
        alg.train_iter()
    return alg


# -- the losses by hand ----------------------------------------------------------------


def test_sac_loss_by_hand():
    """J_Q, J_π and J_α of one [T=2, B=3] minibatch against hand-expanded numbers."""
    gamma, log_alpha, target_entropy = 0.9, torch.tensor(math.log(0.5)), -1.0
    mid, last = StepType.MID, StepType.LAST
    info = SacInfo(
        reward=torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]),
        # column 1: row 1 is a terminal LAST (discount 0); column 2: row 0 is LAST
        step_type=torch.tensor([[mid, mid, last], [mid, last, StepType.FIRST]]),
        discount=torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]),
        critic_q=torch.tensor([[[1.0, 2.0], [0.5, 0.0], [9.0, 9.0]], [[0.0, 0.0]] * 3]),
        target_v=torch.tensor([[0.0, 0.0, 0.0], [4.0, 5.0, 6.0]]),
        neg_entropy=torch.tensor([[0.2, -0.4, 0.0]]),
        actor_q=torch.tensor([[3.0, 1.0, 0.0]]),
    )
    loss = sac_loss(info, log_alpha, OneStepTDLoss(gamma=gamma), target_entropy).loss
    y0 = 1.0 + gamma * 4.0  # bootstraps
    y1 = 2.0  # terminal: no bootstrap
    critic = torch.tensor([(1 - y0) ** 2 + (2 - y0) ** 2, (0.5 - y1) ** 2 + (0 - y1) ** 2, 0.0])
    actor = 0.5 * info.neg_entropy[0] - info.actor_q[0]
    alpha = -math.log(0.5) * (info.neg_entropy[0] + target_entropy)
    expected = torch.stack([critic + actor + alpha, torch.zeros(3)])
    torch.testing.assert_close(loss, expected)


def test_sac_loss_gradients_reach_only_their_parameters():
    """α gets no gradient from J_π, the actor none from J_α (detached terms)."""
    log_alpha = torch.tensor(0.3, requires_grad=True)
    neg_entropy = torch.tensor([[0.5]], requires_grad=True)
    info = SacInfo(
        reward=torch.zeros(2, 1),
        step_type=torch.full((2, 1), StepType.MID),
        discount=torch.ones(2, 1),
        critic_q=torch.zeros(2, 1, 2),
        target_v=torch.zeros(2, 1),
        neg_entropy=neg_entropy,
        actor_q=torch.zeros(1, 1),
    )
    loss = sac_loss(info, log_alpha, OneStepTDLoss(), target_entropy=-1.0).loss.sum()
    loss.backward()
    assert torch.isclose(log_alpha.grad, -(torch.tensor(0.5) - 1.0))
    assert torch.isclose(neg_entropy.grad[0, 0], torch.exp(torch.tensor(0.3)))


def test_squashed_gaussian_log_prob_matches_torch():
    torch.manual_seed(0)
    net = SquashedNormalActorNetwork(
        input_tensor_spec=TensorSpec((3,)),
        action_spec=BoundedTensorSpec((2,), minimum=[-1.0, 0.0], maximum=[3.0, 0.5]),
        fc_layer_params=(8,),
    ).double()  # float64: in float32, tanh saturates and a sample at a bound cannot be inverted
    dist, _ = net(torch.randn(64, 3, dtype=torch.float64) * 3)
    action, log_prob = _sample_with_log_prob(dist)
    assert action.shape == (64, 2) and log_prob.shape == (64,)
    assert (action[:, 0] >= -1).all() and (action[:, 0] <= 3).all()
    torch.testing.assert_close(log_prob, dist.log_prob(action))


# -- learning ----------------------------------------------------------------------------


def test_sac_learns_continuous_counting_env():
    """Reward = sum of the action in [-1, 3]^2: the policy must push both dims to 3."""
    seeding.set_random_seed(0)
    env = _env(CONTINUOUS_COUNTING_ENV, seed=0)
    eval_env = _env(CONTINUOUS_COUNTING_ENV, num_envs=2, seed=7)
    try:
        alg = _train(_sac(env), 100)
        assert evaluate(alg, eval_env) > 0.9 * CONTINUOUS_OPTIMUM  # random: 10
    finally:
        env.close()
        eval_env.close()


_ALF_PROJECTIONS = {
    # the form of ALF's SAC confs (sac_carla_conf, bc_pendulum_conf)
    "stable_normal": functools.partial(
        StableNormalProjectionNetwork,
        state_dependent_std=True,
        squash_mean=False,
        scale_distribution=True,
        min_std=1e-3,
        max_std=10.0,
    ),
    "beta": functools.partial(BetaProjectionNetwork, min_concentration=1.0),  # sac_safety_gym
}


@pytest.mark.parametrize("projection", sorted(_ALF_PROJECTIONS))
def test_sac_learns_continuous_counting_env_with_alf_projections(projection):
    """As above, with ``ActorDistributionNetwork`` and one of ALF's projection networks."""
    seeding.set_random_seed(0)
    env = _env(CONTINUOUS_COUNTING_ENV, seed=0)
    eval_env = _env(CONTINUOUS_COUNTING_ENV, num_envs=2, seed=7)
    actor = functools.partial(
        ActorDistributionNetwork,
        fc_layer_params=(32, 32),
        continuous_projection_net_ctor=_ALF_PROJECTIONS[projection],
    )
    try:
        alg = _train(_sac(env, actor_ctor=actor), 100)
        assert evaluate(alg, eval_env) > 0.9 * CONTINUOUS_OPTIMUM  # random: 10
    finally:
        env.close()
        eval_env.close()


def test_sac_learns_discrete_counting_env():
    """Discrete SAC (Christodoulou 2019): the greedy policy picks action 3 at every step."""
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        alg = _train(_sac(env), 40)
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM  # random: 7.5
    finally:
        env.close()
        eval_env.close()


# -- time-limit bootstrapping ------------------------------------------------------------


def _q_after_training(end_by, show_step, num_iterations=80):
    seeding.set_random_seed(0)
    env = _env("SacConstantRewardEnv-v0", seed=0, end_by=end_by, show_step=show_step)
    try:
        cfg = _config(num_updates_per_train_iter=8, mini_batch_size=128)
        alg = _train(
            _sac(env, cfg, lr=1e-2, use_entropy_reward=False, target_update_tau=0.1),
            num_iterations,
        )
    finally:
        env.close()
    steps = torch.tensor([0.0, 10.0, 15.0])
    obs = (1.0 - steps / 20.0).unsqueeze(-1) if show_step else torch.zeros(3, 1)
    actions = torch.tensor([[-0.5], [0.0], [0.5]])
    with torch.no_grad():
        q, _ = alg.critic_networks((obs, actions))
    return q  # [3, 2]: both critics at steps 0, 10 and 15


def test_time_limit_bootstraps_and_termination_does_not():
    """Reward 1 per step, γ = 0.9, episodes of 20 steps.

    *Truncation* (a time limit): the observation is constant, because a time limit
    is not part of the state — the MDP is stationary and the true value is
    ``1 / (1 - γ) = 10`` everywhere. The TD target at the truncated step
    bootstraps from the (identical) final observation, so Q converges to 10.
    Treating the truncation as a termination would instead give
    ``Q = 1 + γ (19/20) Q``, i.e. about 6.9.

    *Termination*: the task really ends, so the value depends on the time left, which
    the observation shows (``1 - t / 20``): ``Q_t = (1 - γ^(20 - t)) / (1 - γ)``,
    8.78 at ``t = 0``, 6.51 at 10 and 4.10 at 15. (Bootstrapping through the
    termination would give 10 everywhere.)

    The reward ignores the action, so Q is the same for every action; SAC's entropy
    term is left out of the target (``use_entropy_reward=False``) so the expected
    values are plain returns.
    """
    q_truncated = _q_after_training("truncation", show_step=False)
    assert torch.allclose(q_truncated, torch.full_like(q_truncated, 10.0), atol=0.5)
    q_terminated = _q_after_training("termination", show_step=True)
    expected = torch.tensor([(1 - 0.9 ** (20 - t)) / 0.1 for t in (0, 10, 15)])
    assert torch.allclose(q_terminated, expected[:, None].expand(3, 2), atol=0.4)


# -- determinism and checkpoints ---------------------------------------------------------


def _short_run(seed, discrete=False):
    seeding.set_random_seed(seed)
    env = (
        counting_env(num_envs=2, seed=seed)
        if discrete
        else _env(CONTINUOUS_COUNTING_ENV, num_envs=2, seed=seed)
    )
    alg = _train(_sac(env, _config(initial_collect_steps=4)), 4)
    return alg, env


@pytest.mark.parametrize("discrete", [False, True])
def test_sac_same_seed_same_parameters_different_seed_different(discrete):
    a, env_a = _short_run(3, discrete)
    b, env_b = _short_run(3, discrete)
    c, env_c = _short_run(4, discrete)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()


def test_sac_checkpoint_round_trip_gives_identical_outputs():
    a, env = _short_run(5)
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)  # as checkpoints do: no tensor shared with `a`
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert sum(k.startswith("_optimizers.") for k in state) == 3  # actor, critic, alpha
    assert any("_target_critic_networks" in k for k in state)
    seeding.set_random_seed(99)
    b = _sac(env, _config(initial_collect_steps=4))
    b.load_state_dict(state)
    try:
        obs = torch.arange(6, dtype=torch.float32).reshape(6, 1)
        ts = TimeStep(step_type=torch.ones(6, dtype=torch.int32), observation=obs)
        out_a = a.predict_step(ts, ()).output
        assert torch.equal(out_a, b.predict_step(ts, ()).output)
        actions = out_a.clone()
        for name in ("critic_networks", "target_critic_networks"):
            qa, _ = getattr(a, name)((obs, actions))
            qb, _ = getattr(b, name)((obs, actions))
            assert torch.equal(qa, qb)
        assert torch.equal(a.log_alpha, b.log_alpha) and a.log_alpha.item() != 0.0
        for (_, opt_a, _), (_, opt_b, _) in zip(a.optimizers(), b.optimizers()):
            state_a, state_b = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
            assert state_a.keys() == state_b.keys() and state_a
            assert all(torch.equal(state_a[i]["exp_avg"], state_b[i]["exp_avg"]) for i in state_a)
        # Both continue identically.
        seeding.set_random_seed(7)
        a.learner._train_on_samples()
        seeding.set_random_seed(7)
        b.learner._replay_buffer = a.learner._replay_buffer
        b.learner._train_on_samples()
        pa, pb = parameters_of(a), parameters_of(b)
        assert all(torch.equal(pa[k], pb[k]) for k in pa)
    finally:
        env.close()


def test_sac_rejects_bad_settings():
    env = counting_env(num_envs=1)
    try:
        with pytest.raises(ValueError, match="mini_batch_length"):
            _sac(env, _config(mini_batch_length=1))
        with pytest.raises(ValueError, match="reward_weights"):
            SacAlgorithm(env.observation_spec(), env.action_spec(), reward_spec=TensorSpec((2,)))
    finally:
        env.close()


@pytest.mark.parametrize("discrete", [False, True])
def test_random_initial_collect_acts_uniformly_until_training_starts(discrete):
    """``random_initial_collect``: uniform actions, the policy not consulted, until every
    env has ``initial_collect_steps`` steps; the policy from then on."""
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4) if discrete else _env(CONTINUOUS_COUNTING_ENV)
    try:
        alg = _sac(env, _config(initial_collect_steps=4), random_initial_collect=True)
        calls = []
        alg.actor_network.register_forward_hook(lambda *args: calls.append(1))
        num = 4000
        inputs = TimeStep(
            step_type=torch.ones(num, dtype=torch.int32),
            observation=env.observation_spec().zeros((num,)),
        )
        with torch.no_grad():
            action = alg.rollout_step(inputs, ()).output
        assert alg.initial_collect_pending() and not calls
        if discrete:  # uniform over {0, 1, 2, 3}
            counts = torch.bincount(action.flatten(), minlength=4).float()
            assert ((counts - num / 4).abs() < 0.1 * num / 4).all(), counts
        else:  # uniform in [-1, 3]^2: mean 1, std 4 / sqrt(12)
            assert float(action.min()) >= -1.0 and float(action.max()) <= 3.0
            assert (action.mean(0) - 1.0).abs().max() < 0.1
            assert (action.std(0) - 4 / math.sqrt(12)).abs().max() < 0.05
        alg.train_iter()  # unroll_length 4: every env now has 4 steps
        assert not alg.initial_collect_pending()
        with torch.no_grad():
            alg.rollout_step(inputs, ())
        assert calls
    finally:
        env.close()


def test_actor_network_default_is_squashed_and_discrete_entropy_target():
    spec = BoundedTensorSpec((3,), minimum=-2.0, maximum=2.0)
    alg = SacAlgorithm(TensorSpec((4,)), spec)
    assert alg.target_entropy == -3.0
    dist, _ = alg.actor_network(torch.randn(5, 4))
    action, _ = _sample_with_log_prob(dist)
    assert (action.abs() <= 2.0).all()
    discrete = SacAlgorithm(
        TensorSpec((4,)),
        BoundedTensorSpec((), torch.int64, minimum=0, maximum=3),
        actor_network_ctor=ActorDistributionNetwork,
    )
    assert math.isclose(discrete.target_entropy, 0.5 * math.log(4))


@pytest.mark.slow
def test_sac_learns_pendulum_slow():
    """The example conf's settings on Pendulum-v1 for 6,000 steps (a few minutes).

    A random policy scores about -1,200; SAC passes -400 by 6,000 steps (see
    benchmarks/RESULTS.md). The fast twin is ``test_sac_learns_continuous_counting_env``.
    """
    seeding.set_random_seed(0)
    env = _env("Pendulum-v1", num_envs=1, seed=0)
    eval_env = _env("Pendulum-v1", num_envs=5, seed=7)
    cfg = _config(
        unroll_length=1,
        mini_batch_size=256,
        num_updates_per_train_iter=1,
        replay_buffer_length=10_000,
        initial_collect_steps=100,
    )
    try:
        alg = _train(_sac(env, cfg, lr=1e-3, hidden=(256, 256), gamma=0.99), 6000)
        assert evaluate(alg, eval_env, num_episodes=5) > -400.0
    finally:
        env.close()
        eval_env.close()
