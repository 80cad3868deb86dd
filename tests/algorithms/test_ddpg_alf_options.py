"""DDPG's ALF options: ``rollout_random_action`` statistics, ``action_l2`` in the actor
loss by hand, the lower-bounded critic target with the replayed returns by hand, and
learning with all of them on a tiny continuous env."""

import functools
import math

import pytest
import torch

import alf
from alf.algorithms.ddpg_algorithm import DdpgAlgorithm, DdpgRolloutInfo, Td3Algorithm
from alf.algorithms.td_loss import LowerBoundedTDLoss
from alf.data_structures import BatchInfo, StepType, TimeStep
from alf.learners.replay_learner import with_discounted_return
from alf.networks.actor_networks import ActorNetwork
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import evaluate
from tests.algorithms.test_ddpg_algorithm import (
    GAMMA,
    OPTIMUM,
    _config,
    _env,
    _LinearCritics,
    _make,
    _set,
    _transitions,
)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _hand_ddpg(**kwargs):
    """DDPG on a 1-d observation and a 1-d action in [-2, 2], without an env: actor
    ``a = 2 tanh(0.5 s)``, critic ``Q = 0.5 s + a``, target actor ``a' = 1``, target
    critic ``Q' = s + a``."""
    action_spec = BoundedTensorSpec((1,), torch.float32, minimum=-2.0, maximum=2.0)
    alg = DdpgAlgorithm(
        TensorSpec((1,)),
        action_spec,
        actor_network_ctor=ActorNetwork,
        critic_network_ctor=_LinearCritics,
        config=_config(),
        gamma=GAMMA,
        actor_optimizer=Adam(lr=0.1),
        critic_optimizer=Adam(lr=0.1),
        **kwargs,
    )
    _set(alg.actor_network.parameters(), [[0.5]], [0.0])
    _set(alg.target_actor_network.parameters(), [[0.0]], [math.atanh(0.5)])
    _set(alg.target_critic_network.parameters(), [1.0], [1.0])
    _set(alg.critic_network.parameters(), [0.5], [1.0])
    return alg


# -- rollout_random_action ---------------------------------------------------------------


def _rollout(alg, n, seed):
    ts = TimeStep(
        step_type=torch.ones(n, dtype=torch.int32), observation=torch.linspace(-2, 2, n)[:, None]
    )
    torch.manual_seed(seed)
    return alg.predict_step(ts, ()).output, alg.rollout_step(ts, ())


@torch.no_grad()
@pytest.mark.parametrize("cls", [DdpgAlgorithm, Td3Algorithm])
def test_rollout_random_action_replaces_whole_actions_with_uniform_ones(cls):
    env = _env(num_envs=2)  # 2-d actions in [-1, 3]
    try:
        alg = _make(
            cls,
            env,
            _config(initial_collect_steps=0),
            exploration_noise_std=0.0,
            rollout_random_action=0.3,
        )
        mean, step = _rollout(alg, 20000, seed=3)
        assert torch.equal(step.output, step.info.action)
        kept = (step.output == mean).all(-1)
        replaced = (step.output != mean).all(-1)
        assert bool((kept | replaced).all())  # an env's whole action, never a part
        assert abs(float(replaced.float().mean()) - 0.3) < 0.015  # 5 sigma
        uniform = step.output[replaced]  # uniform in [-1, 3]: mean 1, std 4/sqrt(12)
        assert float(uniform.min()) >= -1.0 and float(uniform.max()) <= 3.0
        assert abs(float(uniform.mean()) - 1.0) < 0.03
        assert abs(float(uniform.std()) - 4 / math.sqrt(12)) < 0.03
        _, again = _rollout(alg, 20000, seed=3)  # same seed, same actions
        assert torch.equal(again.output, step.output)

        never = _make(cls, env, _config(initial_collect_steps=0), exploration_noise_std=0.0)
        mean, step = _rollout(never, 1000, seed=3)
        assert torch.equal(step.output, mean)  # p = 0 and no noise: the actor's action
        always = _make(
            cls,
            env,
            _config(initial_collect_steps=0),
            exploration_noise_std=0.0,
            rollout_random_action=1.0,
        )
        mean, step = _rollout(always, 1000, seed=3)
        assert bool((step.output != mean).all())
    finally:
        env.close()


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        (dict(rollout_random_action=1.5), "rollout_random_action"),
        (dict(rollout_random_action=-0.1), "rollout_random_action"),
        (dict(action_l2=-1.0), "action_l2"),
    ],
)
def test_bad_options_name_their_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        _hand_ddpg(**kwargs)


# -- action_l2 ---------------------------------------------------------------------------


def test_action_l2_adds_the_squared_action_norm_to_the_actor_loss():
    exp = _transitions([1.0, -2.0], [0.0, 0.0], [0.0, 0.0], [1, 1], [1.0, 1.0], [0.0, 0.0])
    s = torch.tensor([1.0, -2.0])
    a = 2 * torch.tanh(0.5 * s)
    plain = _hand_ddpg()
    penalized = _hand_ddpg(action_l2=0.05)
    info = penalized.train_steps(exp)
    torch.testing.assert_close(info.action_sq[0], a**2)
    torch.testing.assert_close(info.action_sq[1], torch.zeros(2))
    loss = penalized.calc_loss(info).loss
    base = plain.calc_loss(plain.train_steps(exp)).loss
    torch.testing.assert_close(loss[0] - base[0], 0.05 * a**2)
    torch.testing.assert_close(loss[1], torch.zeros(2))
    # d/da of -(0.5 s + a) + 0.05 a^2 = -1 + 0.1 a reaches the actor only
    loss[0].sum().backward()
    (w,) = [p for p in penalized.actor_network.parameters() if p.ndim == 2]
    dw = ((-1 + 0.1 * a) * 2 * (1 - torch.tanh(0.5 * s) ** 2) * s).sum()  # da/dw
    torch.testing.assert_close(w.grad.squeeze(), dw)
    assert plain.train_steps(exp).action_sq == ()  # action_l2 = 0: not computed


# -- the lower-bounded critic target -----------------------------------------------------


def test_lower_bounded_critic_target_with_ddpg():
    """Rows: ongoing (return above the TD target), terminal (return below it), time
    limit (unknown return, -1000): ``y <- (1-w) y + w max(y, G)`` with ``w = 0.5``."""
    mid, last = StepType.MID, StepType.LAST
    exp = _transitions(
        obs=[1.0, 2.0, -1.0],
        next_obs=[3.0, 0.5, -2.0],
        reward=[1.0, 2.0, -1.0],
        next_step_type=[mid, last, last],
        discount=[1.0, 0.0, 1.0],
        action=[0.5, -1.0, 2.0],
    )
    returns = torch.tensor([[10.0, 0.5, -1000.0], [0.0, 0.0, 0.0]])  # [T, B]
    exp = with_discounted_return(exp, BatchInfo(discounted_return=returns.t()))
    assert torch.equal(exp.rollout_info.discounted_return, returns)
    lb = functools.partial(LowerBoundedTDLoss, lb_target_q=0.5)
    alg = _hand_ddpg(critic_loss_ctor=lb)
    loss = alg.calc_loss(alg.train_steps(exp))

    s, s2 = torch.tensor([1.0, 2.0, -1.0]), torch.tensor([3.0, 0.5, -2.0])
    a = torch.tensor([0.5, -1.0, 2.0])
    y = torch.tensor([1.0, 2.0, -1.0]) + GAMMA * torch.tensor([1.0, 0.0, 1.0]) * (s2 + 1.0)
    # y = [4.6, 2.0, -1.9]: row 0 rises half way to 10, rows 1 and 2 keep y
    bounded = torch.tensor([0.5 * 4.6 + 0.5 * 10.0, 2.0, -1.9])
    q = 0.5 * s + a
    critic = (bounded - q) ** 2
    actor = -(0.5 * s + 2 * torch.tanh(0.5 * s))
    torch.testing.assert_close(loss.loss[0], critic + actor)
    torch.testing.assert_close(loss.priority, (bounded - q).abs())
    # without the returns (or with OneStepTDLoss) the target is y
    plain = _hand_ddpg(critic_loss_ctor=lb)
    no_returns = exp._replace(rollout_info=DdpgRolloutInfo(action=exp.rollout_info.action))
    torch.testing.assert_close(
        plain.calc_loss(plain.train_steps(no_returns)).priority, (y - q).abs()
    )
    one_step = _hand_ddpg()
    torch.testing.assert_close(
        one_step.calc_loss(one_step.train_steps(exp)).priority, (y - q).abs()
    )


# -- learning ----------------------------------------------------------------------------


class _Recording(LowerBoundedTDLoss):
    """Counts the batches that came with returns."""

    with_returns = 0

    def __call__(self, *args, discounted_return=()):
        _Recording.with_returns += torch.is_tensor(discounted_return)
        return super().__call__(*args, discounted_return=discounted_return)


def test_ddpg_learns_with_random_rollout_actions_action_l2_and_lower_bounded_targets():
    """ALF's Fetch options on ContinuousCountingEnv (reward = sum of a 2-d action in
    [-1, 3], 5 steps, then terminal): 30% uniform rollout actions, ``action_l2 = 0.02``
    (its gradient 0.04 a stays below dQ/da >= 1, so the bound is still optimal) and
    targets bounded by the replayed episodic returns."""
    alf.reset_configs()
    alf.config("ReplayBuffer", record_episodic_return=True, gamma=GAMMA)
    _Recording.with_returns = 0
    seeding.set_random_seed(0)
    env = _env(seed=0)
    eval_env = _env(num_envs=2, seed=7)
    try:
        alg = _make(
            DdpgAlgorithm,
            env,
            _config(replay_buffer_length=1000),
            rollout_random_action=0.3,
            action_l2=0.02,
            critic_loss_ctor=functools.partial(_Recording, td_lambda=0.0, lb_target_q=1.0),
        )
        for _ in range(25):
            alg.train_iter()
        assert _Recording.with_returns == 24 * 4  # every update (the 1st iteration collects)
        assert evaluate(alg, eval_env) > 0.97 * OPTIMUM  # uniform random play averages 10
    finally:
        env.close()
        eval_env.close()
        alf.reset_configs()
