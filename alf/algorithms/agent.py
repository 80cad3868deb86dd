"""``Agent``: ALF's name for "the RL algorithm, plus optional parts", as a factory.

ALF's confs set ``TrainerConfig.algorithm_ctor = Agent`` and choose the algorithm with
``Agent.rl_algorithm_cls``. In alf the agent *is* its RL algorithm: ``Agent(...)`` builds
``rl_algorithm_cls`` with the trainer's arguments and returns it, so training,
checkpoints and ``alf.bin.play`` see exactly the algorithm a conf naming it directly
would build (nothing is wrapped). What ALF's ``Agent`` adds:

- ``optimizer``: the default optimizer of the algorithm's parameters (passed as the
  algorithm's ``optimizer``; an ``optimizer`` configured for the algorithm itself loses,
  as ALF's agent-level optimizer does);
- ``enforce_entropy_target=True``: an ``EntropyTargetAlgorithm`` (built by
  ``entropy_target_cls``) adds an adaptive entropy bonus to the loss of an
  actor-critic algorithm (``ActorCriticAlgorithm``, ``PPOAlgorithm``); any other
  algorithm is an error naming it (SAC tunes its own alpha).

ALF's other parts (representation learners, goal generators, intrinsic rewards, reward
weights) are not in alf: setting one is an error naming the argument.
"""

from __future__ import annotations

import inspect

import alf
from alf.algorithms.entropy_target_algorithm import EntropyTargetAlgorithm
from alf.tensor_specs import TensorSpec

_NOT_IN_ALF = (
    "reward_weight_algorithm_cls",
    "representation_learner_cls",
    "goal_generator",
    "intrinsic_reward_module",
)


@alf.configurable
def Agent(  # noqa: N802 (ALF's public name)
    observation_spec,
    action_spec,
    reward_spec=TensorSpec(()),
    env=None,
    config=None,
    rl_algorithm_cls=None,
    reward_weight_algorithm_cls=None,
    representation_learner_cls=None,
    goal_generator=None,
    intrinsic_reward_module=None,
    intrinsic_reward_coef: float = 1.0,
    extrinsic_reward_coef: float = 1.0,
    enforce_entropy_target: bool = False,
    entropy_target_cls=EntropyTargetAlgorithm,
    optimizer=None,
    debug_summaries: bool = False,
    name: str = "AgentAlgorithm",
):
    """Build ``rl_algorithm_cls`` for the trainer (module doc) and return it.

    Args:
        observation_spec, action_spec, reward_spec, env, config: what the trainer passes
            to ``TrainerConfig.algorithm_ctor``; handed to ``rl_algorithm_cls``.
        rl_algorithm_cls: the RL algorithm class (e.g. ``PPOAlgorithm``); required.
        reward_weight_algorithm_cls, representation_learner_cls, goal_generator,
            intrinsic_reward_module: ALF parts alf does not have; must be None.
        intrinsic_reward_coef, extrinsic_reward_coef: ALF's reward weights; only the
            defaults (1.0) are accepted: without an intrinsic reward they change
            nothing but the reward scale (use ``RewardScaling`` for that).
        enforce_entropy_target: add an ``EntropyTargetAlgorithm``'s entropy bonus.
        entropy_target_cls: ``ctor(action_spec=, debug_summaries=)`` of it.
        optimizer: the default optimizer of the algorithm (see the module doc).
        debug_summaries: passed to the algorithm and the entropy target.
        name: ALF's agent name (unused: the algorithm keeps its own name).

    Returns:
        the ``RLAlgorithm``.
    """
    del name
    for arg in _NOT_IN_ALF:
        if locals()[arg] is not None:
            raise ValueError(f"Agent.{arg} is not supported by alf (ALF-only agent part)")
    for arg in ("intrinsic_reward_coef", "extrinsic_reward_coef"):
        if locals()[arg] != 1.0:
            raise ValueError(
                f"Agent.{arg}={locals()[arg]} is not supported by alf (only 1.0; scale the "
                "reward with RewardScaling)"
            )
    if rl_algorithm_cls is None:
        raise ValueError("Agent.rl_algorithm_cls must be set (e.g. to PPOAlgorithm)")
    kwargs = dict(
        observation_spec=observation_spec,
        action_spec=action_spec,
        reward_spec=reward_spec,
        env=env,
        config=config,
    )
    if debug_summaries:  # only when set: else the algorithm's own configured value holds
        kwargs["debug_summaries"] = True
    if optimizer is not None:
        if not _takes(rl_algorithm_cls, "optimizer"):
            raise ValueError(
                f"Agent.optimizer: {_name(rl_algorithm_cls)} takes no 'optimizer' argument"
            )
        kwargs["optimizer"] = optimizer
    algorithm = rl_algorithm_cls(**kwargs)
    if enforce_entropy_target:
        if not hasattr(algorithm, "set_entropy_target"):
            raise ValueError(
                f"Agent.enforce_entropy_target=True needs an actor-critic algorithm "
                f"(ActorCriticAlgorithm, PPOAlgorithm); {_name(rl_algorithm_cls)} has none"
            )
        algorithm.set_entropy_target(
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
