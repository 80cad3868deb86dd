"""PPO on HalfCheetah-v5: alf vs Stable-Baselines3, same hyperparameters, alternating runs.

    python -m benchmarks.ppo_halfcheetah [--seeds 0 1 2] [--quick]
    python -m benchmarks.ppo_halfcheetah --steady_iterations 6 --repeats 3
    python -m benchmarks.ppo_halfcheetah --report_only

alf trains ``benchmarks/confs/ppo_halfcheetah_bench_conf.py`` (its docstring lists every
deviation from rl-baselines3-zoo's tuned entry, which it follows without VecNormalize),
SB3 the same hyperparameters; 1 env, 200k env steps, both evaluate 10 deterministic
episodes on 10 envs every 20,480 env steps and at the end. What is measured:
``benchmarks/harness/ppo.py``.
"""

from benchmarks.harness.ppo import PpoTask, main

SB3_PPO = {
    "policy": "MlpPolicy",
    "n_steps": 512,
    "batch_size": 64,
    "n_epochs": 20,
    "gamma": 0.98,
    "gae_lambda": 0.92,
    "learning_rate": 2.0633e-05,
    "clip_range": 0.1,
    "ent_coef": 0.000401762,
    "vf_coef": 0.58096,
    "max_grad_norm": 0.8,
    "policy_kwargs": {
        "log_std_init": -2.0,
        "ortho_init": False,
        "activation_fn": "ReLU",
        "net_arch": {"pi": [256, 256], "vf": [256, 256]},
    },
}
TASK = PpoTask(
    name="ppo_halfcheetah",
    conf="benchmarks/confs/ppo_halfcheetah_bench_conf.py",
    sb3_spec=dict(env_name="HalfCheetah-v5", num_envs=1, ppo=SB3_PPO, eval_every=40 * 512),
    num_env_steps=200_000,
    seeds=(0, 1, 2),
    conf_params=("TrainerConfig.eval_interval=40",),
    startup=False,
    update_stats=True,
)
TASK.sb3_spec.update(num_eval_episodes=10, num_eval_envs=10)

if __name__ == "__main__":
    main(TASK, __doc__)
