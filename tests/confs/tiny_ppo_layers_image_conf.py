"""A seconds-long run of ``ppo_layers_image_conf.py`` (PPO with a conv ``alf.nn.Sequential``
encoder written in ALF's layer language), for the export tests."""

import alf

alf.import_config("ppo_layers_image_conf.py")
alf.config("create_environment", num_parallel_environments=2)
alf.config(
    "TrainerConfig",
    unroll_length=16,
    mini_batch_size=16,
    num_updates_per_train_iter=1,
    num_env_steps=0,
    num_iterations=3,
    checkpoint_interval=3,
    evaluate=False,
    summary_interval=1,
    random_seed=1,
    progress_bar=False,
)
