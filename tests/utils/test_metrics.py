"""EpisodeMetrics against a step-by-step reference, with auto-reset rows."""

import collections

import numpy as np
import torch

import alf
from alf.data_structures import StepType, TimeStep
from alf.metrics import EpisodeMetrics

FIRST, MID, LAST = StepType.FIRST, StepType.MID, StepType.LAST


def _reference(step_types, rewards, buffer_size):
    """Per-row bookkeeping written the obvious way."""
    batch_size = step_types.shape[1]
    returns, lengths = np.zeros(rewards.shape[1:]), np.zeros(batch_size, np.int64)
    episode_returns, episode_lengths = collections.deque(maxlen=buffer_size), []
    env_steps = 0
    for step_type, reward in zip(step_types, rewards):
        for i in range(batch_size):
            if step_type[i] == StepType.FIRST:
                returns[i], lengths[i] = 0.0, 0
                continue
            env_steps += 1
            returns[i] += reward[i]
            lengths[i] += 1
            if step_type[i] == StepType.LAST:
                episode_returns.append(np.copy(returns[i]))
                episode_lengths.append(int(lengths[i]))
    return env_steps, list(episode_returns), episode_lengths


def test_metrics_match_step_by_step_reference():
    rng = np.random.default_rng(0)
    num_steps, batch_size = 200, 5
    step_types = rng.choice([StepType.FIRST, StepType.MID, StepType.LAST], (num_steps, batch_size))
    step_types = step_types.astype(np.int32)
    for rewards in (rng.normal(size=(num_steps, batch_size)), rng.normal(size=(num_steps, 5, 2))):
        reward_dim = 0 if rewards.ndim == 2 else rewards.shape[-1]
        metrics = EpisodeMetrics(batch_size, buffer_size=7, reward_dim=reward_dim)
        for step_type, reward in zip(step_types, rewards.astype(np.float32)):
            metrics(
                TimeStep(step_type=torch.from_numpy(step_type), reward=torch.from_numpy(reward))
            )
        env_steps, returns, lengths = _reference(
            step_types, rewards.astype(np.float32), buffer_size=7
        )
        assert metrics.env_steps == env_steps
        assert metrics.num_episodes == len(lengths)
        np.testing.assert_array_equal(metrics.average_return, np.mean(np.stack(returns), axis=0))
        assert metrics.average_episode_length == np.mean(lengths[-7:])


def test_average_discounted_return_is_alfs_formula_expanded_by_hand():
    """Two envs, gamma 0.9: env 0 has rewards 1, 2, 3 (the last a termination, discount
    0), env 1 has 4 then a lost life (discount 0 mid-episode), then 5, 6; the vector
    reward's second component is twice the first."""
    alf.reset_configs()
    alf.config("AverageDiscountedReturnMetric", discount=0.9)
    try:
        metrics = EpisodeMetrics(2, reward_dim=2)
        rows = [  # (step types, rewards, discounts)
            ([FIRST, FIRST], [0, 0], [1, 1]),
            ([MID, MID], [1, 4], [1, 0]),
            ([MID, MID], [2, 5], [1, 1]),
            ([LAST, MID], [3, 6], [0, 1]),
            ([FIRST, LAST], [0, 7], [1, 1]),
        ]
        discount = torch.zeros(2)  # one buffer rewritten every step, as shared-memory envs do
        for step_types, rewards, discounts in rows:
            reward = torch.tensor(rewards, dtype=torch.float32)
            discount.copy_(torch.tensor(discounts, dtype=torch.float32))
            metrics(
                TimeStep(
                    step_type=torch.tensor(step_types, dtype=torch.int32),
                    reward=torch.stack([reward, 2 * reward], dim=1),
                    discount=discount,
                )
            )
    finally:
        alf.reset_configs()
    g = 0.9
    env0 = (1 * 1 + 2 * (1 + g) + 3 * (1 + g + g * g)) / 3
    # env 1: the discount 0 of the step that got reward 4 stops the sums reaching back past
    # it: reward 5 gets weight 1 + g * 0 * 1, reward 6 gets 1 + g * (1 + g * 0), ...
    env1 = (4 * 1 + 5 * 1 + 6 * (1 + g) + 7 * (1 + g + g * g)) / 4
    expected = np.array([(env0 + env1) / 2, (env0 + env1)])
    np.testing.assert_allclose(metrics.results()["AverageDiscountedReturn"], expected)
    state = metrics.state_dict()
    restored = EpisodeMetrics(2, reward_dim=2)
    restored.load_state_dict(state)
    np.testing.assert_allclose(restored.average_discounted_return, expected)


def test_env_info_fields_averaged_at_episode_end():
    """AverageEnvInfo/<field>: the value at LAST of each per-env numeric env_info leaf,
    over the last buffer_size episodes; other leaves ignored; kept by state_dict."""
    rng = np.random.default_rng(1)
    num_steps, batch_size, buffer_size = 300, 4, 9
    step_types = rng.choice([StepType.MID, StepType.LAST], (num_steps, batch_size), p=[0.8, 0.2])
    success = rng.integers(0, 2, (num_steps, batch_size)).astype(np.float32)
    position = rng.normal(size=(num_steps, batch_size)).astype(np.float32)
    metrics = EpisodeMetrics(batch_size, buffer_size=buffer_size)
    expected = collections.defaultdict(lambda: collections.deque(maxlen=buffer_size))
    for t in range(num_steps):
        env_info = {
            "is_success": torch.from_numpy(success[t]),
            "body": {"x": torch.from_numpy(position[t])},
            "image": torch.zeros(batch_size, 2, 2),  # not per-env scalar: ignored
        }
        step_type = torch.from_numpy(step_types[t].astype(np.int32))
        metrics(TimeStep(step_type=step_type, reward=torch.zeros(batch_size), env_info=env_info))
        for i in np.flatnonzero(step_types[t] == StepType.LAST):
            expected["is_success"].append(success[t, i])
            expected["body.x"].append(position[t, i])
    results = metrics.results()
    assert set(k for k in results if k.startswith("AverageEnvInfo/")) == {
        "AverageEnvInfo/is_success",
        "AverageEnvInfo/body.x",
    }
    for path, values in expected.items():
        assert np.isclose(results[f"AverageEnvInfo/{path}"], np.mean(values))
    restored = EpisodeMetrics(batch_size, buffer_size=buffer_size)
    restored.load_state_dict(metrics.state_dict())
    assert restored.results() == results
