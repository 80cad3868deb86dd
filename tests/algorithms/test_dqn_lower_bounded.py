"""DQN with the replay buffer's episodic returns: the lower-bounded target by hand (return
above, below and unknown; the n-step target bounded at row 0), QR-DQN's refusal, DQN
learning a tiny env with ``LowerBoundedTDLoss``, and the ``SacAlgorithm`` values of an ALF
conf that reach ``DqnAlgorithm`` (ALF's DQN is a ``SacAlgorithm``)."""

import functools

import pytest
import torch

import alf
from alf.algorithms.dqn_algorithm import DqnAlgorithm, DqnRolloutInfo
from alf.algorithms.qrdqn_algorithm import QrdqnAlgorithm
from alf.algorithms.td_loss import LowerBoundedTDLoss
from alf.data_structures import BatchInfo, StepType
from alf.learners.replay_learner import with_discounted_return
from alf.networks.q_networks import QNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import COUNTING_OPTIMUM, counting_env, evaluate
from tests.algorithms.test_dqn_algorithm import (
    GAMMA,
    _config,
    _experience,
    _make,
    _q,
    _set_linear,
)

ONE_ACTION = BoundedTensorSpec((), torch.int64, 4, 4)


@pytest.fixture(autouse=True)
def _clean_configs():
    alf.reset_configs()
    yield
    alf.reset_configs()


def _dqn(n_step=1, **kwargs):
    """One action; Q(s) = s, target Q'(s) = 2 s."""
    args = dict(q_network_ctor=QNetwork, config=_config(n_step=n_step), n_step=n_step)
    args.update(kwargs)
    alg = DqnAlgorithm(TensorSpec((1,)), ONE_ACTION, **args)
    _set_linear(alg.q_network, [1.0], [0.0])
    _set_linear(alg.target_q_network, [2.0], [0.0])
    return alg


def _lower_bounded(w, td_lambda=0.0):
    return functools.partial(LowerBoundedTDLoss, gamma=GAMMA, td_lambda=td_lambda, lb_target_q=w)


def test_lower_bounded_one_step_target_by_hand():
    """Columns: ongoing (return 10 above the target 4.6), terminal (return 0.5 below
    the target 2), time limit (unknown return, -1000); ``y <- (1-w) y + w max(y, G)``
    with ``w = 0.5``, squared loss."""
    mid, last = StepType.MID, StepType.LAST
    exp = _experience(
        obs=[[1.0, 2.0, -1.0], [2.0, 0.5, -2.0]],
        reward=[[0.0, 0.0, 0.0], [1.0, 2.0, -1.0]],
        step_type=[[mid, mid, mid], [mid, last, last]],
        discount=[[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]],
        action=[[4, 4, 4]] * 2,
    )
    returns = torch.tensor([[10.0, 0.5, -1000.0], [0.0, 0.0, 0.0]])  # [T, B]
    exp = with_discounted_return(exp, BatchInfo(discounted_return=returns.t()))
    assert torch.equal(exp.rollout_info.discounted_return, returns)
    alg = _dqn(critic_loss_ctor=_lower_bounded(0.5))
    loss = alg.calc_loss(alg.train_steps(exp))
    # y = r1 + 0.9 d1 Q'(s1) = [1 + 0.9 * 4, 2, -1 + 0.9 * -4] = [4.6, 2, -4.6]
    bounded = torch.tensor([0.5 * 4.6 + 0.5 * 10.0, 2.0, -4.6])
    q = torch.tensor([1.0, 2.0, -1.0])
    torch.testing.assert_close(loss.priority, (bounded - q).abs())
    torch.testing.assert_close(loss.loss[0], (bounded - q) ** 2)
    # without returns in the experience the target is y
    plain = exp._replace(rollout_info=DqnRolloutInfo(action=exp.rollout_info.action))
    y = torch.tensor([4.6, 2.0, -4.6])
    torch.testing.assert_close(alg.calc_loss(alg.train_steps(plain)).priority, (y - q).abs())


def test_lower_bounded_n_step_target_is_bounded_by_row_0_return():
    """n = 2, λ = 1, w = 1: row 0's target max(y, G_0); G_1 (row 1) plays no part."""
    mid = StepType.MID
    exp = _experience(
        obs=[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]],
        reward=[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]],
        step_type=[[mid, mid]] * 3,
        discount=[[1.0, 1.0]] * 3,
        action=[[4, 4]] * 3,
    )
    returns = torch.tensor([[9.0, 5.0], [100.0, 100.0], [0.0, 0.0]])
    exp = with_discounted_return(exp, BatchInfo(discounted_return=returns.t()))
    alg = _dqn(n_step=2, critic_loss_ctor=_lower_bounded(1.0, td_lambda=1.0))
    # y = r1 + 0.9 r2 + 0.81 Q'(s2) = 1 + 1.8 + 0.81 * 6 = 7.66
    expected = torch.tensor([9.0, 7.66])
    torch.testing.assert_close(alg.calc_loss(alg.train_steps(exp)).priority, expected - 1.0)


def test_qrdqn_refuses_a_bounding_loss():
    make = functools.partial(
        QrdqnAlgorithm,
        TensorSpec((1,)),
        ONE_ACTION,
        q_network_ctor=functools.partial(QNetwork, num_quantiles=4),
        config=_config(n_step=1),
    )
    for loss in (
        _lower_bounded(0.5),
        functools.partial(_lower_bounded(0.0, 1.0), improve_w_nstep_bootstrap=True),
    ):
        with pytest.raises(ValueError, match="bounds a scalar target, not quantiles"):
            make(critic_loss_ctor=loss)
    assert isinstance(make(critic_loss_ctor=_lower_bounded(0.0))._td_loss, LowerBoundedTDLoss)


class _Recording(LowerBoundedTDLoss):
    """Keeps the returns it was given (to check that they arrive)."""

    seen: list = []

    def __call__(self, *args, discounted_return=()):
        _Recording.seen.append(discounted_return)
        return super().__call__(*args, discounted_return=discounted_return)


def test_dqn_learns_with_lower_bounded_targets_from_the_replay_buffer():
    """CountingEnv (reward = action in 0..3, terminal after 5 steps, so returns become
    known) with ``lb_target_q = 1``: the sampled steps' returns reach the loss, and DQN
    learns the optimum and Q*."""
    alf.config("ReplayBuffer", record_episodic_return=True, gamma=GAMMA)
    _Recording.seen = []
    seeding.set_random_seed(0)
    env = counting_env(num_envs=4, seed=0)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        loss = functools.partial(_Recording, gamma=GAMMA, td_lambda=0.0, lb_target_q=1.0)
        alg = _make(env, _config(), critic_loss_ctor=loss)
        for _ in range(40):
            alg.train_iter()
        returns = [r for r in _Recording.seen if torch.is_tensor(r)]
        assert len(returns) == len(_Recording.seen) == 39 * 4  # the 1st iteration collects
        assert returns[0].shape == (2, 32)
        known = torch.cat([r[0] for r in returns]) > -1000
        assert 0.3 < float(known.float().mean()) < 1.0  # running episodes: unknown
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM  # random play averages 7.5
        # Q*(s_t, a) = a + sum_{k=1}^{4-t} 0.9^k * 3; the returns of the 30%-exploring
        # behaviour policy are below it, so the bound leaves the fixed point unchanged
        expected = torch.tensor([[0.0, 1.0, 2.0, 3.0]]) + torch.tensor([[9.3], [2.7], [0.0]])
        torch.testing.assert_close(_q(alg, [0, 3, 4]), expected, atol=0.3, rtol=0)
    finally:
        env.close()
        eval_env.close()


# -- ALF's DqnAlgorithm is a SacAlgorithm -------------------------------------------------


def test_sac_algorithm_values_an_alf_dqn_inherits_reach_dqn():
    """ALF's ``DqnAlgorithm.__init__`` leaves ``target_update_tau`` and
    ``target_update_period`` (and ``epsilon_greedy``, not an argument of alf's
    ``SacAlgorithm``) to ``SacAlgorithm``'s; it passes the others itself."""
    alf.config(
        "SacAlgorithm",
        target_update_tau=0.3,
        target_update_period=7,
        num_critic_replicas=3,
    )
    alg = _dqn()
    assert (alg._target_updater._tau, alg._target_updater._period) == (0.3, 7)
    alf.config("DqnAlgorithm", target_update_period=5, raise_if_used=False)  # DQN's own first
    assert _dqn()._target_updater._period == 5
    assert _dqn(target_update_tau=1.0)._target_updater._tau == 1.0  # explicit wins
    qr = QrdqnAlgorithm(
        TensorSpec((1,)),
        ONE_ACTION,
        q_network_ctor=functools.partial(QNetwork, num_quantiles=4),
        config=_config(n_step=1),
    )
    assert (qr._target_updater._tau, qr._target_updater._period) == (0.3, 5)
    text = alf.config_util.operative_config_str()
    defaults = text.split("# Default values used")[1].split("# Configured but not used")[0]
    unused = text.split("# Configured but not used")[1]
    assert "SacAlgorithm.num_critic_replicas = 3" in unused
    assert "target_update_tau" not in unused + defaults  # SacAlgorithm's value was used
