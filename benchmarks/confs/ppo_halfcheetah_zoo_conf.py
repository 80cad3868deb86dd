"""PPO HalfCheetah-v5 with rl-baselines3-zoo's normalization (``benchmarks.ppo_halfcheetah_zoo``).

``ppo_halfcheetah_bench_conf.py`` (the zoo's tuned HalfCheetah PPO entry, as SB3 gets it) plus
what the entry's ``normalize: true`` gives SB3 — ``VecNormalize`` at its defaults:
observations normalized elementwise by their running mean and variance and clipped to
[-10, 10]; rewards divided by the running standard deviation of the discounted return
(gamma 0.98, the algorithm's), clipped to [-10, 10]; variance epsilon 1e-8 for both.
Evaluation normalizes observations with the statistics frozen and reports raw returns.

The one difference left in the normalization: VecNormalize updates its statistics before
normalizing each step, alf's ``update_mode='rollout'`` applies an unroll's steps when its
training iteration ends (so the first 512 steps are seen unnormalized, with mean 0 and
variance 1). ``reward_norm='reward'`` divides rewards by the standard deviation of the
rewards themselves instead (alf's ``RewardNormalizer`` without ``discount``).
"""

import functools

import alf
from alf.algorithms.data_transformer import ObservationNormalizer, RewardNormalizer

alf.import_config("ppo_halfcheetah_bench_conf.py")

alf.define_config("reward_norm", "return")

_reward_norm = alf.get_config_value("reward_norm")
if _reward_norm not in ("return", "reward"):
    raise ValueError(f"reward_norm must be 'return' or 'reward', got {_reward_norm!r}")
alf.config(
    "TrainerConfig",
    data_transformer_ctor=[
        functools.partial(ObservationNormalizer, clipping=10.0, update_mode="rollout"),
        functools.partial(
            RewardNormalizer,
            clip_value=10.0,
            update_mode="rollout",
            discount=0.98 if _reward_norm == "return" else None,
        ),
    ],
)
