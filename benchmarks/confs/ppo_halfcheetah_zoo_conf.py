"""PPO HalfCheetah-v5 with the zoo's normalization (``vs_sb3 --task ppo_halfcheetah_zoo``).

``ppo_halfcheetah_bench_conf.py`` plus what the entry's ``normalize: true`` gives SB3
(``VecNormalize``): observations normalized by their running mean and variance, rewards divided
by the running std of the discounted return (gamma 0.98), both clipped to ±10. Left different:
alf's ``update_mode='rollout'`` applies an unroll's statistics when its iteration ends (the first
512 steps unnormalized). ``reward_norm='reward'``: rewards / the std of the rewards instead.
"""

import functools

import alf
from alf.data_transformers import ObservationNormalizer, RewardNormalizer

alf.import_config("ppo_halfcheetah_bench_conf.py")

alf.define_config("reward_norm", "return")

_reward_norm = alf.get_config_value("reward_norm")
if _reward_norm not in ("return", "reward"):
    raise ValueError(f"reward_norm must be 'return' or 'reward', got {_reward_norm!r}")
_discount = 0.98 if _reward_norm == "return" else None
alf.config(
    "TrainerConfig",
    data_transformer_ctor=[
        functools.partial(ObservationNormalizer, clipping=10.0, update_mode="rollout"),
        functools.partial(
            RewardNormalizer, clip_value=10.0, update_mode="rollout", discount=_discount
        ),
    ],
)
