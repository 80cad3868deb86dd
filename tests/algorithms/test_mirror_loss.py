"""PPO's mirror loss (Abdolhosseini et al. 2019): hand values, no cost when off, learning."""

import functools
import math

import pytest
import torch
import torch.distributions as td

import alf.summary
from alf.algorithms.actor_critic_algorithm import ActorCriticRolloutInfo
from alf.algorithms.config import TrainerConfig
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.ppo_loss import PPOLoss
from alf.data_structures import StepType, TimeStep
from alf.environments.toy_envs import MIRROR_POINT_MIRROR
from alf.environments.utils import create_environment
from alf.networks.actor_distribution_networks import ActorDistributionNetwork
from alf.networks.value_networks import ValueNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import dist_utils, seeding
from tests.algorithms.algorithm_test_utils import evaluate, make_algorithm, parameters_of

MIRROR_POINT_ENV = "alf.environments.toy_envs:MirrorPointEnv-v0"
OBS_SPEC = TensorSpec((2,))
ACTION_SPEC = BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0)


class LinearActor(torch.nn.Module):
    """``mu(s) = W s + b`` (tanh-squashed when ``squash``); unit-std Gaussian around it."""

    state_spec = ()

    def __init__(self, input_tensor_spec=None, action_spec=None, squash=False):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        self.bias = torch.nn.Parameter(torch.tensor([0.5, -0.5]))
        self._squash = squash

    def forward(self, observation, state=()):
        base = td.Independent(td.Normal(observation @ self.weight.T + self.bias, 1.0), 1)
        if self._squash:
            return td.TransformedDistribution(base, [td.TanhTransform()]), state
        return base, state


class _NullWriter:
    def add_scalar(self, *args, **kwargs):
        pass


def _algorithm(loss, actor_ctor=LinearActor):
    return PPOAlgorithm(
        observation_spec=OBS_SPEC,
        action_spec=ACTION_SPEC,
        actor_network_ctor=actor_ctor,
        value_network_ctor=functools.partial(ValueNetwork, fc_layer_params=(4,)),
        loss=loss,
    )


def _one_step_info(alg, observation, step_type):
    """``train_step`` on ``observation`` ``[B, 2]``, stacked to ``[1, B]`` infos."""
    batch = observation.shape[0]
    inputs = TimeStep(
        step_type=step_type,
        reward=torch.zeros(batch),
        discount=torch.ones(batch),
        observation=observation,
        prev_action=torch.zeros(batch, 2),
    )
    rollout_info = ActorCriticRolloutInfo(
        action=torch.zeros(batch, 2),
        log_prob=torch.zeros(batch),
        value=torch.zeros(batch),
        advantages=torch.tensor([1.0, -1.0, 0.5]),
        returns=torch.zeros(batch),
    )
    info = alg.train_step(inputs, alg.get_initial_train_state(batch), rollout_info).info
    return alf.nest.map_structure(lambda x: x.unsqueeze(0), info)


@pytest.mark.parametrize("squash", [False, True])
def test_mirror_loss_equals_hand_computation(squash):
    """mu(s) = W s + b, mirror x -> -x (observation and action): the per-step mirror
    loss is mean_i (mu_i(s) - Psi_a(mu(Psi_o(s)))_i)^2, added with ``mirror_loss_coeff``."""
    coeff = 0.5
    loss = PPOLoss(mirror_loss_coeff=coeff, mirror=MIRROR_POINT_MIRROR, normalize_advantages=False)
    alg = _algorithm(loss, functools.partial(LinearActor, squash=squash))
    observation = torch.tensor([[1.0, 0.5], [-2.0, 1.0], [0.3, 0.3]])
    step_type = torch.tensor([StepType.MID, StepType.FIRST, StepType.LAST])
    info = _one_step_info(alg, observation, step_type)
    f = math.tanh if squash else (lambda v: v)
    # s1 = (1, .5): mu = (2.5, 4.5); mu(-1, .5) = (.5, -1.5) -> mirrored (-.5, -1.5)
    # s2 = (-2, 1): mu = (.5, -2.5); mu(2, 1) = (4.5, 9.5) -> mirrored (-4.5, 9.5)
    expected = torch.tensor(
        [
            ((f(2.5) + f(0.5)) ** 2 + (f(4.5) - f(-1.5)) ** 2) / 2,
            ((f(0.5) + f(4.5)) ** 2 + (f(-2.5) - f(9.5)) ** 2) / 2,
        ]
    )
    if not squash:
        assert torch.allclose(expected, torch.tensor([22.5, 84.5]))
    plain = PPOLoss(normalize_advantages=False)(info._replace(mirror=()))
    alf.summary.set_default_writer(_NullWriter())
    try:
        with alf.summary.record_if(True):
            with_mirror = loss(info)
    finally:
        alf.summary.set_default_writer(None)
    added = (with_mirror.loss - plain.loss)[0, :2]
    assert torch.allclose(added, coeff * expected, rtol=1e-5)
    # the summary is the unweighted mean over the valid (non-LAST) steps
    assert torch.allclose(with_mirror.extra.mirror_loss, expected.mean(), rtol=1e-5)
    # gradient reaches the actor through both forward passes
    alg.actor_network.zero_grad()
    (with_mirror.loss - plain.loss.detach())[0, :2].sum().backward()
    assert alg.actor_network.weight.grad.abs().sum() > 0


def _config():
    return TrainerConfig(
        unroll_length=20,
        mini_batch_size=40,
        mini_batch_length=1,
        num_updates_per_train_iter=4,
        replay_buffer_length=20,
        whole_replay_buffer_training=True,
        clear_replay_buffer=True,
    )


def _mirror_point_env(seed):
    return create_environment(
        env_name=MIRROR_POINT_ENV, num_parallel_environments=8, nonparallel=True, seed=seed
    )


def _train(seed, num_iterations, **loss_kwargs):
    seeding.set_random_seed(seed)
    env = _mirror_point_env(seed)
    loss = PPOLoss(gamma=0.9, **loss_kwargs)
    alg = make_algorithm(PPOAlgorithm, env, _config(), lr=1e-2, loss=loss)
    calls = []
    alg.actor_network.register_forward_hook(lambda *args: calls.append(1))
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env, len(calls)


def test_zero_coefficient_is_plain_ppo_at_no_cost():
    """``mirror_loss_coeff=0`` (with a mirror given) trains exactly as PPO without the
    feature (same parameters, hence same losses and gradients) and runs no extra actor
    forward; a positive coefficient adds one forward per training step."""
    plain, env_a, plain_calls = _train(seed=3, num_iterations=3)
    zero, env_b, zero_calls = _train(
        seed=3, num_iterations=3, mirror_loss_coeff=0.0, mirror=MIRROR_POINT_MIRROR
    )
    on, env_c, on_calls = _train(
        seed=3, num_iterations=3, mirror_loss_coeff=1.0, mirror=MIRROR_POINT_MIRROR
    )
    pa, pb, pc = parameters_of(plain), parameters_of(zero), parameters_of(on)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    assert zero_calls == plain_calls
    # 3 iterations x 4 epochs x 160 samples / 40 per minibatch = 48 training steps
    assert on_calls == plain_calls + 48
    for env in (env_a, env_b, env_c):
        env.close()


def symmetry_error(alg, num_states=1000, seed=1234) -> float:
    """Mean ``||mu(Psi_o(s)) - Psi_a(mu(s))||`` over states uniform in ``[-1, 1]^2``."""
    generator = torch.Generator().manual_seed(seed)
    states = torch.rand(num_states, 2, generator=generator) * 2 - 1
    m = MIRROR_POINT_MIRROR
    with torch.no_grad():
        action = dist_utils.get_mode(alg.actor_network(states)[0])
        mirrored = dist_utils.get_mode(alg.actor_network(m.observation(states))[0])
    return float((mirrored - m.action(action)).norm(dim=-1).mean())


#: Tolerance on the mean symmetry error with a large coefficient (actions in [-1, 1]).
SYMMETRY_TOLERANCE = 0.05


def test_mirror_loss_makes_learned_policy_symmetric():
    """MirrorPointEnv, seed 0, 30 iterations (4,800 steps): both runs learn the task
    (untrained deterministic return about -7.8); with ``mirror_loss_coeff=10`` the
    symmetry error on random states is below ``SYMMETRY_TOLERANCE`` (measured 0.009),
    without the loss it is more than 4x larger (measured 0.22)."""
    errors, returns = {}, {}
    for coeff in (0.0, 10.0):
        alg, env, _ = _train(
            seed=0, num_iterations=30, mirror_loss_coeff=coeff, mirror=MIRROR_POINT_MIRROR
        )
        errors[coeff], returns[coeff] = symmetry_error(alg), evaluate(alg, env, num_episodes=8)
        env.close()
    assert returns[0.0] > -4.0 and returns[10.0] > -4.0, returns
    assert errors[10.0] < SYMMETRY_TOLERANCE, errors
    assert errors[0.0] > 4 * errors[10.0], errors


def test_mirror_configuration_errors_name_the_culprit():
    with pytest.raises(ValueError, match="PPOLoss: mirror_loss_coeff must be >= 0 and, when > 0"):
        PPOLoss(mirror_loss_coeff=1.0)
    with pytest.raises(ValueError, match="mirror_loss_coeff must be >= 0"):
        PPOLoss(mirror_loss_coeff=-1.0, mirror=MIRROR_POINT_MIRROR)
    loss = PPOLoss(mirror_loss_coeff=1.0, mirror=MIRROR_POINT_MIRROR)
    with pytest.raises(ValueError, match="PPOAlgorithm: MirrorPointEnv mirror_observation has 2"):
        PPOAlgorithm(
            observation_spec=TensorSpec((3,)),
            action_spec=ACTION_SPEC,
            actor_network_ctor=ActorDistributionNetwork,
            loss=loss,
        )
    with pytest.raises(ValueError, match="PPOAlgorithm: the mirror loss supports a single flat"):
        PPOAlgorithm(
            observation_spec={"x": OBS_SPEC},
            action_spec=ACTION_SPEC,
            actor_network_ctor=ActorDistributionNetwork,
            loss=loss,
        )
    with pytest.raises(ValueError, match="PPOAlgorithm: the mirror loss needs continuous actions"):
        PPOAlgorithm(
            observation_spec=OBS_SPEC,
            action_spec=BoundedTensorSpec((2,), dtype=torch.int64, minimum=0, maximum=3),
            loss=loss,
        )
