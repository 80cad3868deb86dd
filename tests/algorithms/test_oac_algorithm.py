"""OAC: the optimistic exploration mean against a hand computation with linear critics,
SAC's rollout without ``explore``, learning, determinism, checkpoints."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from alf.algorithms.oac_algorithm import OacAlgorithm
from alf.algorithms.sac_algorithm import SquashedNormalActorNetwork, _squashed_normal_parts
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_structures import TimeStep
from alf.networks.critic_networks import CriticNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import evaluate, parameters_of
from tests.algorithms.test_sac_algorithm import (
    CONTINUOUS_COUNTING_ENV,
    CONTINUOUS_OPTIMUM,
    _config,
    _env,
    _one_torch_thread,  # noqa: F401 (an autouse fixture)
    _train,
)

OBS_SPEC = TensorSpec((1,))
ACTION_SPEC = BoundedTensorSpec((2,), minimum=[-1.0, 0.0], maximum=[3.0, 1.0])


def _oac(env=None, config=None, lr=3e-3, hidden=(32, 32), gamma=0.9, **kwargs):
    specs = (
        (env.observation_spec(), env.action_spec(), env.reward_spec())
        if env is not None
        else (OBS_SPEC, ACTION_SPEC, TensorSpec(()))
    )
    return OacAlgorithm(
        *specs,
        env=env,
        config=config or _config(),
        actor_network_ctor=functools.partial(SquashedNormalActorNetwork, fc_layer_params=hidden),
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=hidden),
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=gamma),
        actor_optimizer=Adam(lr=lr),
        critic_optimizer=Adam(lr=lr),
        alpha_optimizer=Adam(lr=lr),
        **kwargs,
    )


def _linear_critics(alg):
    """Q_1(s, a) = s + 2 a_1 - a_2, Q_2(s, a) = -s + a_1 + 3 a_2 + 1 (no hidden layer)."""
    weights = torch.tensor([[[1.0], [2.0], [-1.0]], [[-1.0], [1.0], [3.0]]])  # [R, in, out]
    with torch.no_grad():
        alg.critic_networks._weights[0].copy_(weights)
        alg.critic_networks._biases[0].copy_(torch.tensor([[[0.0]], [[1.0]]]))


def _dq_ub_da(obs, a, beta):
    """∂Q_UB/∂a of ``_linear_critics``."""
    q1 = obs[:, 0] + 2 * a[:, 0] - a[:, 1]
    q2 = -obs[:, 0] + a[:, 0] + 3 * a[:, 1] + 1
    spread = torch.sign(q1 - q2)[:, None] * torch.tensor([0.5, -2.0])
    return torch.tensor([1.5, 1.0]) + beta * spread


def test_explore_mean_and_rollout_by_hand():
    torch.manual_seed(0)
    beta, delta = 4.6, 2.5
    alg = _oac(hidden=(), config=_config(initial_collect_steps=0), beta_ub=beta,
               explore_delta=delta)  # fmt: skip
    _linear_critics(alg)
    obs = torch.tensor([[0.5], [-2.0], [4.0]])
    ts = TimeStep(step_type=torch.ones(3, dtype=torch.int32), observation=obs)
    dist, _ = alg.actor_network(obs)
    loc, scale, mean, magnitude = (x.detach() for x in _squashed_normal_parts(dist))
    assert torch.equal(mean, torch.tensor([1.0, 0.5])) and torch.equal(
        magnitude, torch.tensor([2.0, 0.5])
    )
    # by hand: a = m + h tanh(u); Q_UB = (Q1 + Q2) / 2 + β |Q1 - Q2| / 2
    a = mean + magnitude * torch.tanh(loc)
    g = _dq_ub_da(obs, a, beta) * magnitude * (1 - torch.tanh(loc) ** 2)
    var = scale**2
    shift = delta * var * g / (torch.sqrt((g * g * var).sum(-1, keepdim=True)) + 1e-6)
    explore_loc = loc + shift
    with torch.no_grad():
        torch.testing.assert_close(
            alg.explore_mean(obs, (loc, scale, mean, magnitude)), explore_loc
        )
    # the shift's Mahalanobis norm is explore_delta
    torch.testing.assert_close(((shift**2 / var).sum(-1)).sqrt(), torch.full((3,), delta))
    # the rollout samples N(μ_E, Σ_T), squashed; in inference mode, as the unroller runs it
    seeding.set_random_seed(5)
    with torch.inference_mode():
        step = alg.rollout_step(ts, ())
    seeding.set_random_seed(5)
    alg.actor_network(obs)  # the same random draws as the rollout's actor call (none)
    eps = torch.randn(3, 2)
    expected = mean + magnitude * torch.tanh(explore_loc + scale * eps)
    torch.testing.assert_close(step.output, expected)
    assert torch.equal(step.info.action, step.output)
    assert all(p.grad is None for p in alg.critic_networks.parameters())


def test_dqda_clipping_and_no_explore():
    torch.manual_seed(1)
    alg = _oac(hidden=(), config=_config(initial_collect_steps=0), dqda_clipping=0.01)
    _linear_critics(alg)
    obs = torch.tensor([[0.5], [1.0]])
    parts = [x.detach() for x in _squashed_normal_parts(alg.actor_network(obs)[0])]
    loc, scale, mean, magnitude = parts
    dq_da = _dq_ub_da(obs, mean + magnitude * torch.tanh(loc), 4.6)
    g = 0.01 * torch.sign(dq_da)  # every entry clipped (|dQ_UB/du| >= 0.01 here)
    assert ((dq_da * magnitude * (1 - torch.tanh(loc) ** 2)).abs() > 0.01).all()
    expected = loc + 6.8 * scale**2 * g / (
        torch.sqrt((g * g * scale**2).sum(-1, keepdim=True)) + 1e-6
    )
    torch.testing.assert_close(alg.explore_mean(obs, parts), expected)
    sac_like = _oac(hidden=(), config=_config(initial_collect_steps=0), explore=False)
    calls = []
    sac_like.critic_networks.register_forward_hook(lambda *args: calls.append(1))
    ts = TimeStep(step_type=torch.ones(2, dtype=torch.int32), observation=obs)
    with torch.no_grad():
        sac_like.rollout_step(ts, ())
    assert not calls  # SAC's rollout: the critics are not consulted


def test_rejects_bad_settings():
    with pytest.raises(ValueError, match="continuous"):
        OacAlgorithm(OBS_SPEC, BoundedTensorSpec((), torch.int64, minimum=0, maximum=2))
    with pytest.raises(ValueError, match=">= 2 critics"):
        OacAlgorithm(OBS_SPEC, ACTION_SPEC, num_critic_replicas=1)


def test_oac_learns_continuous_counting_env():
    """Reward = sum of the action in [-1, 3]^2 (random: 10, optimum 30)."""
    seeding.set_random_seed(0)
    env = _env(CONTINUOUS_COUNTING_ENV, seed=0)
    eval_env = _env(CONTINUOUS_COUNTING_ENV, num_envs=2, seed=7)
    try:
        alg = _train(_oac(env), 100)
        assert evaluate(alg, eval_env) > 0.9 * CONTINUOUS_OPTIMUM
    finally:
        env.close()
        eval_env.close()


def _short_run(seed):
    seeding.set_random_seed(seed)
    env = _env(CONTINUOUS_COUNTING_ENV, num_envs=2, seed=seed)
    return _train(_oac(env, _config(initial_collect_steps=4)), 4), env


def test_oac_same_seed_same_parameters_different_seed_different():
    (a, env_a), (b, env_b), (c, env_c) = _short_run(3), _short_run(3), _short_run(4)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()


def test_oac_checkpoint_round_trip():
    a, env = _short_run(5)
    state = a.state_dict()
    seeding.set_random_seed(99)
    b = _oac(env, _config(initial_collect_steps=0))  # a has collected its initial steps
    b.load_state_dict(state)
    try:
        obs = torch.arange(4, dtype=torch.float32).reshape(4, 1)
        ts = TimeStep(step_type=torch.ones(4, dtype=torch.int32), observation=obs)
        outputs = []
        for alg in (a, b):
            seeding.set_random_seed(1)
            with torch.inference_mode():
                outputs.append(alg.rollout_step(ts, ()).output)
        assert torch.equal(*outputs)
        pa, pb = parameters_of(a), parameters_of(b)
        assert all(torch.equal(pa[k], pb[k]) for k in pa)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # minutes on a busy 2-core machine
def test_oac_learns_pendulum_slow():
    """SAC's Pendulum settings with OAC's exploration (the paper's β_UB = 4.66 and
    δ = 23.53, i.e. explore_delta = sqrt(2 δ)): a random policy scores about -1,200."""
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
        alg = _oac(
            env, cfg, lr=1e-3, hidden=(256, 256), gamma=0.99, beta_ub=4.66,
            explore_delta=math.sqrt(2 * 23.53),
        )  # fmt: skip
        alg = _train(alg, 6000)
        assert evaluate(alg, eval_env, num_episodes=5) > -400.0
    finally:
        env.close()
        eval_env.close()
