"""ALF's ``SGDEntropyTargetAlgorithm``: alpha's gradient step by hand, in an Agent, saved."""

from __future__ import annotations

import io
import math

import pytest
import torch

from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.agent import Agent
from alf.algorithms.config import TrainerConfig
from alf.algorithms.entropy_target_algorithm import SGDEntropyTargetAlgorithm
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.data_structures import LossInfo
from alf.optimizers import SGD, Adam
from alf.tensor_specs import BoundedTensorSpec
from alf.utils import seeding
from alf.utils.dist_utils import calc_default_target_entropy
from alf.utils.schedulers import LinearScheduler
from alf.utils.training_progress import Progress
from tests.algorithms.algorithm_test_utils import (
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    small_networks,
)

CONTINUOUS = BoundedTensorSpec((2,), dtype=torch.float32, minimum=-1.0, maximum=1.0)


def _update(alg, entropy, mask):
    """One update of ``alg`` alone on ``entropy`` (a leaf): its loss, masked-mean reduced."""
    loss = alg.loss(entropy, mask)
    alg.update_with_gradient(LossInfo(loss=loss), valid_masks=mask)
    return loss


def test_alpha_sgd_steps_by_hand_with_a_window_of_two():
    """loss = (H_w - target) log α - α H per step; d(mean loss)/d log α = H_w - target;
    SGD: log α ← log α - lr (H_w - target), H_w the mean of the last two update means."""
    lr, target = 0.1, -1.0
    alg = SGDEntropyTargetAlgorithm(
        CONTINUOUS, initial_alpha=0.5, target_entropy=target, window_size=2, optimizer=SGD(lr=lr)
    )
    mask = torch.tensor([[True, True, False], [True, False, True]])
    batches = [
        torch.tensor([[1.0, 2.0, 9.0], [3.0, 9.0, 4.0]]),  # valid mean 2.5
        torch.tensor([[-1.0, 0.0, 9.0], [1.0, 9.0, 2.0]]),  # valid mean 0.5
        torch.tensor([[-3.0, -3.0, 9.0], [-3.0, 9.0, -3.0]]),  # valid mean -3
    ]
    windows = [2.5, (2.5 + 0.5) / 2, (0.5 - 3.0) / 2]
    log_alpha = math.log(0.5)
    alphas = []
    for values, average in zip(batches, windows):
        entropy = values.clone().requires_grad_(True)
        loss = _update(alg, entropy, mask)
        expected = (average - target) * log_alpha - math.exp(log_alpha) * values
        torch.testing.assert_close(loss.detach(), expected)
        # the bonus trains the policy with α before this step: dL/dH = -α / #valid
        torch.testing.assert_close(entropy.grad, -math.exp(log_alpha) * mask / mask.sum())
        log_alpha -= lr * (average - target)
        assert float(alg.log_alpha.detach()) == pytest.approx(log_alpha, abs=1e-6)
        alphas.append(alg.alpha)
    assert alg.alpha == pytest.approx(math.exp(log_alpha), rel=1e-6)
    # above the target alpha falls; once the window's mean is below it, alpha grows
    assert alphas[1] < alphas[0] < 0.5 and alphas[2] > alphas[1]


def test_default_and_scheduled_targets_and_an_empty_window():
    alg = SGDEntropyTargetAlgorithm(CONTINUOUS)
    assert alg.target_entropy == pytest.approx(calc_default_target_entropy(CONTINUOUS))
    assert alg.alpha == pytest.approx(0.1)  # ALF's default initial_alpha
    progress = Progress()
    scheduled = SGDEntropyTargetAlgorithm(
        CONTINUOUS,
        initial_alpha=1.0,
        target_entropy=LinearScheduler([(0, 1.0), (1, -1.0)], progress=progress),
    )
    progress.update(0, 0, 0.5)
    assert scheduled.target_entropy == 0.0
    entropy = torch.full((2, 2), 2.0, requires_grad=True)
    none_valid = torch.zeros(2, 2, dtype=torch.bool)
    loss = scheduled.loss(entropy, none_valid)  # nothing to average: no gradient to log α
    assert int(scheduled._count) == 0 and torch.equal(loss.detach(), -entropy.detach())
    loss = scheduled.loss(entropy)  # no mask: every step
    assert float(scheduled.average_entropy()) == 2.0
    torch.testing.assert_close(loss.detach(), torch.full((2, 2), 2.0 * 0.0 - 2.0))


def test_bad_values_are_one_line_errors_naming_the_argument():
    with pytest.raises(ValueError, match=r"^SGDEntropyTargetAlgorithm: initial_alpha must be > 0"):
        SGDEntropyTargetAlgorithm(CONTINUOUS, initial_alpha=0.0)
    with pytest.raises(ValueError, match="window_size must be an integer >= 1, got 0$"):
        SGDEntropyTargetAlgorithm(CONTINUOUS, window_size=0)


def test_checkpoint_round_trip_continues_identically():
    kwargs = dict(initial_alpha=0.3, target_entropy=0.5, window_size=3, optimizer=Adam(lr=0.05))
    a = SGDEntropyTargetAlgorithm(CONTINUOUS, **kwargs)
    mask = torch.ones(2, 2, dtype=torch.bool)
    for value in (1.0, 2.0):
        _update(a, torch.full((2, 2), value, requires_grad=True), mask)
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert {"_log_alpha", "_recent", "_count", "_optimizers.0"} <= set(state)
    b = SGDEntropyTargetAlgorithm(CONTINUOUS, **kwargs)
    b.load_state_dict(state)
    losses = [_update(alg, torch.full((2, 2), 4.0, requires_grad=True), mask) for alg in (a, b)]
    assert torch.equal(losses[0], losses[1]) and torch.equal(a.log_alpha, b.log_alpha)
    assert float(a.average_entropy()) == pytest.approx((1 + 2 + 4) / 3)


def test_agent_with_ppo_trains_log_alpha_with_the_agent_optimizer():
    """ALF's ppo_bipedal_walker_conf form: Agent(enforce_entropy_target=True,
    entropy_target_cls=SGDEntropyTargetAlgorithm) around PPO; log α is one more parameter
    of the Agent's optimizer, checkpointed with the algorithm."""
    env = counting_env(num_envs=2)
    try:
        alg = Agent(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            reward_spec=env.reward_spec(),
            env=env,
            config=TrainerConfig(unroll_length=4, mini_batch_size=4, num_updates_per_train_iter=2),
            rl_algorithm_cls=PPOAlgorithm,
            optimizer=Adam(lr=0.01),
            enforce_entropy_target=True,
            entropy_target_cls=SGDEntropyTargetAlgorithm,
        )
        target = alg._entropy_target
        assert isinstance(target, SGDEntropyTargetAlgorithm)
        ((_, optimizer, params),) = alg.optimizers()
        assert any(p is target.log_alpha for p in params)
        before = float(target.log_alpha.detach())
        alg.train_iter()
        assert float(target.log_alpha.detach()) != before and int(target._count) > 0
        assert {"_entropy_target._log_alpha", "_entropy_target._recent"} <= set(alg.state_dict())
    finally:
        env.close()


def test_actor_critic_with_the_sgd_entropy_target_learns_the_counting_env():
    seeding.set_random_seed(0)
    env = counting_env(num_envs=8, seed=0)
    eval_env = counting_env(num_envs=2, seed=7)
    try:
        alg = ActorCriticAlgorithm(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            reward_spec=env.reward_spec(),
            env=env,
            config=TrainerConfig(unroll_length=8),
            optimizer=Adam(lr=0.01),
            **small_networks(),
        )
        alg.set_entropy_target(SGDEntropyTargetAlgorithm(env.action_spec(), initial_alpha=0.1))
        for _ in range(150):
            alg.train_iter()
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM
        # the policy is nearly decided: its entropy went to the target, α adjusting
        target = alg._entropy_target
        assert abs(float(target.average_entropy()) - target.target_entropy) < 0.3
    finally:
        env.close()
        eval_env.close()
