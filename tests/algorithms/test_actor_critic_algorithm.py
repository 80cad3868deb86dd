"""Actor-critic (A2C): learning a tiny env, determinism, the loss by hand."""

import torch

from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm, ActorCriticInfo
from alf.algorithms.actor_critic_loss import ActorCriticLoss
from alf.algorithms.config import TrainerConfig
from alf.data_structures import StepType
from alf.utils import seeding
from tests.algorithms.algorithm_test_utils import (
    COUNTING_OPTIMUM,
    counting_env,
    evaluate,
    make_algorithm,
    parameters_of,
)


def _train(seed, num_iterations):
    seeding.set_random_seed(seed)
    env = counting_env(num_envs=8, seed=seed)
    config = TrainerConfig(unroll_length=10)
    alg = make_algorithm(
        ActorCriticAlgorithm,
        env,
        config,
        lr=1e-2,
        loss=ActorCriticLoss(gamma=0.9, use_gae=True, td_lambda=0.95, entropy_regularization=0.01),
    )
    for _ in range(num_iterations):
        assert alg.train_iter() == 10 * 8
    return alg, env


def test_a2c_learns_counting_env_optimum():
    alg, env = _train(seed=2, num_iterations=150)
    eval_env = counting_env(num_envs=2, seed=11)
    try:
        assert evaluate(alg, eval_env) == COUNTING_OPTIMUM
    finally:
        env.close()
        eval_env.close()


def test_a2c_deterministic():
    a, env_a = _train(seed=5, num_iterations=3)
    b, env_b = _train(seed=5, num_iterations=3)
    pa, pb = parameters_of(a), parameters_of(b)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    env_a.close()
    env_b.close()


def test_actor_critic_loss_by_hand():
    """Two steps then the bootstrap row; gamma 0.5, no GAE: G = r1 + 0.5 * r2 + 0.25 * V2."""
    loss_fn = ActorCriticLoss(gamma=0.5, use_gae=False)
    info = ActorCriticInfo(
        step_type=torch.tensor([[StepType.FIRST], [StepType.MID], [StepType.MID]]),
        reward=torch.tensor([[0.0], [1.0], [2.0]]),
        discount=torch.ones(3, 1),
        log_prob=torch.tensor([[-1.0], [-2.0], [-3.0]]),
        entropy=torch.zeros(3, 1),
        value=torch.tensor([[0.5], [1.0], [4.0]]),
    )
    out = loss_fn(info)
    g0 = 1.0 + 0.5 * 2.0 + 0.25 * 4.0
    g1 = 2.0 + 0.5 * 4.0
    a0, a1 = g0 - 0.5, g1 - 1.0
    expected = torch.tensor([[a0 * 1.0 + (g0 - 0.5) ** 2], [a1 * 2.0 + (g1 - 1.0) ** 2], [0.0]])
    assert torch.allclose(out.loss, expected)


def test_a2c_terminal_vs_truncated_bootstrap():
    """At a time-limit LAST (discount 1) the return bootstraps from V(LAST); at a terminal not."""
    loss_fn = ActorCriticLoss(gamma=1.0, use_gae=False)
    base = dict(
        step_type=torch.tensor([[StepType.MID], [StepType.LAST], [StepType.FIRST]]),
        reward=torch.tensor([[0.0], [1.0], [0.0]]),
        log_prob=torch.zeros(3, 1),
        entropy=torch.zeros(3, 1),
        value=torch.tensor([[0.0], [10.0], [100.0]]),
    )
    truncated = loss_fn(ActorCriticInfo(discount=torch.tensor([[1.0], [1.0], [1.0]]), **base))
    terminated = loss_fn(ActorCriticInfo(discount=torch.tensor([[1.0], [0.0], [1.0]]), **base))
    # row 0 value loss: (G0 - V0)^2 with G0 = 1 + 10 (truncated) or 1 (terminated)
    assert torch.allclose(truncated.extra.td_loss[0], torch.tensor([121.0]))
    assert torch.allclose(terminated.extra.td_loss[0], torch.tensor([1.0]))
