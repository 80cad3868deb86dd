"""``DIAYNAlgorithm``: the skill discriminator of "Diversity is All You Need" (Eysenbach et
al. 2018) as an intrinsic reward module.

A skill :math:`z \\sim p(z)` is drawn at the start of each episode (by a goal generator,
``RandomCategoricalGoalGenerator``) and the policy :math:`\\pi(a|s, z)` acts with it. A
discriminator :math:`q_\\phi(z|s)` learns to tell the skill from the *state* alone (never
from the skill the policy is given), and the policy is paid for being told apart: the
intrinsic reward of arriving at :math:`s_t` with skill :math:`z` is the paper's

.. math:: r^z_t = \\log q_\\phi(z|s_t) - \\log p(z),

so that the return is a lower bound of the mutual information :math:`I(S; Z)` (the
policy's entropy is SAC's own term). With ``K`` discrete skills and a uniform :math:`p`,
:math:`-\\log p(z) = \\log K`: a skill the discriminator cannot tell from the others
(:math:`q = 1/K`) earns 0, one it is sure of earns :math:`\\log K`. :math:`q_\\phi` is a
softmax classifier trained with the cross entropy :math:`-\\log q_\\phi(z|s_t)`.

Continuous skills (a ``[d]`` float ``skill_spec``) follow ALF: the discriminator predicts
:math:`\\hat z(s)`, its loss is :math:`\\lVert \\hat z(s_t) - z\\rVert^2` and the reward
:math:`-\\lVert \\hat z(s_t) - z\\rVert^2` (a Gaussian :math:`\\log q` up to scale and
constant).

Rows: row ``t`` holds :math:`s_t`, reached by acting with the episode's skill at
``t - 1``; a FIRST row was reached by no action of its skill (the skill is drawn there),
so its reward and loss are 0. As in the paper, the reward of replayed rows is computed by
the discriminator of the time they are trained on (``recompute_reward``; ALF, and
``recompute_reward=False``, give the reward recorded at rollout, by an older
discriminator), and it is not normalized unless ``reward_adapt_speed`` is set (ALF's
default normalizes, with speed 8).

The module sees what the agent's RL algorithm sees, ``[observation, skill]``; the skill is
the goal generator's one-hot goal (discrete skills: ``z`` is its argmax).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

import alf
import alf.nest as nest
from alf.algorithms.intrinsic_reward_module import IntrinsicRewardModule
from alf.configuration.argtypes import Count
from alf.data_structures import AlgStep, LossInfo, StepType, TimeStep
from alf.networks.encoding_networks import EncodingNetwork
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils import math_ops
from alf.utils.normalizers import AdaptiveNormalizer


class DIAYNInfo(NamedTuple):
    """What ``rollout_step`` records: the raw reward ``[B]`` and the skill acted with (the
    index ``[B]`` of a discrete skill, a continuous one ``[B, d]``)."""

    reward: object = ()
    skill: object = ()


class DIAYNLossInfo(NamedTuple):
    """What ``train_step`` computes per row: the loss (0 at FIRST rows), and for discrete
    skills whether the discriminator's most likely skill is the one acted with (its
    ``valid`` rows: not FIRST)."""

    loss: object = ()
    correct: object = ()
    valid: object = ()


@alf.configurable
def create_discrete_skill_spec(num_of_skills: Count) -> BoundedTensorSpec:
    """The spec of one of ``num_of_skills`` discrete skills: an int64 scalar in
    ``[0, num_of_skills - 1]``."""
    return BoundedTensorSpec((), dtype=torch.int64, minimum=0, maximum=num_of_skills - 1)


@alf.configurable
class DIAYNAlgorithm(IntrinsicRewardModule):
    """DIAYN's skill discriminator and reward (module doc).

    Args:
        skill_spec: a discrete ``BoundedTensorSpec`` (``create_discrete_skill_spec(K)``:
            ``K`` skills, a classifier with the cross entropy) or a ``[d]`` float
            ``TensorSpec`` (continuous skills, the squared error).
        encoding_net: a network encoding the observation (without the skill) into the
            discriminator's features; None: the discriminator reads the observation
            itself (then ``observation_spec`` is needed).
        reward_adapt_speed: normalize the reward by running statistics
            (``IntrinsicRewardModule``); None (the paper's): the raw reward.
        recompute_reward: True (the paper's): the reward the RL algorithm is trained on is
            computed when the rows are trained on (replayed), by the discriminator of
            then, from the rows' observations as the experience holds them (the env's:
            with a representation learner, whose output this module sees at rollout, set
            False); False (ALF's): the reward recorded at rollout, by the discriminator of
            that time.
        observation_spec: the observation's spec, or ``[observation_spec, skill_spec]``
            (what an ``Agent`` with a goal generator passes when it builds this module); if
            given, the observation is normalized by running statistics (as ALF does),
            updated on the learner's side from the rows trained on.
        hidden_size: the discriminator's hidden layers after the encoding.
        hidden_activation: their activation.
        optimizer: the discriminator's (and encoding's) optimizer; None: the agent's.
        action_spec: unused (the agent passes it to the parts it builds).
        name: name in summaries.
    """

    def __init__(
        self,
        skill_spec: TensorSpec,
        encoding_net=None,
        reward_adapt_speed: float | None = None,
        recompute_reward: bool = True,
        observation_spec=None,
        hidden_size: tuple[int, ...] = (),
        hidden_activation: Callable = torch.relu_,
        optimizer=None,
        action_spec=None,
        name: str = "DIAYNAlgorithm",
    ):
        del action_spec
        super().__init__(reward_adapt_speed=reward_adapt_speed, optimizer=optimizer, name=name)
        self._discrete, skill_dim = _skill_dim(skill_spec, name)
        self._skill_spec = skill_spec
        self._skill_dim = skill_dim
        self._recompute_reward = recompute_reward
        observation_spec = _observation_part(observation_spec)
        self._observation_normalizer = None
        if observation_spec is not None:
            # the normalized observation: float and unbounded
            observation_spec = nest.map_structure(
                lambda s: TensorSpec(s.shape, torch.float32), observation_spec
            )
            self._observation_normalizer = AdaptiveNormalizer(observation_spec)
        if encoding_net is not None:
            feature_spec = encoding_net.output_spec
        elif observation_spec is not None:
            feature_spec = observation_spec
        else:
            raise ValueError(f"{name}: encoding_net or observation_spec must be given")
        self._encoding_net = encoding_net
        self._discriminator_net = EncodingNetwork(
            feature_spec,
            fc_layer_params=tuple(hidden_size),
            activation=hidden_activation,
            last_layer_size=skill_dim,
            last_activation=math_ops.identity,
        )

    @property
    def skill_spec(self) -> TensorSpec:
        return self._skill_spec

    @property
    def num_of_skills(self) -> int | None:
        """``K`` for discrete skills, None for continuous ones."""
        return self._skill_dim if self._discrete else None

    def discriminate(self, observation) -> torch.Tensor:
        """The discriminator's output ``[B, K]`` (discrete: the logits of
        :math:`q_\\phi(\\cdot|s)`) or ``[B, d]`` (continuous: :math:`\\hat z(s)`) of the
        observation ``[B, ...]`` (without the skill)."""
        if self._observation_normalizer is not None:
            observation = self._observation_normalizer.normalize(observation)
        if self._encoding_net is not None:
            observation = self._encoding_net(observation)[0]
        return self._discriminator_net(observation)[0]

    def _target(self, skill: torch.Tensor) -> torch.Tensor:
        """What the discriminator predicts of a skill as the agent gives it: the index
        ``z`` of a one-hot skill ``[B]``, or a continuous skill itself ``[B, d]``."""
        return skill.argmax(-1) if self._discrete else skill

    def _losses(self, observation, target, step_type) -> DIAYNLossInfo:
        """Per row ``[N]``: :math:`-\\log q_\\phi(z|s)` (or the squared error), 0 at FIRST."""
        prediction = self.discriminate(observation)
        valid = step_type != StepType.FIRST
        if self._discrete:
            loss = torch.nn.functional.cross_entropy(prediction, target, reduction="none")
            correct = (prediction.argmax(-1) == target) & valid
        else:
            loss = (prediction - target).square().sum(-1)
            correct = ()
        return DIAYNLossInfo(loss=loss * valid.to(loss.dtype), correct=correct, valid=valid)

    @torch.no_grad()
    def _reward(self, observation, target, step_type) -> torch.Tensor:
        """The raw reward ``[N]`` of each row (module doc): :math:`\\log q_\\phi(z|s_t) +
        \\log K`, or :math:`-\\lVert \\hat z(s_t) - z\\rVert^2`; 0 at FIRST."""
        losses = self._losses(observation, target, step_type)
        reward = -losses.loss
        if self._discrete:
            reward = (reward + math.log(self._skill_dim)) * losses.valid.to(reward.dtype)
        return reward

    def rollout_step(self, inputs: TimeStep, state) -> AlgStep:
        """The raw reward of each row with the discriminator of now (``_reward``), recorded
        as ``info.reward`` with the skill acted with (``info.skill``)."""
        observation, skill = inputs.observation
        target = self._target(skill)
        reward = self._reward(observation, target, inputs.step_type)
        return AlgStep(output=reward, state=state, info=DIAYNInfo(reward=reward, skill=target))

    def intrinsic_reward(self, time_step, rollout_info, update_statistics: bool = True):
        """The reward of rows ``[T, B]``: with ``recompute_reward``, computed by the
        discriminator of now from the rows' observations and recorded skills, else the one
        recorded at rollout; then normalized if ``reward_adapt_speed`` is set. Also merges
        these rows' observations into the observation statistics (the learner's: every
        layout agrees)."""
        observation = _observation_part(time_step.observation)
        if update_statistics and self._observation_normalizer is not None:
            self._observation_normalizer.update(observation)
        if self._recompute_reward:
            shape = time_step.step_type.shape
            flat = nest.map_structure(lambda x: x.flatten(0, 1), observation)
            reward = self._reward(
                flat, rollout_info.skill.flatten(0, 1), time_step.step_type.flatten(0, 1)
            )
            rollout_info = rollout_info._replace(reward=reward.reshape(shape))
        return super().intrinsic_reward(time_step, rollout_info, update_statistics)

    def train_step(self, inputs: TimeStep, state, rollout_info) -> AlgStep:
        """The discriminator's per-row loss ``[N]`` with gradient (``DIAYNLossInfo``)."""
        observation, skill = inputs.observation
        losses = self._losses(observation, self._target(skill), inputs.step_type)
        return AlgStep(state=state, info=losses)

    def calc_loss(self, info: DIAYNLossInfo) -> LossInfo:
        """The discriminator's loss on every row ``[T, B]`` (0 at FIRST rows); for discrete
        skills its accuracy on the other rows is summarized."""
        extra = {"skill_discriminate_loss": info.loss.detach().mean()}
        if self._discrete:
            valid = info.valid.float()
            extra["accuracy"] = (info.correct.float().sum() / valid.sum().clamp(min=1)).detach()
        return LossInfo(loss=info.loss, extra=extra)


def _skill_dim(skill_spec, name: str) -> tuple[bool, int]:
    """``(discrete, K or d)`` of a skill spec; a one-line error for anything else."""
    if not isinstance(skill_spec, TensorSpec):
        raise ValueError(f"{name}.skill_spec: expected a TensorSpec, got {skill_spec!r}")
    if skill_spec.is_discrete:
        if not isinstance(skill_spec, BoundedTensorSpec) or skill_spec.ndim != 0:
            raise ValueError(
                f"{name}.skill_spec: a discrete skill spec must be a scalar BoundedTensorSpec "
                f"(create_discrete_skill_spec), got {skill_spec!r}"
            )
        count = int(skill_spec.maximum) - int(skill_spec.minimum) + 1
        if count < 2:
            raise ValueError(f"{name}.skill_spec: needs at least 2 skills, got {count}")
        return True, count
    if skill_spec.ndim != 1:
        raise ValueError(
            f"{name}.skill_spec: a continuous skill spec must be 1-D [d], got {skill_spec!r}"
        )
    return False, int(skill_spec.shape[0])


def _observation_part(observation):
    """The observation without the skill: the first of an agent's ``[observation,
    skill]`` list (an observation that is itself a list is not supported)."""
    if isinstance(observation, list) and len(observation) == 2:
        return observation[0]
    return observation
