"""``Agent``: an RL algorithm composed with the parts ALF's agents have.

ALF's confs set ``TrainerConfig.algorithm_ctor = Agent`` and choose the algorithm with
``Agent.rl_algorithm_cls``. Alone, the RL algorithm *is* the agent: ``Agent(...)`` builds
``rl_algorithm_cls`` and returns it, so training, checkpoints and ``alf.bin.play`` see
exactly what a conf naming the algorithm directly builds. With any of these parts it
returns an ``AgentAlgorithm`` that composes them around the RL algorithm:

- ``representation_learner_cls``: a learner whose output (``output_spec``) is the
  observation the RL algorithm (and the other parts) see, trained with its own loss and,
  unless ``detach_representation``, by the RL algorithm's gradient too;
- ``goal_generator``: a goal (e.g. DIAYN's skill) appended to the observation:
  the RL algorithm sees ``[observation, goal]``;
- ``intrinsic_reward_module``: a reward of its own (``IntrinsicRewardModule``: ICM, RND,
  DIAYN's discriminator); the RL algorithm is trained on
  ``extrinsic_reward_coef * r + intrinsic_reward_coef * r_intrinsic``.

Each part may be given built (ALF's confs build ``RNDAlgorithm()`` themselves) or as a
constructor, called with ``observation_spec=`` (what it sees) and ``action_spec=``.
Everything is trained from the same experience: on-policy from the unroll, off-policy
from replay (the intrinsic reward recorded at rollout, normalized on the learner's side).

What ALF's ``Agent`` also adds:

- ``optimizer``: the default optimizer (passed as the RL algorithm's ``optimizer``, so an
  ``optimizer`` configured for the algorithm itself loses, as ALF's agent-level optimizer
  does; with parts, also the optimizer of every part that has none of its own);
- ``enforce_entropy_target=True``: an ``EntropyTargetAlgorithm`` (built by
  ``entropy_target_cls``) adds an adaptive entropy bonus to the loss of an actor-critic
  algorithm (``ActorCriticAlgorithm``, ``PPOAlgorithm``); any other algorithm is an error
  naming it (SAC tunes its own alpha).

ALF's reward weight algorithm (multi-dimensional rewards) is not in alf: setting it is an
error naming the argument.
"""

from __future__ import annotations

import inspect

import alf
from alf.algorithms.actor_critic_algorithm import ActorCriticAlgorithm
from alf.algorithms.agent_algorithm import AgentAlgorithm
from alf.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf.tensor_specs import TensorSpec


@alf.configurable
def Agent(  # noqa: N802 (ALF's public name)
    observation_spec,
    action_spec,
    reward_spec=TensorSpec(()),
    env=None,
    config=None,
    rl_algorithm_cls=ActorCriticAlgorithm,
    reward_weight_algorithm_cls=None,
    representation_learner_cls=None,
    goal_generator=None,
    intrinsic_reward_module=None,
    intrinsic_reward_coef: float = 1.0,
    extrinsic_reward_coef: float = 1.0,
    detach_representation: bool = False,
    enforce_entropy_target: bool = False,
    entropy_target_cls=EntropyTargetAlgorithm,
    optimizer=None,
    debug_summaries: bool = False,
    name: str = "AgentAlgorithm",
):
    """Build ``rl_algorithm_cls`` for the trainer, composed with the parts given (module
    doc), and return it.

    Args:
        observation_spec, action_spec, reward_spec, env, config: what the trainer passes
            to ``TrainerConfig.algorithm_ctor``.
        rl_algorithm_cls: the RL algorithm class (ALF's default: ``ActorCriticAlgorithm``).
        reward_weight_algorithm_cls: ALF's reward weights: not in alf, must be None.
        representation_learner_cls: ``ctor(observation_spec=, action_spec=,
            reward_spec=, config=, debug_summaries=)`` of a representation learner.
        goal_generator: a goal generator, built or ``ctor(observation_spec=,
            action_spec=)``.
        intrinsic_reward_module: an ``IntrinsicRewardModule``, built or
            ``ctor(observation_spec=, action_spec=)``.
        intrinsic_reward_coef, extrinsic_reward_coef: the weights of the rewards; without
            an intrinsic reward module only the defaults (1.0) are accepted (use
            ``RewardScaling`` to scale the reward).
        detach_representation: the RL algorithm's gradient stops at the representation
            (only the learner's own loss trains it).
        enforce_entropy_target: add an ``EntropyTargetAlgorithm``'s entropy bonus.
        entropy_target_cls: ``ctor(action_spec=, debug_summaries=)`` of it.
        optimizer: the default optimizer (see the module doc).
        debug_summaries: passed to the algorithm and the entropy target.
        name: the name of the ``AgentAlgorithm`` (with parts).

    Returns:
        the ``RLAlgorithm``: ``rl_algorithm_cls``'s, or an ``AgentAlgorithm`` holding it.
    """
    if reward_weight_algorithm_cls is not None:
        raise ValueError(
            "Agent.reward_weight_algorithm_cls is not supported by alf (ALF's multi-"
            "dimensional reward weights)"
        )
    if rl_algorithm_cls is None:
        raise ValueError("Agent.rl_algorithm_cls=None: expected an RL algorithm class")
    if intrinsic_reward_module is None and goal_generator is None:
        for arg in ("intrinsic_reward_coef", "extrinsic_reward_coef"):
            if locals()[arg] != 1.0:
                raise ValueError(
                    f"Agent.{arg}={locals()[arg]} needs an intrinsic_reward_module (without "
                    "one, scale the reward with RewardScaling)"
                )
    rl_kwargs = {}
    if debug_summaries:  # only when set: else the algorithm's own configured value holds
        rl_kwargs["debug_summaries"] = True
    if optimizer is not None:
        if not _takes(rl_algorithm_cls, "optimizer"):
            raise ValueError(
                f"Agent.optimizer: {_name(rl_algorithm_cls)} takes no 'optimizer' argument"
            )
        rl_kwargs["optimizer"] = optimizer
    specs = dict(observation_spec=observation_spec, action_spec=action_spec)
    parts = (representation_learner_cls, goal_generator, intrinsic_reward_module)
    if all(part is None for part in parts):
        algorithm = rl_algorithm_cls(
            **specs, reward_spec=reward_spec, env=env, config=config, **rl_kwargs
        )
    else:
        algorithm = AgentAlgorithm(
            **specs,
            reward_spec=reward_spec,
            env=env,
            config=config,
            rl_algorithm_cls=rl_algorithm_cls,
            rl_kwargs=rl_kwargs,
            representation_learner_cls=representation_learner_cls,
            goal_generator=goal_generator,
            intrinsic_reward_module=intrinsic_reward_module,
            intrinsic_reward_coef=intrinsic_reward_coef,
            extrinsic_reward_coef=extrinsic_reward_coef,
            detach_representation=detach_representation,
            optimizer=optimizer,
            debug_summaries=debug_summaries,
            name=name,
        )
    if enforce_entropy_target:
        rl = getattr(algorithm, "rl_algorithm", algorithm)
        if not hasattr(rl, "set_entropy_target"):
            raise ValueError(
                f"Agent.enforce_entropy_target=True needs an actor-critic algorithm "
                f"(ActorCriticAlgorithm, PPOAlgorithm); {_name(rl_algorithm_cls)} has none"
            )
        rl.set_entropy_target(
            entropy_target_cls(action_spec=action_spec, debug_summaries=debug_summaries)
        )
    return algorithm


def _takes(ctor, arg: str) -> bool:
    """Whether ``ctor`` (a class or function, possibly a ``functools.partial``) has ``arg``."""
    try:
        params = inspect.signature(ctor).parameters
    except (TypeError, ValueError):
        return True  # cannot tell: let the call decide
    return arg in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _name(ctor) -> str:
    return getattr(ctor, "__name__", None) or type(ctor).__name__
