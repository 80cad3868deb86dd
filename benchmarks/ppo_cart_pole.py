"""PPO on CartPole-v1: alf vs Stable-Baselines3, same hyperparameters.

    python -m benchmarks.ppo_cart_pole [--seeds 0 1 2 3 4] [--steady 40 --repeats 3] [--report_only]

alf trains ``alf/examples/ppo_cart_pole_conf.py``, SB3 the same rl-baselines3-zoo settings;
both evaluate 10 deterministic episodes every 5,120 env steps and at the end.
"""

from benchmarks.harness.vs_sb3 import Task, main

SB3_PPO = dict(n_steps=32, batch_size=256, n_epochs=20, gamma=0.98, gae_lambda=0.8)
SB3_PPO.update(learning_rate={"linear": 1e-3}, clip_range={"linear": 0.2}, ent_coef=0.0)
SB3_PPO.update(vf_coef=0.5, max_grad_norm=0.5)
TASK = Task(
    name="ppo_cart_pole",
    algorithm="ppo",
    env_name="CartPole-v1",
    conf="alf/examples/ppo_cart_pole_conf.py",
    env_steps=100_000,
    eval_every=5_120,  # the conf's eval_interval: 20 iterations of 8 envs x 32 steps
    seeds=(0, 1, 2, 3, 4),
    sb3=SB3_PPO,
    threshold=475.0,
    num_envs=8,
)

if __name__ == "__main__":
    main(TASK, __doc__)
