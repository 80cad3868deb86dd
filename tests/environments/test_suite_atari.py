"""suite_atari.load on real ALE games: observations, no-op starts, lives, time limits,
the conf's data transformers, and bad input named in one error."""

import numpy as np
import pytest
import torch

pytest.importorskip("ale_py")

from alf.data_structures import StepType  # noqa: E402
from alf.data_transformers import (  # noqa: E402
    FrameStacker,
    ImageScaleTransformer,
    RewardClipping,
    SequentialDataTransformer,
)
from alf.environments import suite_atari  # noqa: E402
from alf.environments.alf_wrappers import AtariTerminalOnLifeLossWrapper  # noqa: E402
from alf.environments.utils import create_environment  # noqa: E402
from alf.tensor_specs import zeros_from_spec  # noqa: E402

BREAKOUT = "BreakoutNoFrameskip-v4"


def _play(env, steps, seed=0):
    """Uniformly random actions for ``steps`` steps (or until LAST); the time steps."""
    rng = np.random.default_rng(seed)
    n = int(env.action_spec().maximum) + 1
    out = [env.reset()]
    for _ in range(steps):
        out.append(env.step(np.int64(rng.integers(n))))
        if out[-1].step_type == StepType.LAST:
            break
    return out


def test_observations_are_84x84_gray_uint8_channel_first():
    env = suite_atari.load(BREAKOUT)
    spec = env.observation_spec()
    assert tuple(spec.shape) == (1, 84, 84) and spec.dtype == torch.uint8
    env.seed(0)
    steps = _play(env, 20)
    assert all(ts.observation.shape == (1, 84, 84) for ts in steps)
    assert all(ts.observation.dtype == np.uint8 for ts in steps)
    assert steps[-1].observation.max() > 0  # the screen is drawn
    assert int(env.action_spec().maximum) == 3  # Breakout's minimal action set
    env.close()


def test_v5_ids_load_with_single_frame_steps():
    env = suite_atari.load("ALE/Pong-v5")
    gym_env = env.unwrapped.gym.unwrapped
    assert gym_env._frameskip == 1
    assert tuple(env.observation_spec().shape) == (1, 84, 84)
    env.close()


def test_noop_starts_play_1_to_30_frames_before_fire():
    env = suite_atari.load(BREAKOUT)
    frames = []
    for seed in range(40):
        env.seed(seed)
        frames.append(int(env.reset().env_info["episode_frame_number"]))
    noops = np.asarray(frames) - 2  # FIRE and action 2: two more frames
    assert noops.min() >= 1 and noops.max() <= 30 and len(set(noops)) >= 15
    env.close()


def test_a_lost_life_has_discount_0_but_the_game_goes_on():
    env = suite_atari.load(BREAKOUT)
    env.seed(0)
    steps = _play(env, 5000)
    lives = [int(ts.env_info["lives"]) for ts in steps]
    assert lives[0] == 5 and lives[-1] == 0
    assert steps[-1].step_type == StepType.LAST and steps[-1].discount == 0
    assert [ts.step_type for ts in steps[1:-1]] == [StepType.MID] * (len(steps) - 2)
    lost = [t for t in range(1, len(steps)) if lives[t] < lives[t - 1]]
    assert len(lost) == 5  # one whole game: 5 lives in one episode
    assert [float(steps[t].discount) for t in lost] == [0.0] * 5
    assert sum(float(ts.discount) == 0 for ts in steps) == 5  # nowhere else
    env.close()

    # Without the wrapper (terminal_on_life_loss=False): discount 1 until the game is over.
    env = suite_atari.load(BREAKOUT, terminal_on_life_loss=False)
    env.seed(0)
    same = _play(env, 5000)
    assert len(same) == len(steps)  # the same game
    assert [float(ts.discount) for ts in same[:-1]] == [1.0] * (len(same) - 1)
    env.close()


def test_evaluation_counts_whole_games():
    """A batched env with the life-loss wrapper: one episode per game in the metrics' sense
    (a LAST only at game over), with the game's whole score."""
    env = create_environment(
        BREAKOUT, env_load_fn=suite_atari.load, num_parallel_environments=1, nonparallel=True
    )
    env.seed(3)
    ts = env.reset()
    rng = np.random.default_rng(3)
    lasts, score, zero_discount_mids = 0, 0.0, 0
    for _ in range(5000):
        ts = env.step(torch.as_tensor([rng.integers(4)]))
        score += float(ts.reward[0])
        zero_discount_mids += int(ts.discount[0] == 0 and ts.step_type[0] == StepType.MID)
        if ts.step_type[0] == StepType.LAST:
            lasts += 1
            break
    assert lasts == 1 and zero_discount_mids == 4 and int(ts.env_info["lives"][0]) == 0
    env.close()


def test_time_limit_is_a_last_with_discount_1():
    env = suite_atari.load(BREAKOUT, max_episode_steps=10)
    env.seed(0)
    steps = _play(env, 50)
    assert len(steps) == 11 and steps[-1].step_type == StepType.LAST
    assert float(steps[-1].discount) == 1.0
    env.close()
    # ALE's own frame limit is a truncation: LAST with discount 1 too.
    env = suite_atari.load(BREAKOUT, max_num_frames_per_episode=100)
    env.seed(0)
    steps = _play(env, 200)
    assert steps[-1].step_type == StepType.LAST and float(steps[-1].discount) == 1.0
    assert int(steps[-1].env_info["episode_frame_number"]) == 100
    env.close()


def test_default_time_limit_is_27000_agent_steps():
    env = suite_atari.load(BREAKOUT, terminal_on_life_loss=False)
    assert env.duration == 27_000 == suite_atari.DEFAULT_MAX_EPISODE_STEPS
    env.close()


def test_the_confs_transformers_stack_scale_and_clip():
    env = create_environment(
        BREAKOUT, env_load_fn=suite_atari.load, num_parallel_environments=2, nonparallel=True
    )
    stack = SequentialDataTransformer(
        [
            FrameStacker,
            lambda observation_spec: ImageScaleTransformer(observation_spec, min=0.0, max=1.0),
            lambda observation_spec: RewardClipping(observation_spec, minmax=(-1.0, 1.0)),
        ],
        env.observation_spec(),
    )
    assert tuple(stack.transformed_observation_spec.shape) == (4, 84, 84)
    ts = env.reset()
    out, _ = stack.transform_timestep(ts, zeros_from_spec(stack.state_spec, batch_size=2))
    assert out.observation.shape == (2, 4, 84, 84) and out.observation.dtype == torch.float32
    expected = ts.observation.float() / 255  # the FIRST frame repeated 4 times
    torch.testing.assert_close(out.observation, expected.expand(2, 4, 84, 84))
    rewards = torch.tensor([-5.0, -1.0, -0.5, 0.0, 1.0, 4.0, 7.0])
    clipped = stack.members[2].transform_timestep(ts._replace(reward=rewards), ())[0].reward
    assert clipped.tolist() == [-1.0, -1.0, -0.5, 0.0, 1.0, 1.0, 1.0]
    env.close()


def test_same_seed_same_game():
    obs = []
    for _ in range(2):
        env = suite_atari.load(BREAKOUT)
        env.seed(7)
        obs.append(np.stack([ts.observation for ts in _play(env, 30, seed=1)]))
        env.close()
    np.testing.assert_array_equal(obs[0], obs[1])


@pytest.mark.parametrize(
    "name, kwargs, message",
    [
        ("CartPole-v1", {}, r"'CartPole-v1' is not an Atari \(ALE\) id"),
        ("BreakoutNoFrameskp-v4", {}, r"Unknown gymnasium environment id .*BreakoutNoFrameskip"),
        (BREAKOUT, {"frameskip": 4}, r"frameskip=4, but the ALE env must step single frames"),
    ],
)
def test_bad_input_is_one_error_naming_it(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        suite_atari.load(name, **kwargs)


def test_life_loss_wrapper_needs_lives():
    from alf.environments import suite_gym

    with pytest.raises(ValueError, match="AtariTerminalOnLifeLossWrapper: the env_info .* 'lives'"):
        AtariTerminalOnLifeLossWrapper(suite_gym.load("CartPole-v1"))


def test_configured_by_name_in_a_conf():
    import alf

    alf.reset_configs()
    try:
        alf.config("suite_atari.load", max_episode_steps=3, terminal_on_life_loss=False)
        alf.config("DMAtariPreprocessing", screen_size=42)
        env = create_environment(
            BREAKOUT, env_load_fn=suite_atari.load, num_parallel_environments=1, nonparallel=True
        )
        assert tuple(env.observation_spec().shape) == (1, 42, 42)
        ts = env.reset()
        for _ in range(3):
            ts = env.step(torch.zeros(1, dtype=torch.int64))
        assert ts.step_type[0] == StepType.LAST and float(ts.discount[0]) == 1.0
        env.close()
    finally:
        alf.reset_configs()
