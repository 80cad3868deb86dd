"""The configurables that alf itself defines, listed by the module that defines them.

A conf file configures any of them by name without importing that module: with only
``import alf``, ``alf.config('TrainerConfig', unroll_length=8)`` works. When a name
matches no registered configurable, ``registry.find_configurable`` imports the modules
listed here that define a configurable of that name (importing a module registers its
configurables, which binds the values set so far). A name that matches nothing here
stays pending until a configurable of that name registers, as a user's own does when
its module is imported.

This is a plain list, read without importing anything: ``tests/configuration/
test_catalog.py`` checks it against what importing every alf module registers, so a
new ``@alf.configurable`` in alf must be added here.
"""

ALF_CONFIGURABLES = {
    "alf.algorithms.actor_critic_algorithm": ("ActorCriticAlgorithm",),
    "alf.algorithms.actor_critic_loss": ("ActorCriticLoss",),
    "alf.algorithms.agent": ("Agent",),
    "alf.algorithms.config": ("TrainerConfig",),
    "alf.data_transformers.transformers": (
        "ImageScaleTransformer",
        "ObservationNormalizer",
        "RewardClipping",
        "RewardNormalizer",
        "RewardScaling",
        "UntransformedTimeStep",
    ),
    "alf.algorithms.ddpg_algorithm": ("DdpgAlgorithm", "Td3Algorithm"),
    "alf.algorithms.dqn_algorithm": ("DqnAlgorithm",),
    "alf.algorithms.entropy_target_algorithm": ("EntropyTargetAlgorithm",),
    "alf.data_transformers.frame_stacker": ("FrameStacker",),
    "alf.data_transformers.hindsight_relabeler": (
        "HindsightExperienceTransformer",
        "l2_distance_reward_fn",
    ),
    "alf.algorithms.ppo_algorithm": ("PPOAlgorithm",),
    "alf.algorithms.ppo_loss": ("PPOLoss",),
    "alf.algorithms.sac_algorithm": ("SacAlgorithm",),
    "alf.algorithms.td_loss": ("OneStepTDLoss", "TDLoss"),
    "alf.algorithms.trac_algorithm": ("TracAlgorithm",),
    "alf.environments.alf_gym_wrapper": ("AlfGymWrapper",),
    "alf.environments.alf_wrappers": (
        "AtariTerminalOnLifeLossWrapper",
        "NonEpisodicAgent",
        "RandomFirstEpisodeLength",
        "TimeLimit",
    ),
    "alf.environments.atari_preprocessing": ("DMAtariPreprocessing",),
    "alf.environments.envpool_environment": ("EnvpoolEnvironment",),
    "alf.environments.parallel_environment": ("FastParallelEnvironment",),
    "alf.environments.gym_wrappers": (
        "ContinuousActionClip",
        "FrameGrayScale",
        "FrameResize",
        "FrameSkip",
        "ImageChannelFirst",
        "MirrorWrapper",
        "NormalizedAction",
    ),
    "alf.environments.suite_atari": ("load",),
    "alf.environments.suite_gym": ("load", "wrap_env"),
    "alf.environments.true_objective": ("TrueObjective",),
    "alf.environments.utils": ("create_environment",),
    "alf.experience_replayers.replay_buffer": ("ReplayBuffer",),
    "alf.initializers": ("orthogonal_init", "torch_default_init"),
    "alf.metrics": ("AverageDiscountedReturnMetric",),
    "alf.networks.actor_distribution_networks": ("ActorDistributionNetwork",),
    "alf.networks.actor_networks": ("ActorNetwork",),
    "alf.networks.critic_networks": ("CriticNetwork",),
    "alf.networks.encoding_networks": ("EncodingNetwork",),
    "alf.networks.projection_networks": (
        "CategoricalProjectionNetwork",
        "NormalProjectionNetwork",
    ),
    "alf.networks.q_networks": ("QNetwork",),
    "alf.networks.rnn_networks": (
        "ActorDistributionRNNNetwork",
        "GRUEncodingNetwork",
        "LSTMEncodingNetwork",
        "ValueRNNNetwork",
    ),
    "alf.networks.value_networks": ("ValueNetwork",),
    "alf.optimizers.adam_tf": ("AdamTF",),
    "alf.optimizers.optimizers": ("Adam", "AdamW", "SGD"),
    "alf.pbt.config": ("PBTConfig",),
    "alf.samplers.config": ("SamplerConfig",),
    "alf.utils.dist_utils": ("calc_default_target_entropy",),
    "alf.utils.losses": ("element_wise_huber_loss", "element_wise_squared_loss"),
    "alf.utils.math_ops": ("clipped_exp",),
    "alf.utils.normalizers": ("AdaptiveNormalizer", "ScalarAdaptiveNormalizer"),
    "alf.utils.schedulers": ("LinearScheduler",),
}
"""Module name -> names (``__qualname__``) of the configurables that module defines."""


def full_names():
    """``[(module, 'module.Name')]`` of every configurable listed in ``ALF_CONFIGURABLES``."""
    return [
        (module, f"{module}.{name}")
        for module, names in ALF_CONFIGURABLES.items()
        for name in names
    ]
