"""PPO on HalfCheetah-v5: alf vs Stable-Baselines3, same hyperparameters.

    python -m benchmarks.ppo_halfcheetah [--seeds 0 1 2] [--steady 6 --repeats 3] [--report_only]

alf trains ``benchmarks/confs/ppo_halfcheetah_bench_conf.py`` (its docstring says how both
follow rl-baselines3-zoo), SB3 the same; both evaluate 10 deterministic episodes every 20,480
env steps and at the end.
"""

from benchmarks.harness.vs_sb3 import Task, main

SB3_PPO = dict(n_steps=512, batch_size=64, n_epochs=20, gamma=0.98, gae_lambda=0.92)
SB3_PPO.update(learning_rate=2.0633e-05, clip_range=0.1, ent_coef=0.000401762)
SB3_PPO.update(vf_coef=0.58096, max_grad_norm=0.8)
SB3_PPO["policy_kwargs"] = dict(log_std_init=-2.0, ortho_init=False, activation_fn="ReLU")
SB3_PPO["policy_kwargs"]["net_arch"] = dict(pi=[256, 256], vf=[256, 256])
TASK = Task(
    name="ppo_halfcheetah",
    algorithm="ppo",
    env_name="HalfCheetah-v5",
    conf="benchmarks/confs/ppo_halfcheetah_bench_conf.py",
    env_steps=200_000,
    eval_every=40 * 512,
    seeds=(0, 1, 2),
    sb3=SB3_PPO,
    conf_params=("TrainerConfig.eval_interval=40",),
    startup=False,
    update_stats=True,
)

if __name__ == "__main__":
    main(TASK, __doc__)
