"""Algorithms: the Algorithm base class, RL algorithms, losses and data transformers.

The public classes are importable from the package, with ALF's names, e.g.
``from alf.algorithms import PPOAlgorithm, TrainerConfig``. They are imported on first
access (``alf.utils.lazy_exports``): importing one module of the package, such as the
torch-free ``alf.algorithms.config``, does not import the others.
"""

from alf.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "acting": ("Actor", "ActorCore"),
    "actor_critic_algorithm": ("ActorCriticAlgorithm",),
    "agent": ("Agent",),
    "agent_algorithm": ("AgentAlgorithm",),
    "actor_critic_loss": ("ActorCriticLoss",),
    "algorithm": ("Algorithm",),
    "config": ("TrainerConfig",),
    "crossq_algorithm": ("CrossQAlgorithm",),
    "data_transformer": (
        "DataTransformer",
        "IdentityDataTransformer",
        "ImageScaleTransformer",
        "ObservationNormalizer",
        "RewardClipping",
        "RewardNormalizer",
        "RewardScaling",
        "SequentialDataTransformer",
        "UntransformedTimeStep",
        "create_data_transformer",
    ),
    "ddpg_algorithm": ("DdpgAlgorithm", "Td3Algorithm"),
    "diayn_algorithm": ("DIAYNAlgorithm", "create_discrete_skill_spec"),
    "dqn_algorithm": ("DqnAlgorithm",),
    "dsac_algorithm": ("DSacAlgorithm",),
    "entropy_target_algorithm": ("EntropyTargetAlgorithm", "SGDEntropyTargetAlgorithm"),
    "factory": ("create_algorithm",),
    "frame_stacker": ("FrameStacker",),
    "goal_generator": ("RandomCategoricalGoalGenerator",),
    "icm_algorithm": ("ICMAlgorithm",),
    "hindsight_relabeler": ("HindsightExperienceTransformer", "l2_distance_reward_fn"),
    "intrinsic_reward_module": ("IntrinsicRewardModule",),
    "learners": ("EpochLearner", "Learner", "OnPolicyLearner", "ReplayLearner"),
    "oac_algorithm": ("OacAlgorithm",),
    "off_policy_algorithm": ("OffPolicyAlgorithm",),
    "on_policy_algorithm": ("OnPolicyAlgorithm",),
    "ppg_algorithm": ("PPGAlgorithm", "PPGAuxOptions"),
    "ppg_aux_phase_loss": ("PPGAuxPhaseLoss",),
    "ppo_algorithm": ("PPOAlgorithm",),
    "ppo_loss": ("PPOLoss",),
    "predictive_representation_learner": ("PredictiveRepresentationLearner", "SimpleDecoder"),
    "qrdqn_algorithm": ("QrdqnAlgorithm",),
    "qrsac_algorithm": ("QrsacAlgorithm",),
    "redq_algorithm": ("RedqAlgorithm",),
    "rl_algorithm": ("RLAlgorithm",),
    "rnd_algorithm": ("RNDAlgorithm",),
    "sac_algorithm": ("SacAlgorithm",),
    "sarsa_algorithm": ("SarsaAlgorithm",),
    "td_loss": ("LowerBoundedTDLoss", "OneStepTDLoss", "OneStepTDQRLoss", "TDLoss", "TDQRLoss"),
    "tqc_algorithm": ("TqcAlgorithm",),
    "trac_algorithm": ("TracAlgorithm",),
    "unroller": ("AlgorithmPolicy", "Unroll", "Unroller"),
}

__all__ = sorted([name for names in _EXPORTS.values() for name in names])

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
