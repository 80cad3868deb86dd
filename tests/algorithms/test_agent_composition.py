"""``Agent`` with parts: the composed reward, ICM's and RND's numbers, training and
checkpoints of every part."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from alf.algorithms.agent import Agent
from alf.algorithms.agent_algorithm import AgentAlgorithm, AgentInfo
from alf.algorithms.config import TrainerConfig
from alf.algorithms.icm_algorithm import ICMAlgorithm, ICMInfo
from alf.algorithms.intrinsic_reward_module import IntrinsicRewardModule
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.rnd_algorithm import RNDAlgorithm, RNDInfo
from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.data_structures import AlgStep, Experience, LossInfo, StepType, TimeStep
from alf.networks.encoding_networks import EncodingNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import counting_env, small_networks

OBS = TensorSpec((2,))
DISCRETE = BoundedTensorSpec((), dtype=torch.int64, minimum=0, maximum=2)


def _time_step(observation, prev_action, step_type, reward=None):
    n = observation.shape[0]
    return TimeStep(
        step_type=torch.as_tensor(step_type),
        reward=torch.zeros(n) if reward is None else torch.as_tensor(reward),
        discount=torch.ones(n),
        observation=observation,
        prev_action=prev_action,
        env_id=torch.arange(n),
    )


def _linear(spec, weight, bias, name="linear"):
    """An ``EncodingNetwork`` that is one linear layer with the given weights."""
    net = EncodingNetwork(spec, last_layer_size=weight.shape[0], name=name)
    (layer,) = [m for m in net.modules() if hasattr(m, "weight") and m.weight is not None]
    with torch.no_grad():
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)
    return net


# --------------------------------------------------------------------------- RND


def test_rnd_reward_and_loss_are_the_squared_prediction_error():
    w_t, b_t = torch.tensor([[1.0, 2.0], [0.0, -1.0]]), torch.tensor([0.5, 0.0])
    w_p, b_p = torch.tensor([[0.0, 1.0], [1.0, 1.0]]), torch.tensor([0.0, 1.0])
    rnd = RNDAlgorithm(target_net=_linear(OBS, w_t, b_t), predictor_net=_linear(OBS, w_p, b_p))
    obs = torch.tensor([[1.0, 0.0], [2.0, -1.0], [0.0, 3.0]])
    # target: [1.5, 0], [0.5, 1], [6.5, -3]; predictor: [0, 2], [-1, 2], [3, 4]
    expected = torch.tensor([1.5**2 + 2**2, 1.5**2 + 1**2, 3.5**2 + 7**2])
    ts = _time_step(obs, torch.zeros(3, dtype=torch.int64), [1, 1, 1])
    step = rnd.rollout_step(ts, ())
    assert torch.equal(step.output, expected) and torch.equal(step.info.reward, expected)
    info = rnd.train_step(ts, (), step.info).info
    loss = rnd.calc_loss(info.reshape(1, 3))
    assert torch.equal(loss.loss, expected.reshape(1, 3))
    loss.loss.mean().backward()
    assert rnd._predictor_net.parameters().__next__().grad is not None
    assert all(p.grad is None and not p.requires_grad for p in rnd._target_net.parameters())


def test_rnd_normalizes_observations_and_divides_rewards_by_their_std():
    rnd = RNDAlgorithm(observation_spec=OBS, reward_adapt_speed=None, observation_adapt_speed=None)
    obs = torch.tensor([[[1.0, 10.0], [3.0, 30.0]]])  # [T=1, B=2, 2]
    ts = _time_step(obs[0], torch.zeros(2), [1, 1])
    ts = ts._replace(observation=obs)
    rnd.intrinsic_reward(ts, RNDInfo(reward=torch.zeros(1, 2)))
    normalized = rnd._observation(_time_step(obs[0], torch.zeros(2), [1, 1]))
    # mean (2, 20), var (1, 100): each normalized element is -1 or +1 (up to eps)
    assert torch.allclose(normalized, torch.tensor([[-1.0, -1.0], [1.0, 1.0]]), atol=1e-6)
    scaled = RNDAlgorithm(observation_spec=OBS, reward_adapt_speed=8.0)
    reward = torch.tensor([[1.0, 3.0]])
    out = scaled.intrinsic_reward(ts, RNDInfo(reward=reward))
    # no mean subtracted: r / sqrt(var + 1e-8), var = 1
    assert torch.allclose(out, reward / math.sqrt(1.0 + 1e-8))


# --------------------------------------------------------------------------- ICM


def test_icm_forward_and_inverse_losses_by_hand():
    feature = TensorSpec((2,))
    forward = EncodingNetwork([feature, TensorSpec((3,))], last_layer_size=2, name="f")
    inverse = EncodingNetwork([feature, feature], last_layer_size=3, name="g")
    with torch.no_grad():
        for net, weight in (
            (forward, torch.tensor([[1.0, 0, 1, 0, 0], [0, 1, 0, 2, 0]])),
            (inverse, torch.tensor([[1.0, 0, -1, 0], [0, 1, 0, -1], [0, 0, 0, 0]])),
        ):
            (layer,) = [m for m in net.modules() if getattr(m, "weight", None) is not None]
            layer.weight.copy_(weight)
            layer.bias.zero_()
    icm = ICMAlgorithm(
        DISCRETE, feature, reward_adapt_speed=None, forward_net=forward, inverse_net=inverse
    )
    icm._observation_normalizer = None  # the raw observation is the embedding
    prev = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    obs = torch.tensor([[2.0, 1.0], [5.0, 5.0]])
    ts = _time_step(obs, torch.tensor([1, 0]), [StepType.MID, StepType.FIRST])
    # forward: [1+0, 2+2] = [1, 4] vs [2, 1]: 0.5 * mean(1, 9) = 2.5; row 1 (FIRST): masked
    step = icm.rollout_step(ts, prev)
    assert torch.equal(step.output, torch.tensor([2.5, 0.0]))
    assert torch.equal(step.state, obs) and torch.equal(step.info.prev_observation, prev)
    info = icm.train_step(ts, (), ICMInfo(prev_observation=prev)).info
    # inverse logits of row 0: [1-2, 2-1, 0] = [-1, 1, 0], target action 1
    logits = torch.tensor([-1.0, 1.0, 0.0])
    inverse_0 = -torch.log_softmax(logits, 0)[1]
    assert torch.allclose(info.inverse_loss[0], inverse_0)
    assert info.forward_loss[0] == 2.5
    loss = icm.calc_loss(nest_unsqueeze(info))
    assert torch.allclose(loss.loss, torch.tensor([[2.5 + float(inverse_0), 0.0]]))


def nest_unsqueeze(info: ICMInfo) -> ICMInfo:
    """A ``[1, B]`` batch of one row's training info."""
    return info._replace(
        **{k: getattr(info, k).unsqueeze(0) for k in ("forward_loss", "inverse_loss", "step_type")}
    )


def test_icm_gradient_trains_the_encoder_by_the_inverse_loss_only():
    encoder = EncodingNetwork(OBS, fc_layer_params=(4,), name="phi")
    icm = ICMAlgorithm(DISCRETE, OBS, hidden_size=8, encoding_net=encoder)
    prev, obs = torch.randn(5, 2), torch.randn(5, 2)
    ts = _time_step(obs, torch.tensor([0, 1, 2, 1, 0]), [1] * 5)
    info = icm.train_step(ts, (), ICMInfo(prev_observation=prev)).info
    info.forward_loss.sum().backward()
    assert all(p.grad is None for p in encoder.parameters())
    assert all(p.grad is not None for p in icm._forward_net.parameters())


# --------------------------------------------------------------------------- composed reward


class _FixedReward(IntrinsicRewardModule):
    """Pays the observation's first element (recorded at rollout)."""

    def __init__(self, observation_spec=None, action_spec=None, **kwargs):
        super().__init__(**kwargs, name="FixedReward")
        self._w = torch.nn.Parameter(torch.zeros(()))

    def rollout_step(self, inputs, state):
        reward = inputs.observation[..., 0].clone()
        return AlgStep(output=reward, state=state, info=RNDInfo(reward=reward))

    def train_step(self, inputs, state, rollout_info):
        return AlgStep(state=state, info=(self._w - 1.0).square().expand(inputs.step_type.shape))

    def calc_loss(self, info):
        return LossInfo(loss=info)


def _agent(env, config=None, **kwargs):
    return Agent(
        observation_spec=env.observation_spec(),
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config or TrainerConfig(unroll_length=4, mini_batch_size=8),
        rl_algorithm_cls=functools.partial(PPOAlgorithm, **small_networks()),
        optimizer=Adam(lr=1e-2),
        **kwargs,
    )


def test_the_rl_algorithm_is_trained_on_the_composed_reward():
    env = counting_env(num_envs=2)
    try:
        agent = _agent(
            env,
            intrinsic_reward_module=functools.partial(_FixedReward, reward_adapt_speed=4.0),
            intrinsic_reward_coef=0.5,
            extrinsic_reward_coef=2.0,
        )
        assert isinstance(agent, AgentAlgorithm)
        r_ext = torch.tensor([[1.0, 0.0], [3.0, 1.0]])
        r_int = torch.tensor([[2.0, 4.0], [6.0, 8.0]])
        rl_info = agent.rl_algorithm.rollout_step(
            _time_step(torch.zeros(2, 1), torch.zeros(2, dtype=torch.int64), [1, 1]),
            agent.rl_algorithm.get_initial_rollout_state(2),
        ).info
        rl_info = type(rl_info)(
            *[torch.stack([x, x]) if torch.is_tensor(x) else x for x in rl_info]
        )
        ts = TimeStep(
            step_type=torch.ones(2, 2, dtype=torch.int64),
            reward=r_ext,
            discount=torch.ones(2, 2),
            observation=torch.zeros(2, 2, 1),
            prev_action=torch.zeros(2, 2, dtype=torch.int64),
            env_id=torch.zeros(2, 2, dtype=torch.int64),
        )
        exp = Experience(
            time_step=ts, rollout_info=AgentInfo(rl=rl_info, irm=RNDInfo(reward=r_int))
        )
        out = agent.preprocess_experience(exp)
        # the first update of the statistics takes the batch's moments: mean 5, var 5
        normalized = (r_int - 5.0) / math.sqrt(5.0 + 1e-8)
        expected = 2.0 * r_ext + 0.5 * normalized
        assert torch.allclose(out.time_step.reward, expected)
        # PPO's own preprocessing (GAE) ran on that reward
        advantages, _ = agent.rl_algorithm.loss.advantages_and_returns(
            expected, rl_info.value, ts.step_type, ts.discount
        )
        assert torch.allclose(out.rollout_info.rl.advantages, advantages)
    finally:
        env.close()


def test_every_part_is_trained_checkpointed_and_summarized(tmp_path):
    env = counting_env(num_envs=2)
    try:
        seeding.set_random_seed(3)
        agent = _agent(env, intrinsic_reward_module=_FixedReward)
        assert agent.learner_class is type(agent.rl_algorithm).learner_class
        names = {n for n, _ in agent.named_parameters()}
        assert "_irm._w" in names
        before = {n: p.detach().clone() for n, p in agent.named_parameters()}
        agent.train_iter()
        changed = {n for n, p in agent.named_parameters() if not torch.equal(p, before[n])}
        assert "_irm._w" in changed and any(n.startswith("_rl_algorithm.") for n in changed)
        state = agent.state_dict()
        fresh = _agent(env, intrinsic_reward_module=_FixedReward)
        fresh.load_state_dict(state)
        for (n, p), (_, q) in zip(agent.named_parameters(), fresh.named_parameters()):
            assert torch.equal(p, q), n
        assert len(agent.optimizers()) == len(fresh.optimizers()) == 2
    finally:
        env.close()


def test_off_policy_rl_algorithm_with_rnd_trains_from_replay():
    env = counting_env(num_envs=2)
    try:
        config = TrainerConfig(
            unroll_length=2,
            mini_batch_size=4,
            mini_batch_length=2,
            initial_collect_steps=4,
            replay_buffer_length=64,
        )
        agent = Agent(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            reward_spec=env.reward_spec(),
            env=env,
            config=config,
            rl_algorithm_cls=SacAlgorithm,
            intrinsic_reward_module=functools.partial(RNDAlgorithm, reward_adapt_speed=8.0),
            optimizer=Adam(lr=1e-3),
        )
        predictor = [
            p.detach().clone() for p in agent.intrinsic_reward_module._predictor_net.parameters()
        ]
        for _ in range(6):
            agent.train_iter()
        assert int(agent.replay_buffer.current_size().sum()) == 24  # 6 unrolls of 2 x 2
        after = list(agent.intrinsic_reward_module._predictor_net.parameters())
        assert any(not torch.equal(a, b) for a, b in zip(after, predictor))
    finally:
        env.close()


def test_parts_with_a_train_state_are_refused():
    class Stateful(_FixedReward):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self._train_state_spec = TensorSpec((1,))

    env = counting_env(num_envs=2)
    try:
        with pytest.raises(ValueError, match="has a train state"):
            _agent(env, intrinsic_reward_module=Stateful)
    finally:
        env.close()


def test_the_reward_module_after_a_representation_learner_sees_the_representation():
    from alf.algorithms.predictive_representation_learner import PredictiveRepresentationLearner

    env = counting_env(num_envs=2)
    try:
        agent = _agent(
            env,
            representation_learner_cls=PredictiveRepresentationLearner,
            intrinsic_reward_module=functools.partial(RNDAlgorithm, reward_adapt_speed=8.0),
        )
        latent = agent.representation_learner.output_spec
        rnd = agent.intrinsic_reward_module
        assert agent.rl_algorithm.observation_spec == latent and latent.shape != OBS.shape
        agent.train_iter()
        # its statistics were merged from the latents of the 4 + 1 rows of 2 envs
        (stats,) = rnd._observation_normalizer.statistics
        assert stats.mean.shape == latent.shape and float(stats.count) == 10
    finally:
        env.close()
