"""SAC without an actor (discrete actions): the critics' Boltzmann policy, its targets and
losses by hand, and learning CountingEnv."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from alf.algorithms.config import TrainerConfig
from alf.algorithms.sac_algorithm import SacAlgorithm, SacRolloutInfo
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_structures import Experience, StepType, TimeStep
from alf.networks.q_networks import QNetwork
from alf.optimizers import Adam
from alf.utils import seeding
from alf.utils.dist_utils import calc_default_target_entropy
from tests.algorithms.algorithm_test_utils import COUNTING_OPTIMUM, counting_env, evaluate

GAMMA = 0.9


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


def _sac(env, config=None, **kwargs):
    return SacAlgorithm(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config or _config(),
        actor_network_ctor=None,
        critic_network_ctor=None,
        q_network_ctor=functools.partial(QNetwork, fc_layer_params=(32, 32)),
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=GAMMA),
        critic_optimizer=Adam(lr=3e-3),
        alpha_optimizer=Adam(lr=3e-3),
        **kwargs,
    )


@pytest.fixture
def env():
    env = counting_env(num_envs=2, seed=0)
    yield env
    env.close()


def _min_q(networks, observation):
    return torch.stack([q(observation)[0] for q in networks], 1).amin(1)


def test_policy_is_the_softmax_of_the_smallest_q_over_alpha(env):
    seeding.set_random_seed(0)
    alg = _sac(env)
    assert alg.actor_network is None
    assert alg.target_entropy == pytest.approx(calc_default_target_entropy(env.action_spec()))
    with torch.no_grad():
        alg.log_alpha.fill_(math.log(0.05))
    obs = torch.tensor([[0.0], [1.0], [3.0]])
    with torch.no_grad():
        probs = torch.softmax(_min_q(alg.critic_networks, obs) / 0.05, -1)
    step = TimeStep(
        step_type=torch.full((3,), int(StepType.MID)),
        reward=torch.zeros(3),
        discount=torch.ones(3),
        observation=obs,
    )
    assert torch.allclose(alg._log_probs(obs).exp(), probs, atol=1e-6)
    assert torch.equal(alg.predict_step(step, ()).output, probs.argmax(-1))
    # rollout samples the policy: frequencies within 5 binomial standard deviations
    num = 3000
    many = step._replace(step_type=step.step_type.repeat(num), observation=obs.repeat(num, 1))
    actions = alg.rollout_step(many, ()).output.reshape(num, 3)
    assert actions.dtype == env.action_spec().dtype
    for b in range(3):
        freq = torch.bincount(actions[:, b].long(), minlength=4).float() / num
        sigma = (probs[b] * (1 - probs[b]) / num).sqrt()
        assert bool((freq - probs[b]).abs().le(5 * sigma + 1e-3).all())


def test_epsilon_greedy_evaluation(env):
    seeding.set_random_seed(1)
    alg = _sac(env, _config(epsilon_greedy=1.0))
    obs = torch.zeros(4000, 1)
    step = TimeStep(
        step_type=torch.full((4000,), int(StepType.MID)),
        reward=torch.zeros(4000),
        discount=torch.ones(4000),
        observation=obs,
    )
    with torch.no_grad():
        probs = torch.softmax(_min_q(alg.critic_networks, obs[:1]) / alg.log_alpha.exp(), -1)
    freq = torch.bincount(alg.predict_step(step, ()).output.long(), minlength=4) / 4000.0
    assert torch.allclose(freq, probs[0], atol=0.05)


def test_targets_and_losses_by_hand(env):
    seeding.set_random_seed(2)
    alg = _sac(env)
    with torch.no_grad():
        alg.log_alpha.fill_(math.log(0.3))
    alpha = 0.3
    obs = torch.tensor([[[0.0], [2.0], [4.0]], [[1.0], [3.0], [0.0]]])  # [T=2, B=3, 1]
    action = torch.tensor([[1, 3, 0], [2, 2, 2]])
    step_type = torch.tensor([[int(StepType.MID)] * 3, [1, 1, 2]])  # the last column ends
    reward = torch.tensor([[0.0, 0.0, 0.0], [1.0, 3.0, 2.0]])
    discount = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    experience = Experience(
        time_step=TimeStep(step_type=step_type, reward=reward, discount=discount, observation=obs),
        rollout_info=SacRolloutInfo(action=action),
    )
    info = alg.train_steps(experience)
    loss = alg.calc_loss(info)
    with torch.no_grad():
        s, s1 = obs[0], obs[1]
        q = torch.stack([c(s)[0] for c in alg.critic_networks], 1)  # [B, 2, 4]
        critic_q = q[torch.arange(3), :, action[0]]  # [B, 2]
        pi1 = torch.softmax(_min_q(alg.critic_networks, s1) / alpha, -1)
        target_q1 = _min_q(alg.target_critic_networks, s1)
        v1 = (pi1 * (target_q1 - alpha * pi1.log())).sum(-1)
        y = reward[1] + GAMMA * discount[1] * v1
        pi = torch.softmax(q.amin(1) / alpha, -1)
        neg_entropy = (pi * pi.log()).sum(-1)
        alpha_loss = -math.log(alpha) * (neg_entropy + alg.target_entropy)
    assert torch.allclose(info.critic_q[0], critic_q, atol=1e-6)
    assert torch.allclose(info.target_v[1], v1, atol=1e-6)
    assert torch.allclose(info.neg_entropy[0], neg_entropy, atol=1e-6)
    assert info.actor_q == ()
    expected = ((critic_q - y[:, None]) ** 2).sum(-1) + alpha_loss
    assert torch.allclose(loss.loss[0], expected, atol=1e-5)
    assert torch.equal(loss.loss[1], torch.zeros(3))
    # Only the critic loss reaches the critics (the policy is held fixed), only the
    # alpha loss reaches log alpha.
    loss.loss.sum().backward(retain_graph=True)
    critic_grads = [p.grad.clone() for p in alg.critic_networks.parameters()]
    alg.zero_grad()
    critic_only = ((info.critic_q[0] - y[:, None]) ** 2).sum()
    critic_only.backward()
    for g, p in zip(critic_grads, alg.critic_networks.parameters()):
        assert torch.allclose(g, p.grad, atol=1e-6)


def test_actorless_needs_discrete_actions():
    from alf.tensor_specs import BoundedTensorSpec, TensorSpec

    with pytest.raises(ValueError, match="actor_network_ctor=None"):
        SacAlgorithm(
            observation_spec=TensorSpec((2,)),
            action_spec=BoundedTensorSpec((1,), minimum=-1.0, maximum=1.0),
            actor_network_ctor=None,
        )


def test_actorless_sac_learns_discrete_counting_env():
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        alg = _sac(env)
        for _ in range(40):
            alg.train_iter()
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM  # random: 7.5
    finally:
        env.close()
        eval_env.close()
