"""PPO on CartPole-v1: alf vs Stable-Baselines3, same hyperparameters, alternating runs.

    python -m benchmarks.ppo_cart_pole [--seeds 0 1 2 3 4] [--quick] [--num_threads 1]
    python -m benchmarks.ppo_cart_pole --steady_iterations 40 --repeats 3
    python -m benchmarks.ppo_cart_pole --report_only

alf trains ``alf/examples/ppo_cart_pole_conf.py`` as is (only the budget set), SB3 the
same rl-baselines3-zoo hyperparameters: 8 envs in-process, n_steps 32, batch 256, 20
epochs, gamma 0.98, GAE λ 0.8, lr and clip range linear from 1e-3 / 0.2 to 0, no entropy
bonus, vf_coef 0.5, max_grad_norm 0.5, 64x64 tanh actor and critic, 100k env steps; both
evaluate 10 deterministic episodes on 10 envs every 5,120 env steps and at the end.
What is measured: ``benchmarks/harness/ppo.py``.
"""

from benchmarks.harness.ppo import PpoTask, main

SB3_PPO = {
    "policy": "MlpPolicy",
    "n_steps": 32,
    "batch_size": 256,
    "n_epochs": 20,
    "gamma": 0.98,
    "gae_lambda": 0.8,
    "learning_rate": {"linear": 1e-3},
    "clip_range": {"linear": 0.2},
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
}
TASK = PpoTask(
    name="ppo_cart_pole",
    conf="alf/examples/ppo_cart_pole_conf.py",
    sb3_spec=dict(env_name="CartPole-v1", num_envs=8, ppo=SB3_PPO, eval_every=5_120),
    num_env_steps=100_000,
    seeds=(0, 1, 2, 3, 4),
    threshold=475.0,
)
TASK.sb3_spec.update(num_eval_episodes=10, num_eval_envs=10)

if __name__ == "__main__":
    main(TASK, __doc__)
