"""The alf-vs-Stable-Baselines3 tasks (``python -m benchmarks.vs_sb3 --task NAME``): a task is a
config entry, the same hyperparameters given to alf (its conf, which says how it follows
rl-baselines3-zoo's entry) and to SB3 (``sb3``), and when both evaluate (``eval_every`` env
steps: for PPO and DQN the conf's ``eval_interval`` iterations; and at the end).
"""

from __future__ import annotations

import dataclasses

#: ``stable_baselines3.SAC`` keyword arguments at SB3's defaults.
SB3_SAC = dict(learning_rate=3e-4, buffer_size=1_000_000, learning_starts=100, batch_size=256)
SB3_SAC.update(tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto")
SB3_SAC.update(target_entropy="auto", policy_kwargs=dict(net_arch=[256, 256]))
#: ``sb3_contrib.CrossQ`` keyword arguments at its defaults (its policy: actor 256x256, critics
#: 1024x1024 with BatchRenorm, Adam betas (0.5, 0.999)); alf's conf has the same.
SB3_CROSSQ = dict(SB3_SAC, learning_rate=1e-3, policy_delay=3, policy_kwargs={})
del SB3_CROSSQ["tau"]
SB3_PPO_CART_POLE = dict(n_steps=32, batch_size=256, n_epochs=20, gamma=0.98, gae_lambda=0.8)
SB3_PPO_CART_POLE.update(learning_rate={"linear": 1e-3}, clip_range={"linear": 0.2})
SB3_PPO_CART_POLE.update(ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5)
SB3_PPO_HALFCHEETAH = dict(n_steps=512, batch_size=64, n_epochs=20, gamma=0.98, gae_lambda=0.92)
SB3_PPO_HALFCHEETAH.update(learning_rate=2.0633e-05, clip_range=0.1, ent_coef=0.000401762)
SB3_PPO_HALFCHEETAH.update(vf_coef=0.58096, max_grad_norm=0.8)
SB3_PPO_HALFCHEETAH["policy_kwargs"] = dict(log_std_init=-2.0, ortho_init=False)
SB3_PPO_HALFCHEETAH["policy_kwargs"].update(activation_fn="ReLU", net_arch=dict(pi=[256] * 2))
SB3_PPO_HALFCHEETAH["policy_kwargs"]["net_arch"]["vf"] = [256, 256]
SB3_DQN = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000)
SB3_DQN.update(gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128)
SB3_DQN.update(exploration_fraction=0.16, exploration_final_eps=0.04)
SB3_DQN["policy_kwargs"] = dict(net_arch=[256, 256])
SB3_QRDQN = dict(SB3_DQN, policy_kwargs=dict(net_arch=[256, 256], n_quantiles=10))  # sb3-contrib
#: ``sb3_contrib.TQC`` keyword arguments at its defaults (SAC's, 2 critics × 25 quantiles, 2
#: dropped per critic), as ``alf/examples/tqc_halfcheetah_conf.py``.
SB3_TQC = dict(SB3_SAC, top_quantiles_to_drop_per_net=2)
SB3_TQC["policy_kwargs"] = dict(net_arch=[256, 256], n_critics=2, n_quantiles=25)


@dataclasses.dataclass(frozen=True)
class Task:
    """One benchmark: ``sb3`` holds SB3's keyword arguments; ``steady_starts`` is SAC's
    ``learning_starts`` in steady-state runs (alf: ``initial_collect_steps``); ``sb3_class``
    (``"module:Class"``) replaces SB3's class of ``algorithm`` (which says how the task runs:
    CrossQ and TQC run as SAC does, QR-DQN as DQN)."""

    name: str
    algorithm: str  # "ppo", "sac" or "dqn"
    env_name: str
    conf: str
    env_steps: int
    eval_every: int
    seeds: tuple[int, ...]
    sb3: dict
    conf_params: tuple[str, ...] = ()
    threshold: float | None = None
    num_envs: int = 1
    num_eval_episodes: int = 10
    learning_starts: int = 0
    steady_starts: int = 0
    normalize: bool = False  # PPO: SB3 in VecNormalize (the zoo's ``normalize: true``)
    sb3_class: str = ""

    @property
    def unit(self) -> str:
        return "updates" if self.algorithm == "sac" else "steps"

    def quick(self) -> Task:
        """A tiny budget that still runs every part (evaluations and rates included)."""
        if self.algorithm == "sac":
            tiny = dict(env_steps=600, eval_every=200, learning_starts=100, steady_starts=100)
            return dataclasses.replace(self, **tiny, sb3=dict(self.sb3, learning_starts=100))
        per_iteration = self.num_envs * self.sb3.get("n_steps", self.sb3.get("train_freq"))
        params = [p for p in self.conf_params if not p.startswith("TrainerConfig.eval_int")]
        params = (*params, "TrainerConfig.eval_interval=2")
        return dataclasses.replace(
            self, env_steps=4 * per_iteration, eval_every=2 * per_iteration, conf_params=params
        )


_CROSSQ_HALFCHEETAH = Task(
    "crossq_halfcheetah", "sac", "HalfCheetah-v5", "alf/examples/crossq_halfcheetah_conf.py",
    env_steps=100_000, eval_every=10_000, seeds=(0, 1, 2), sb3=SB3_CROSSQ, num_eval_episodes=5,
    learning_starts=100, steady_starts=1_000, sb3_class="sb3_contrib:CrossQ",
)  # fmt: skip
_PPO_HALFCHEETAH = Task(
    "ppo_halfcheetah", "ppo", "HalfCheetah-v5", "benchmarks/confs/ppo_halfcheetah_bench_conf.py",
    env_steps=200_000, eval_every=40 * 512, seeds=(0, 1, 2), sb3=SB3_PPO_HALFCHEETAH,
    conf_params=("TrainerConfig.eval_interval=40",),
)  # fmt: skip
_DQN_CART_POLE = Task(
    "dqn_cart_pole", "dqn", "CartPole-v1", "alf/examples/dqn_cart_pole_conf.py", env_steps=50_000,
    eval_every=2_560, seeds=(0, 1, 2), sb3=SB3_DQN, threshold=475.0, learning_starts=1000,
)  # fmt: skip
_SAC_HALFCHEETAH = Task(
    "sac_halfcheetah", "sac", "HalfCheetah-v5", "alf/examples/sac_halfcheetah_conf.py",
    env_steps=100_000, eval_every=10_000, seeds=(0, 1, 2), num_eval_episodes=5,
    sb3=dict(SB3_SAC, learning_starts=10_000), learning_starts=10_000, steady_starts=1_000,
)  # fmt: skip
TASKS = {
    "ppo_cart_pole": Task(
        "ppo_cart_pole", "ppo", "CartPole-v1", "alf/examples/ppo_cart_pole_conf.py",
        env_steps=100_000, eval_every=5_120, seeds=(0, 1, 2, 3, 4), sb3=SB3_PPO_CART_POLE,
        threshold=475.0, num_envs=8,
    ),
    "sac_pendulum": Task(
        "sac_pendulum", "sac", "Pendulum-v1", "alf/examples/sac_pendulum_conf.py",
        env_steps=20_000, eval_every=2_000, seeds=(0, 1, 2, 3, 4), threshold=-200.0,
        sb3=dict(SB3_SAC, learning_rate=1e-3), learning_starts=100, steady_starts=100,
    ),
    "dqn_cart_pole": _DQN_CART_POLE,
    "qrdqn_cart_pole": dataclasses.replace(
        _DQN_CART_POLE, name="qrdqn_cart_pole", conf="alf/examples/qrdqn_cart_pole_conf.py",
        sb3=SB3_QRDQN, sb3_class="sb3_contrib:QRDQN",
    ),
    "ppo_halfcheetah": _PPO_HALFCHEETAH,
    "ppo_halfcheetah_zoo": dataclasses.replace(
        _PPO_HALFCHEETAH, name="ppo_halfcheetah_zoo", seeds=(0, 1, 2, 3, 4), normalize=True,
        conf="benchmarks/confs/ppo_halfcheetah_zoo_conf.py",
    ),
    "crossq_halfcheetah": _CROSSQ_HALFCHEETAH,
    "crossq_pendulum": dataclasses.replace(
        _CROSSQ_HALFCHEETAH, name="crossq_pendulum", env_name="Pendulum-v1", env_steps=20_000,
        eval_every=2_000, seeds=(0, 1, 2, 3, 4), threshold=-200.0, steady_starts=100,
        conf_params=("create_environment.env_name='Pendulum-v1'",), num_eval_episodes=10,
    ),
    "sac_halfcheetah": _SAC_HALFCHEETAH,
    "tqc_halfcheetah": dataclasses.replace(
        _SAC_HALFCHEETAH, name="tqc_halfcheetah", conf="alf/examples/tqc_halfcheetah_conf.py",
        sb3=dict(SB3_TQC, learning_starts=10_000), sb3_class="sb3_contrib:TQC",
    ),
}  # fmt: skip
