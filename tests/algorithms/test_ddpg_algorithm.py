"""DDPG / TD3: learning a tiny continuous env, the TD3 target by hand, the actor's gradient,
delayed updates, exploration noise, determinism, checkpoint round trip."""

import functools
import math

import pytest
import torch
import torch.nn as nn

from alf.algorithms.config import TrainerConfig
from alf.algorithms.ddpg_algorithm import DdpgAlgorithm, DdpgRolloutInfo, Td3Algorithm
from alf.config_util import config, operative_config_str, reset_configs
from alf.data_structures import Experience, StepType, TimeStep
from alf.environments import suite_gym
from alf.environments.utils import create_environment
from alf.networks.actor_networks import ActorNetwork
from alf.networks.critic_networks import CriticNetwork
from alf.networks.network import Network
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import evaluate, parameters_of

ENV = "alf.environments.toy_envs:ContinuousCountingEnv-v0"
#: reward = sum of a 2-d action in [-1, 3] for 5 steps: the optimum is 2 * 3 * 5.
OPTIMUM = 30.0
GAMMA = 0.9


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One torch thread, as the trainer uses (``TrainerConfig.num_threads``): on a busy
    2-core machine a second intra-op thread makes tiny updates ~50x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _env(num_envs=4, seed=0):
    return create_environment(
        env_name=ENV,
        env_load_fn=suite_gym.load,
        num_parallel_environments=num_envs,
        nonparallel=True,
        seed=seed,
    )


def _config(**kwargs):
    args = dict(
        unroll_length=4,
        mini_batch_size=32,
        mini_batch_length=2,
        num_updates_per_train_iter=4,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        replay_buffer_length=256,
        initial_collect_steps=8,
    )
    args.update(kwargs)
    return TrainerConfig(**args)


def _make(cls, env, config, **kwargs):
    args = dict(
        actor_network_ctor=functools.partial(ActorNetwork, fc_layer_params=(32,)),
        critic_network_ctor=functools.partial(CriticNetwork, joint_fc_layer_params=(32,)),
        gamma=GAMMA,
        actor_optimizer=Adam(lr=1e-2),
        critic_optimizer=Adam(lr=1e-2),
        target_update_tau=0.1,
    )
    args.update(kwargs)
    return cls(env.observation_spec(), env.action_spec(), env=env, config=config, **args)


def _train(cls, seed, num_iterations, **kwargs):
    seeding.set_random_seed(seed)
    env = _env(seed=seed)
    alg = _make(cls, env, _config(), **kwargs)
    for _ in range(num_iterations):
        alg.train_iter()
    return alg, env


# -- learning ----------------------------------------------------------------------


@pytest.mark.parametrize("cls", [Td3Algorithm, DdpgAlgorithm])
def test_learns_the_upper_action_bound(cls):
    alg, env = _train(cls, seed=0, num_iterations=25)
    eval_env = _env(num_envs=2, seed=7)
    try:
        assert evaluate(alg, eval_env) > 0.97 * OPTIMUM  # uniform random play averages 10
    finally:
        env.close()
        eval_env.close()


# -- the TD3 update by hand ----------------------------------------------------------


class _LinearCritics(Network):
    """``Q_i(s, a) = c_i s + k_i sum(a)``: ``[N, R]`` (``[N]`` for one replica)."""

    def __init__(self, input_tensor_spec, num_replicas=1, name="LinearCritics"):
        super().__init__(input_tensor_spec, name=name)
        self.c = nn.Parameter(torch.ones(num_replicas))
        self.k = nn.Parameter(torch.ones(num_replicas))
        self._single = num_replicas == 1

    def forward(self, inputs, state=()):
        observation, action = inputs
        q = observation[:, :1] * self.c + action.sum(-1, keepdim=True) * self.k
        return (q.squeeze(-1) if self._single else q), state


def _set(params, *values):
    with torch.no_grad():
        for p, v in zip(params, values):
            p.copy_(torch.tensor(v))


def _hand_td3(**kwargs):
    """TD3 on a 1-d observation and a 1-d action in [-2, 2], without an env."""
    action_spec = BoundedTensorSpec((1,), torch.float32, minimum=-2.0, maximum=2.0)
    alg = Td3Algorithm(
        TensorSpec((1,)),
        action_spec,
        actor_network_ctor=ActorNetwork,  # no hidden layer: a = 2 tanh(w s + b)
        critic_network_ctor=_LinearCritics,
        config=_config(),
        gamma=GAMMA,
        actor_optimizer=Adam(lr=0.1),
        critic_optimizer=Adam(lr=0.1),
        **kwargs,
    )
    # Target actor: the constant action 1 = 2 tanh(atanh(0.5)).
    _set(alg.target_actor_network.parameters(), [[0.0]], [math.atanh(0.5)])
    # Target critics: Q'_1 = s + a, Q'_2 = 2 s - a.
    _set(alg.target_critic_network.parameters(), [1.0, 2.0], [1.0, -1.0])
    # Critics: Q_1 = 0.5 s + a, Q_2 = -s + 0.5 a.
    _set(alg.critic_network.parameters(), [0.5, -1.0], [1.0, 0.5])
    return alg


def _transitions(obs, next_obs, reward, next_step_type, discount, action):
    """``[2, B]`` experience: row 0 MID at ``obs`` with ``action``, row 1 as given."""
    ts = TimeStep(
        step_type=torch.tensor([[StepType.MID] * len(obs), next_step_type], dtype=torch.int32),
        reward=torch.tensor([[0.0] * len(obs), reward]),
        discount=torch.tensor([[1.0] * len(obs), discount]),
        observation=torch.tensor([obs, next_obs]).unsqueeze(-1),
    )
    action = torch.tensor([action, [0.0] * len(obs)]).unsqueeze(-1)
    return Experience(time_step=ts, action=action, rollout_info=DdpgRolloutInfo(action=action))


def test_td3_target_is_the_min_of_twin_targets_at_the_smoothed_target_action():
    alg = _hand_td3(target_policy_noise=0.3, target_policy_noise_clip=0.5)
    mid, last = StepType.MID, StepType.LAST
    # Three transitions: ongoing, terminal (d = 0), time limit (d = 1).
    exp = _transitions(
        obs=[1.0, 2.0, -1.0],
        next_obs=[3.0, 0.5, -2.0],
        reward=[1.0, 2.0, -1.0],
        next_step_type=[mid, last, last],
        discount=[1.0, 0.0, 1.0],
        action=[0.5, -1.0, 2.0],
    )
    torch.manual_seed(7)
    info = alg.train_steps(exp)
    loss = alg.calc_loss(info)

    torch.manual_seed(7)  # the smoothing noise is the first draw of the update
    noise = (torch.randn(3, 1) * 0.3).clamp(-0.5, 0.5).squeeze(-1)
    s, s2 = torch.tensor([1.0, 2.0, -1.0]), torch.tensor([3.0, 0.5, -2.0])
    a = torch.tensor([0.5, -1.0, 2.0])
    a2 = (1.0 + 2.0 * noise).clamp(-2.0, 2.0)  # noise in half-range units (2)
    target = torch.minimum(s2 + a2, 2 * s2 - a2)
    y = torch.tensor([1.0, 2.0, -1.0]) + GAMMA * torch.tensor([1.0, 0.0, 1.0]) * target
    q1, q2 = 0.5 * s + a, -s + 0.5 * a
    assert info.actor_q == ()  # the first update trains the critics only
    torch.testing.assert_close(loss.loss[0], (y - q1) ** 2 + (y - q2) ** 2)
    torch.testing.assert_close(loss.loss[1], torch.zeros(3))  # no successor
    torch.testing.assert_close(loss.priority, ((y - q1).abs() + (y - q2).abs()) / 2)


def test_actor_loss_uses_the_first_critic_and_reaches_only_the_actor():
    alg = _hand_td3(actor_update_period=1)
    # Actor: a = 2 tanh(0.5 s); the actor loss is -Q_1(s, a) = -(0.5 s + a).
    _set(alg.actor_network.parameters(), [[0.5]], [0.0])
    exp = _transitions([1.0, -2.0], [0.0, 0.0], [0.0, 0.0], [1, 1], [1.0, 1.0], [0.0, 0.0])
    info = alg.train_steps(exp)
    s = torch.tensor([1.0, -2.0])
    torch.testing.assert_close(info.actor_q[0], 0.5 * s + 2 * torch.tanh(0.5 * s))
    info.actor_q[0].sum().neg().backward()
    assert all(p.grad is None for p in alg.critic_network.parameters())
    assert all(p.grad is not None for p in alg.actor_network.parameters())
    assert all(p.requires_grad for p in alg.critic_network.parameters())


def test_delayed_actor_and_target_updates():
    alg = _hand_td3()  # actor and targets every 2 updates
    exp = _transitions([1.0, 2.0], [2.0, 3.0], [1.0, 1.0], [1, 1], [1.0, 1.0], [0.5, 0.5])
    actor0 = [p.detach().clone() for p in alg.actor_network.parameters()]
    target0 = [p.detach().clone() for p in alg.target_critic_network.parameters()]
    critic0 = [p.detach().clone() for p in alg.critic_network.parameters()]

    assert alg.train_steps(exp).actor_q == ()  # update 1: critics only
    alg.update_from_experience(exp)
    assert all(torch.equal(p, q) for p, q in zip(alg.actor_network.parameters(), actor0))
    assert all(torch.equal(p, q) for p, q in zip(alg.target_critic_network.parameters(), target0))
    assert not all(torch.equal(p, q) for p, q in zip(alg.critic_network.parameters(), critic0))

    assert isinstance(alg.train_steps(exp).actor_q, torch.Tensor)  # update 2: actor too
    alg.update_from_experience(exp)
    assert not all(torch.equal(p, q) for p, q in zip(alg.actor_network.parameters(), actor0))
    assert not all(
        torch.equal(p, q) for p, q in zip(alg.target_critic_network.parameters(), target0)
    )
    assert int(alg._num_updates) == 2


# -- exploration ----------------------------------------------------------------------


@torch.no_grad()
def test_rollout_noise_in_half_range_units_and_random_initial_collection():
    env = _env(num_envs=2)
    try:
        alg = _make(Td3Algorithm, env, _config(initial_collect_steps=0), exploration_noise_std=0.2)
        obs = torch.zeros(4000, 1)
        ts = TimeStep(step_type=torch.ones(4000, dtype=torch.int32), observation=obs)
        mean = alg.predict_step(ts, ()).output
        step = alg.rollout_step(ts, ())
        assert torch.equal(step.output, step.info.action)
        noise = step.output - mean  # half-range 2: std 0.4 (few clipped at the bounds)
        assert abs(float(noise.std()) - 0.4) < 0.02
        assert float(step.output.min()) >= -1.0 and float(step.output.max()) <= 3.0

        alg = _make(Td3Algorithm, env, _config(initial_collect_steps=4))
        random = alg.rollout_step(ts, ()).output  # empty buffer: uniform in [-1, 3]
        assert abs(float(random.mean()) - 1.0) < 0.1 and float(random.std()) > 1.0
    finally:
        env.close()


def test_config_checks():
    spec = BoundedTensorSpec((1,), torch.float32, minimum=-1.0, maximum=1.0)
    with pytest.raises(ValueError, match="whole_replay_buffer_training"):
        Td3Algorithm(TensorSpec((1,)), spec, config=_config(whole_replay_buffer_training=True))
    with pytest.raises(ValueError, match="mini_batch_length"):
        Td3Algorithm(TensorSpec((1,)), spec, config=_config(mini_batch_length=1))
    with pytest.raises(ValueError, match="continuous"):
        Td3Algorithm(TensorSpec((1,)), BoundedTensorSpec((), torch.int64, 0, 2))


def _settings(alg):
    """The arguments TD3 and DDPG differ in, plus two TD3 leaves as DDPG's."""
    return (
        alg._num_replicas,
        alg._target_policy_noise,
        alg._actor_update_period,
        alg._target_updater._period,
        alg.name,
        alg._target_policy_noise_clip,
        alg._critic_loss._gamma,
    )


def test_td3_changes_only_its_defaults_and_configures_every_argument():
    spec = BoundedTensorSpec((1,), torch.float32, minimum=-1.0, maximum=1.0)
    obs_spec = TensorSpec((1,))
    reset_configs()
    try:
        assert _settings(Td3Algorithm(obs_spec, spec)) == (2, 0.2, 2, 2, "Td3Algorithm", 0.5, 0.99)
        assert _settings(DdpgAlgorithm(obs_spec, spec)) == (
            1,
            0.0,
            1,
            1,
            "DdpgAlgorithm",
            0.5,
            0.99,
        )
        assert _settings(Td3Algorithm(obs_spec, spec, actor_update_period=3))[2] == 3

        reset_configs()
        config("Td3Algorithm", target_policy_noise=0.3, target_policy_noise_clip=0.1, gamma=0.5)
        config("DdpgAlgorithm", num_critic_replicas=4, gamma=0.7)
        # DDPG's configured values reach TD3 where TD3 configures none (num_critic_replicas);
        # TD3's own configured values win (gamma); TD3's defaults yield to neither rule
        assert _settings(Td3Algorithm(obs_spec, spec)) == (4, 0.3, 2, 2, "Td3Algorithm", 0.1, 0.5)
        assert _settings(DdpgAlgorithm(obs_spec, spec))[0] == 4
        operative = operative_config_str()  # TD3's defaults in its section of the comment
        td3_part = operative[
            operative.index("#     'alf.algorithms.ddpg_algorithm.Td3Algorithm',") :
        ]
        td3_part = td3_part[: td3_part.index(")")]
        assert "actor_update_period=2," in td3_part and "target_update_period=2," in td3_part
    finally:
        reset_configs()


def test_alf_style_one_step_td_loss_settings_reach_ddpg_and_td3():
    from alf.algorithms.one_step_loss import OneStepTDLoss
    from alf.utils.losses import element_wise_huber_loss, element_wise_squared_loss

    spec = BoundedTensorSpec((1,), torch.float32, minimum=-1.0, maximum=1.0)
    obs_spec = TensorSpec((1,))
    reset_configs()
    try:
        loss = DdpgAlgorithm(obs_spec, spec)._critic_loss
        assert (loss.gamma, loss._td_error_loss_fn) == (0.99, element_wise_squared_loss)
        reset_configs()
        config("OneStepTDLoss", td_error_loss_fn=element_wise_huber_loss, gamma=0.9)
        for cls in (DdpgAlgorithm, Td3Algorithm):
            loss = cls(obs_spec, spec)._critic_loss
            assert isinstance(loss, OneStepTDLoss)
            assert (loss.gamma, loss._td_error_loss_fn) == (0.9, element_wise_huber_loss)
        # DDPG's own arguments, when given, win over the loss's configured ones
        loss = DdpgAlgorithm(obs_spec, spec, gamma=0.5)._critic_loss
        assert (loss.gamma, loss._td_error_loss_fn) == (0.5, element_wise_huber_loss)
        # ALF's critic_loss_ctor
        custom = functools.partial(OneStepTDLoss, gamma=0.25)
        assert DdpgAlgorithm(obs_spec, spec, critic_loss_ctor=custom)._critic_loss.gamma == 0.25
    finally:
        reset_configs()


# -- determinism, checkpoints -----------------------------------------------------------


def test_td3_same_seed_same_parameters_different_seed_different():
    a, env_a = _train(Td3Algorithm, seed=3, num_iterations=4)
    b, env_b = _train(Td3Algorithm, seed=3, num_iterations=4)
    c, env_c = _train(Td3Algorithm, seed=4, num_iterations=4)
    pa, pb, pc = parameters_of(a), parameters_of(b), parameters_of(c)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert any(not torch.equal(pa[k], pc[k]) for k in pa)
    for env in (env_a, env_b, env_c):
        env.close()


def test_td3_checkpoint_round_trip_gives_identical_outputs():
    a, env = _train(Td3Algorithm, seed=5, num_iterations=4)
    try:
        state = a.state_dict()
        assert sum(k.startswith("_optimizers.") for k in state) == 2  # actor, critic
        seeding.set_random_seed(99)
        b = _make(Td3Algorithm, env, _config())
        b.load_state_dict(state)
        obs = torch.arange(6, dtype=torch.float32).reshape(6, 1)
        ts = TimeStep(step_type=torch.ones(6, dtype=torch.int32), observation=obs)
        assert torch.equal(a.predict_step(ts, ()).output, b.predict_step(ts, ()).output)
        action = a.predict_step(ts, ()).output
        for name in ("critic_network", "target_critic_network"):
            qa = getattr(a, name)((obs, action))[0]
            assert torch.equal(qa, getattr(b, name)((obs, action))[0])
        assert torch.equal(a.target_actor_network(obs)[0], b.target_actor_network(obs)[0])
        assert int(b._num_updates) == int(a._num_updates) == 12  # 3 trained iterations
        for (_, opt_a, _), (_, opt_b, _) in zip(a.optimizers(), b.optimizers()):
            sa, sb = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
            assert all(torch.equal(sa[i]["exp_avg"], sb[i]["exp_avg"]) for i in sa)
    finally:
        env.close()
