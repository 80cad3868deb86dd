"""A shaped reward and a true objective (``alf.environments.true_objective``): the wrapper
pays the shaped reward and reports the raw score in ``info['true_objective']``, which
``EpisodeMetrics`` averages at each episode's end; a PBT member of
``alf/examples/pbt_ppo_cart_pole_true_objective_conf.py`` publishes that average as its
objective, not the shaped ``AverageReturn``."""

from __future__ import annotations

import json
import os

import gymnasium as gym
import numpy as np
import pytest

from alf.environments.true_objective import TrueObjective, cart_position_penalty
from alf.pbt.config import TRUE_OBJECTIVE
from alf.pbt.workspace import Workspace
from tests.pbt.conftest import REPO, make_trainer

CONF = os.path.join(REPO, "alf", "examples", "pbt_ppo_cart_pole_true_objective_conf.py")


def _episode(env, actions):
    """Rewards and ``true_objective`` of each step of one episode (seed 0) under ``actions``."""
    _, info = env.reset(seed=0)
    objectives, rewards, positions = [info["true_objective"]], [], []
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        positions.append(observation[0])
        objectives.append(info["true_objective"])
        if terminated or truncated:
            break
    return np.array(rewards), np.array(objectives), np.array(positions)


def test_the_wrapper_pays_the_shaped_reward_and_counts_the_raw_one():
    shaped = TrueObjective(gym.make("CartPole-v1"), reward_shaping=cart_position_penalty)
    rewards, objectives, positions = _episode(shaped, [1] * 100)  # always push right: falls
    steps = len(rewards)
    assert 8 <= steps < 20  # the pole falls after a few steps
    assert objectives.tolist() == list(range(steps + 1))  # 0 at reset, then 1 a step
    assert rewards == pytest.approx(1.0 - 0.5 * np.abs(positions) / 2.4)
    assert rewards.sum() < steps and objectives[-1] == steps

    success = TrueObjective(gym.make("CartPole-v1"), success_steps=5)
    _, flags, _ = _episode(success, [1] * 100)
    assert flags.tolist() == [0.0] * 5 + [1.0] * (len(flags) - 5)
    with pytest.raises(ValueError, match="success_steps must be None or an int >= 1"):
        TrueObjective(gym.make("CartPole-v1"), success_steps=0)


def test_a_member_publishes_the_true_objective_not_the_shaped_return(tmp_path):
    params = [
        "TrainerConfig.num_env_steps=2048",
        "TrainerConfig.evaluate=False",
        "TrainerConfig.summary_interval=1000",
        "TrainerConfig.random_seed=3",
        "PBTConfig.interval_steps=1024",
        f"PBTConfig.workspace={str(tmp_path)!r}",
        "PBTConfig.policy_idx=0",
    ]
    trainer = make_trainer(tmp_path / "000", *params, conf=CONF)
    trainer.train()
    results = trainer.algorithm.metrics.results()
    true_objective = results[TRUE_OBJECTIVE]
    # the raw CartPole return is 1 a step: the mean true objective is the mean length
    assert true_objective == pytest.approx(results["AverageEpisodeLength"])
    assert 9 <= true_objective <= 500
    # the shaped return is below it (every step pays less than 1 once the cart moves)
    shaped = float(np.mean(results["AverageReturn"]))
    assert 0.5 * true_objective <= shaped < true_objective - 0.1

    entry = Workspace(str(tmp_path)).newest_entry(0)
    assert entry.env_steps == 2048 and entry.objective == true_objective
    records = Workspace(str(tmp_path)).read_lineage()
    assert [(r["env_steps"], r["metric"]) for r in records] == [
        (1024, TRUE_OBJECTIVE),
        (2048, TRUE_OBJECTIVE),
    ]
    assert records[-1]["objective"] == true_objective
    with open(os.path.join(tmp_path, "000", "pbt", "history.jsonl")) as f:
        published = [json.loads(line)["objective"] for line in f]
    assert published[-1] == true_objective and published[-1] != shaped
