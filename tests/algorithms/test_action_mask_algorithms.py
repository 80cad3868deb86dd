"""Action masks in the discrete algorithms, by hand: DQN's and QR-DQN's targets maximize
over the actions legal at the next state, epsilon-greedy draws only legal actions, discrete
SAC's policy, entropy and target expectation are over the legal actions, and PPO's log π
and entropy are those of the distribution over the legal actions."""

import functools
import math

import pytest
import torch

from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.actor_critic_loss import element_wise_squared_loss
from alf.algorithms.config import TrainerConfig
from alf.algorithms.dqn_algorithm import DqnAlgorithm, DqnRolloutInfo
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.algorithms.qrdqn_algorithm import QrdqnAlgorithm
from alf.algorithms.sac_algorithm import SacAlgorithm, SacRolloutInfo
from alf.algorithms.td_loss import OneStepTDLoss
from alf.data_structures import Experience, StepType, TimeStep
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.q_networks import QNetwork
from alf.networks.value_networks import ValueNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec

GAMMA = 0.9
MID, LAST = int(StepType.MID), int(StepType.LAST)
OBS_SPEC = {
    "observation": TensorSpec((4,)),
    "action_mask": BoundedTensorSpec((4,), torch.int8, 0, 1),
}
ACTION_SPEC = BoundedTensorSpec((), torch.int64, 0, 3)


def _set_diagonal(layer, diagonal, num_quantiles=None):
    """``out[a] = diagonal[a] * x[a]`` (quantiles: ``+ (j - 1)`` for quantile ``j``)."""
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.zero_()
        for a, d in enumerate(diagonal):
            if num_quantiles is None:
                layer.weight[a, a] = d
            else:
                for j in range(num_quantiles):
                    layer.weight[a * num_quantiles + j, a] = d
                    layer.bias[a * num_quantiles + j] = j - 1.0


def _steps(observation, mask, step_type):
    return TimeStep(
        step_type=torch.tensor(step_type),
        reward=torch.zeros(len(step_type)),
        discount=torch.ones(len(step_type)),
        observation={
            "observation": torch.tensor(observation),
            "action_mask": torch.tensor(mask, dtype=torch.int8),
        },
    )


def _experience(rollout_info_cls):
    """``[T=2, B=2]``: column 0 from s0 = (1, 2, 3, 4) by action 1 to s1 = (5, 1, 3, 4) where
    only actions 1 and 2 are legal (reward 0.5); column 1 ends (terminal) at a row whose mask
    has no legal action (reward -1), which must stay finite."""
    obs = [[[1.0, 2.0, 3.0, 4.0]] * 2, [[5.0, 1.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]]]
    mask = [[[1, 1, 1, 1]] * 2, [[0, 1, 1, 0], [0, 0, 0, 0]]]
    ts = TimeStep(
        step_type=torch.tensor([[MID, MID], [MID, LAST]]),
        reward=torch.tensor([[0.0, 0.0], [0.5, -1.0]]),
        discount=torch.tensor([[1.0, 1.0], [1.0, 0.0]]),
        observation={
            "observation": torch.tensor(obs),
            "action_mask": torch.tensor(mask, dtype=torch.int8),
        },
    )
    action = torch.tensor([[1, 1], [0, 0]])
    return Experience(time_step=ts, action=action, rollout_info=rollout_info_cls(action=action))


def _dqn(cls, double_dqn, num_quantiles=None, **kwargs):
    config = TrainerConfig(
        unroll_length=1,
        mini_batch_length=2,
        mini_batch_size=2,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
    )
    alg = cls(
        OBS_SPEC,
        ACTION_SPEC,
        q_network_ctor=functools.partial(QNetwork, num_quantiles=num_quantiles),
        config=config,
        gamma=GAMMA,
        double_dqn=double_dqn,
        optimizer=Adam(lr=1e-3),
        **kwargs,
    )
    _set_diagonal(alg.q_network._fc_layers[0], [1.0, 1.0, 1.0, 1.0], num_quantiles)
    _set_diagonal(alg.target_q_network._fc_layers[0], [2.0, 4.0, 1.0, 2.0], num_quantiles)
    return alg


@pytest.mark.parametrize("double_dqn, bootstrap", [(True, 3.0), (False, 4.0)])
def test_dqn_target_maximizes_over_the_legal_actions_of_the_next_state(double_dqn, bootstrap):
    # At s1: Q = s1 = (5, 1, 3, 4), Q' = (10, 4, 3, 8); legal {1, 2}. Double DQN: the online
    # argmax over {1, 2} is 2, Q'(s1, 2) = 3 (unmasked: action 0, 10). Nature: the max of
    # Q' over {1, 2} is 4 (unmasked: 10).
    alg = _dqn(DqnAlgorithm, double_dqn, td_error_loss_fn=element_wise_squared_loss)
    info = alg.train_steps(_experience(DqnRolloutInfo))
    assert info.target_q_value[1, 0] == bootstrap
    assert torch.isfinite(info.target_q_value).all()
    loss = alg.calc_loss(info)
    target = torch.tensor([0.5 + GAMMA * bootstrap, -1.0])  # column 1: terminal, no bootstrap
    torch.testing.assert_close(loss.loss[0], (target - 2.0) ** 2)  # Q(s0, 1) = 2


@pytest.mark.parametrize("double_dqn, action", [(True, 2), (False, 1)])
def test_qrdqn_bootstrap_quantiles_are_those_of_the_best_legal_action(double_dqn, action):
    # quantiles: Q'(s1, a) + (-1, 0, 1); means as in the DQN test
    alg = _dqn(QrdqnAlgorithm, double_dqn, num_quantiles=3)
    info = alg.train_steps(_experience(DqnRolloutInfo))
    value = {2: 3.0, 1: 4.0}[action]
    torch.testing.assert_close(info.target_q_value[1, 0], torch.tensor([-1.0, 0.0, 1.0]) + value)
    assert torch.isfinite(alg.calc_loss(info).loss).all()


def _random_masks(n, seed=0):
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(n, 4, generator=generator) < 0.5
    mask[torch.arange(n), torch.randint(0, 4, (n,), generator=generator)] = True
    obs = torch.randn(n, 4, generator=generator)
    return _steps(obs.tolist(), mask.int().tolist(), [MID] * n), mask


def test_epsilon_greedy_draws_only_legal_actions():
    torch.manual_seed(0)
    n = 10_000
    steps, mask = _random_masks(n)
    for epsilon in (1.0, 0.5):
        alg = _dqn(DqnAlgorithm, True, rollout_epsilon_greedy=epsilon, random_initial_collect=False)
        action = alg.rollout_step(steps, ()).output
        assert mask[torch.arange(n), action].all()
        greedy = alg.predict_step(steps, ()).output
        assert mask[torch.arange(n), greedy].all()
        q = steps.observation["observation"].masked_fill(~mask, -1e9)
        assert torch.equal(greedy, q.argmax(-1))
        explored = (action != greedy).float().mean()
        # a random legal action differs from the greedy one w.p. 1 - 1/|legal| (5/12 here)
        assert abs(float(explored) - epsilon * (1 - (1 / mask.sum(-1)).mean())) < 0.03
    # a row that is not LAST without a legal action: one line, naming the algorithm
    bad = _steps([[0.0] * 4], [[0, 0, 0, 0]], [MID])
    with pytest.raises(ValueError, match=r"^DqnAlgorithm: observation\['action_mask'\] has no"):
        alg.rollout_step(bad, ())
    assert alg.predict_step(bad, ()).output.shape == (1,)  # evaluation: all legal


def _sac(actor, alpha):
    config = TrainerConfig(
        unroll_length=1,
        mini_batch_length=2,
        mini_batch_size=2,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        initial_collect_steps=100,
    )
    alg = SacAlgorithm(
        OBS_SPEC,
        ACTION_SPEC,
        config=config,
        actor_network_ctor=(
            functools.partial(ActorDistributionNetwork, fc_layer_params=()) if actor else None
        ),
        critic_network_ctor=None,
        q_network_ctor=QNetwork,
        critic_loss_ctor=functools.partial(OneStepTDLoss, gamma=GAMMA),
        random_initial_collect=True,
        initial_log_alpha=math.log(alpha),
    )
    # critics: Q1 = s, Q2 = 2 s (min: s for s >= 0); targets: Q' = 2 s and 3 s (min 2 s)
    for nets, scales in (
        (alg.critic_networks, (1.0, 2.0)),
        (alg.target_critic_networks, (2.0, 3.0)),
    ):
        for net, scale in zip(nets, scales):
            _set_diagonal(net._fc_layers[0], [scale] * 4)
    if actor:  # logits = -s
        _set_diagonal(alg.actor_network._projection_net._projection_layer, [-1.0] * 4)
    return alg


def _softmax_over(values, legal):
    z = sum(math.exp(values[a]) for a in legal)
    return {a: math.exp(values[a]) / z for a in legal}


@pytest.mark.parametrize("actor, alpha", [(False, 0.5), (False, 3.0), (True, 0.5)])
def test_discrete_sac_expectations_are_over_the_legal_actions(actor, alpha):
    alg = _sac(actor, alpha)
    info = alg.train_steps(_experience(SacRolloutInfo))
    s0, s1 = [1.0, 2.0, 3.0, 4.0], [5.0, 1.0, 3.0, 4.0]
    # π(·|s1) over {1, 2}: softmax(min Q / α) without an actor, softmax(-s1) with one
    pi1 = _softmax_over([-x if actor else x / alpha for x in s1], [1, 2])
    v1 = sum(p * (2 * s1[a] - alpha * math.log(p)) for a, p in pi1.items())
    torch.testing.assert_close(info.target_v[1, 0], torch.tensor(v1))
    # at s0 every action is legal: the plain softmax
    pi0 = _softmax_over([-x if actor else x / alpha for x in s0], range(4))
    torch.testing.assert_close(
        info.neg_entropy[0, 0], torch.tensor(sum(p * math.log(p) for p in pi0.values()))
    )
    if actor:
        actor_q = sum(p * s0[a] for a, p in pi0.items())
        torch.testing.assert_close(info.actor_q[0, 0], torch.tensor(actor_q))
    loss = alg.calc_loss(info)
    assert torch.isfinite(info.target_v).all() and torch.isfinite(loss.loss).all()
    # rollout (random initial collection, then the policy) and evaluation: legal only
    steps, mask = _random_masks(10_000, seed=1)
    assert mask[torch.arange(10_000), alg.rollout_step(steps, ()).output].all()
    alg._random_initial_collect = False
    assert mask[torch.arange(10_000), alg.rollout_step(steps, ()).output].all()
    assert mask[torch.arange(10_000), alg.predict_step(steps, ()).output].all()


def _actor_critic(cls=PPOAlgorithm, action_spec=ACTION_SPEC, **kwargs):
    return cls(
        observation_spec=OBS_SPEC,
        action_spec=action_spec,
        actor_network_ctor=functools.partial(ActorDistributionNetwork, fc_layer_params=()),
        value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=()),
        **kwargs,
    )


@pytest.mark.parametrize("cls", [PPOAlgorithm, ActorCriticAlgorithm])
def test_actor_critic_log_prob_and_entropy_are_over_the_legal_actions(cls):
    alg = _actor_critic(cls, loss=PPOLoss(entropy_regularization=0.01))
    _set_diagonal(alg.actor_network._projection_net._projection_layer, [1.0] * 4)  # logits = s
    steps = _steps([[5.0, 1.0, 3.0, 4.0]], [[0, 1, 1, 0]], [MID])
    rollout = alg.rollout_step(steps, alg.get_initial_rollout_state(1))
    info = rollout.info._replace(action=torch.tensor([2]))
    step = alg.train_step(steps, alg.get_initial_train_state(1), info)
    pi = _softmax_over([5.0, 1.0, 3.0, 4.0], [1, 2])
    torch.testing.assert_close(step.info.log_prob, torch.tensor([math.log(pi[2])]))
    entropy = -sum(p * math.log(p) for p in pi.values())
    torch.testing.assert_close(step.info.entropy, torch.tensor([entropy]))
    assert step.info.log_prob.requires_grad
    many, mask = _random_masks(10_000, seed=2)
    state = alg.get_initial_rollout_state(10_000)
    assert mask[torch.arange(10_000), alg.rollout_step(many, state).output].all()
    state = alg.get_initial_predict_state(10_000)
    assert mask[torch.arange(10_000), alg.predict_step(many, state).output].all()


def test_a_mask_with_continuous_actions_is_one_line_value_error():
    continuous = BoundedTensorSpec((4,), torch.float32, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"^PPOAlgorithm: observation\['action_mask'\] masks"):
        _actor_critic(action_spec=continuous)
    with pytest.raises(ValueError, match=r"^SacAlgorithm: observation\['action_mask'\] masks"):
        SacAlgorithm(OBS_SPEC, continuous)
    with pytest.raises(ValueError, match=r"^DqnAlgorithm: .*must have shape \(3,\)"):
        DqnAlgorithm(OBS_SPEC, BoundedTensorSpec((), torch.int64, 0, 2))


def test_observation_normalizer_leaves_the_action_mask_alone():
    from alf.data_transformers import ObservationNormalizer

    normalizer = ObservationNormalizer(OBS_SPEC, update_mode="rollout")
    spec = normalizer.transformed_observation_spec
    assert spec["action_mask"] == OBS_SPEC["action_mask"]
    steps, _ = _random_masks(5)
    out = normalizer.transform_timestep(steps, ())[0]
    assert torch.equal(out.observation["action_mask"], steps.observation["action_mask"])
