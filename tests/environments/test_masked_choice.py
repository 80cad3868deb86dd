"""``MaskedChoice-v0`` (the toy env whose legal actions change every step) and
``ActionMaskFromInfo`` (gymnasium's ``info['action_mask']`` moved into the observation)."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import alf.environments.masked_choice  # noqa: F401 (registers the id)
from alf.data_structures import StepType
from alf.environments import suite_gym
from alf.environments.gym_wrappers import ActionMaskFromInfo
from alf.environments.masked_choice import MaskedChoice

MASKED_CHOICE = "alf.environments.masked_choice:MaskedChoice-v0"


def test_best_legal_action_each_step_earns_the_optimum_and_illegal_ends_with_penalty():
    env = MaskedChoice()
    observation, _ = env.reset(seed=3)
    total, steps = 0.0, 0
    while True:
        mask, ranks = observation["action_mask"], observation["observation"]
        assert mask.dtype == np.int8 and mask.sum() == 2
        assert sorted((ranks * 3).round().tolist()) == [0, 1, 2, 3]
        best = int(np.argmax(np.where(mask == 1, ranks, -1)))
        observation, reward, terminated, truncated, _ = env.step(best)
        total, steps = total + reward, steps + 1
        assert not terminated
        if truncated:
            break
    assert (total, steps) == (10.0, 10)
    observation, _ = env.reset(seed=4)
    illegal = int(np.flatnonzero(observation["action_mask"] == 0)[0])
    _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal"]) == (-10.0, True, False, 1.0)
    with pytest.raises(ValueError, match="num_legal"):
        MaskedChoice(num_actions=4, num_legal=5)


def test_same_seed_same_masks_and_suite_gym_specs():
    def masks(seed):
        env = MaskedChoice()
        observation, _ = env.reset(seed=seed)
        out = [observation["action_mask"]]
        for _ in range(5):
            observation, *_ = env.step(env.best_action)
            out.append(observation["action_mask"])
        return np.stack(out)

    assert np.array_equal(masks(0), masks(0)) and not np.array_equal(masks(0), masks(1))
    env = suite_gym.load(MASKED_CHOICE)
    spec = env.observation_spec()
    assert set(spec) == {"observation", "action_mask"}
    assert spec["action_mask"].shape == (4,) and env.action_spec().maximum == 3
    env.close()


def test_action_mask_from_info_moves_taxis_mask_into_the_observation():
    env = suite_gym.load("Taxi-v4", gym_env_wrappers=(ActionMaskFromInfo,))
    spec = env.observation_spec()
    assert set(spec) == {"observation", "action_mask"} and spec["action_mask"].shape == (6,)
    assert "action_mask" not in env.env_info_spec()
    env.seed(0)
    time_step = env.reset()
    raw = gym.make("Taxi-v4")
    observation, info = raw.reset(seed=0)
    for _ in range(20):
        mask = time_step.observation["action_mask"]
        assert np.array_equal(np.asarray(mask), info["action_mask"])
        assert int(time_step.observation["observation"]) == observation
        action = int(np.flatnonzero(info["action_mask"])[0])
        time_step = env.step(torch.tensor(action))
        observation, _, _, _, info = raw.step(action)
        assert time_step.step_type != StepType.LAST
    env.close()
    with pytest.raises(ValueError, match=r"^ActionMaskFromInfo\(CartPole-v1\): no info"):
        ActionMaskFromInfo(gym.make("CartPole-v1")).reset(seed=0)
    with pytest.raises(ValueError, match="needs a Discrete action space"):
        ActionMaskFromInfo(gym.make("Pendulum-v1"))


class _NoLegalAction(gym.Env):
    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {"action_mask": np.zeros(2, np.int8)}


def test_action_mask_from_info_refuses_a_mask_without_legal_action():
    with pytest.raises(ValueError, match=r"^ActionMaskFromInfo\(_NoLegalAction\): .*no legal"):
        ActionMaskFromInfo(_NoLegalAction()).reset(seed=0)
