"""The nests that flow through alf: ``TimeStep``, ``AlgStep``, ``LossInfo``, ``Experience``.

A ``TimeStep`` row ``t`` holds the observation ``o_t``, the reward for the action
taken at ``t-1`` (0 at FIRST) and ``prev_action`` (zeros at FIRST). The discount
table (docs/design.md, section 3):

=========  ========  ===================================================
step_type  discount  meaning
=========  ========  ===================================================
FIRST      1         first step of an episode (from reset)
MID        1         any other step
LAST       0         the environment ended the episode (``terminated``)
LAST       1         time limit (``truncated`` or alf's ``TimeLimit``)
=========  ========  ===================================================

The helpers ``restart``, ``transition``, ``termination`` and ``truncation`` build
unbatched numpy time steps on the environment side; batched environments stack
them and convert to torch.
"""

from __future__ import annotations

import collections
import contextlib
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

import alf.nest as nest

__all__ = [
    "AlgStep",
    "BatchInfo",
    "Experience",
    "LossInfo",
    "StepType",
    "TimeStep",
    "restart",
    "termination",
    "transition",
    "truncation",
]


def namedtuple(typename: str, field_names, default_value=None, default_values=()):
    """A ``collections.namedtuple`` type whose fields have defaults (ALF's helper): every
    field ``default_value``, except those ``default_values`` gives (a sequence for the
    first fields in order, or a mapping by name).

    Args:
        typename: the type's name.
        field_names: the fields' names.
        default_value: the default of every field.
        default_values: per-field defaults, over ``default_value``.
    """
    cls = collections.namedtuple(typename, field_names)
    cls.__new__.__defaults__ = (default_value,) * len(cls._fields)
    if isinstance(default_values, Mapping):
        defaults = cls(**default_values)
    else:
        defaults = cls(*default_values)
    cls.__new__.__defaults__ = tuple(defaults)
    with contextlib.suppress(AttributeError, ValueError):  # pickling finds the type in
        cls.__module__ = sys._getframe(1).f_globals.get("__name__", "__main__")  # its module
    return cls


class StepType:
    """Integer codes of ``TimeStep.step_type``."""

    FIRST = 0
    MID = 1
    LAST = 2

    #: numpy dtype of ``step_type`` (torch: ``torch.int32``).
    DTYPE = np.int32


def _equals(value, code):
    """``value == code`` for a python int, numpy array or torch tensor."""
    return value == code


class TimeStep(NamedTuple):
    """One step of (possibly batched) environment output.

    Shapes are ``[...]`` for an unbatched env, ``[B, ...]`` for a batched one and
    ``[T, B, ...]`` for unrolled experience.

    Attributes:
        step_type: ``StepType`` code, int32.
        reward: reward for the action at the previous step (0 at FIRST), float32,
            shaped by ``reward_spec`` (scalar unless the env has vector rewards).
        discount: 0 at a real termination, 1 otherwise (incl. time limits), float32.
        observation: observation nest.
        prev_action: the action taken at the previous step (zeros at FIRST).
        env_id: int32 id of the environment producing this step.
        untransformed: the time step before data transformers (filled by
            ``UntransformedTimeStep``), ``()`` otherwise.
        env_info: nest of extra per-step information with a stable spec.
    """

    step_type: Any = ()
    reward: Any = ()
    discount: Any = ()
    observation: Any = ()
    prev_action: Any = ()
    env_id: Any = ()
    untransformed: Any = ()
    env_info: Any = ()

    def is_first(self):
        """Elementwise ``step_type == FIRST``."""
        return _equals(self.step_type, StepType.FIRST)

    def is_mid(self):
        """Elementwise ``step_type == MID``."""
        return _equals(self.step_type, StepType.MID)

    def is_last(self):
        """Elementwise ``step_type == LAST``."""
        return _equals(self.step_type, StepType.LAST)

    def cuda(self):
        """A copy with every tensor moved to the default CUDA device."""
        return nest.map_structure(lambda x: x.cuda(), self)

    def cpu(self):
        """A copy with every tensor moved to the CPU."""
        return nest.map_structure(lambda x: x.cpu(), self)


class AlgStep(NamedTuple):
    """What ``predict_step``, ``rollout_step`` and ``train_step`` return.

    Attributes:
        output: the algorithm's output (the action for RL algorithms).
        state: the next state nest (recurrent state, ...).
        info: anything needed later (rollout info for training, loss inputs).
    """

    output: Any = ()
    state: Any = ()
    info: Any = ()


class LossInfo(NamedTuple):
    """What ``calc_loss`` returns.

    Attributes:
        loss: the loss to minimize, ``[T, B]`` or ``[B]`` (reduced by the trainer)
            or a scalar.
        scalar_loss: an extra scalar loss added after reduction.
        extra: nest of loss terms for summaries.
        priority: ``[B]`` priorities for prioritized replay, ``()`` when unused.
    """

    loss: Any = ()
    scalar_loss: Any = ()
    extra: Any = ()
    priority: Any = ()


class BatchInfo(NamedTuple):
    """Where a replayed batch came from.

    Attributes:
        env_ids: ``[B]`` environment ids of the sampled sequences.
        positions: ``[B]`` replay positions of the first step of each sequence.
        importance_weights: ``[B]`` importance weights (prioritized replay), or ``()``.
        replay_buffer: the replay buffer the batch came from, or ``()``.
        discounted_return: ``[B, T]`` each sampled step's discounted return to its
            episode's end (``ReplayBuffer(record_episodic_return=True)``), or ``()``.
    """

    env_ids: Any = ()
    positions: Any = ()
    importance_weights: Any = ()
    replay_buffer: Any = ()
    discounted_return: Any = ()


class Experience(NamedTuple):
    """A step of experience as stored in a replay buffer and used for training.

    Attributes:
        time_step: the ``TimeStep`` the action was taken at.
        action: the action taken.
        rollout_info: the ``AlgStep.info`` of ``rollout_step``.
        state: the policy state before the step (for recurrent training).
        batch_info: a ``BatchInfo`` for replayed experience, ``()`` otherwise.
        replay_buffer: the replay buffer (set for replayed data), ``()`` otherwise.
        rollout_info_field: the name of the field holding ``rollout_info``.
    """

    time_step: Any = ()
    action: Any = ()
    rollout_info: Any = ()
    state: Any = ()
    batch_info: Any = ()
    replay_buffer: Any = ()
    rollout_info_field: Any = ()

    @property
    def step_type(self):
        return self.time_step.step_type

    @property
    def reward(self):
        return self.time_step.reward

    @property
    def discount(self):
        return self.time_step.discount

    @property
    def observation(self):
        return self.time_step.observation


def _np_zeros_like_spec(spec):
    return spec.numpy_zeros()


def _make_time_step(
    step_type, observation, prev_action, reward, discount, env_id, env_info
) -> TimeStep:
    return TimeStep(
        step_type=np.asarray(step_type, dtype=StepType.DTYPE),
        reward=np.asarray(reward, dtype=np.float32),
        discount=np.asarray(discount, dtype=np.float32),
        observation=observation,
        prev_action=prev_action,
        env_id=np.asarray(0 if env_id is None else env_id, dtype=np.int32),
        env_info=env_info if env_info is not None else {},
    )


def restart(observation, action_spec, reward_spec=None, env_id=None, env_info=None) -> TimeStep:
    """The FIRST time step of an episode: reward 0, discount 1, zero ``prev_action``.

    Args:
        observation: the observation from ``reset``.
        action_spec: nest of ``TensorSpec``; ``prev_action`` is zeros of it.
        reward_spec: ``TensorSpec`` of the reward (scalar when None).
        env_id: id of the environment.
        env_info: env_info nest (must have the same spec at every step).
    """
    prev_action = nest.map_structure(_np_zeros_like_spec, action_spec)
    reward = reward_spec.numpy_zeros() if reward_spec is not None else 0.0
    return _make_time_step(StepType.FIRST, observation, prev_action, reward, 1.0, env_id, env_info)


def transition(observation, prev_action, reward, discount=1.0, env_id=None, env_info=None):
    """A MID time step."""
    return _make_time_step(
        StepType.MID, observation, prev_action, reward, discount, env_id, env_info
    )


def termination(observation, prev_action, reward, env_id=None, env_info=None):
    """A LAST time step where the environment ended the episode: discount 0."""
    return _make_time_step(StepType.LAST, observation, prev_action, reward, 0.0, env_id, env_info)


def truncation(observation, prev_action, reward, discount=1.0, env_id=None, env_info=None):
    """A LAST time step at a time limit: the discount stays (1), so values bootstrap."""
    return _make_time_step(
        StepType.LAST, observation, prev_action, reward, discount, env_id, env_info
    )
