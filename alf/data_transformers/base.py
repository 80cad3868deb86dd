"""``DataTransformer``, the base class of the data transformers, ``TimeStepTransformer``
(the same map on rollout and replayed time steps), ``IdentityDataTransformer`` (the
default), ``statistics_frozen`` and field helpers.

A transformer maps a rollout ``TimeStep`` ``[B, ...]`` (``transform_timestep``) and
replayed experience ``[T, B, ...]`` (``transform_experience``) the same way; the
transformers themselves and how they are combined are in ``data_transformer``
(``FrameStacker`` in ``frame_stacker``, ``HindsightExperienceTransformer`` in
``hindsight_relabeler``). This module imports none of them, so each can import it.

**Replay buffer access.** The replay buffer stores raw (untransformed) steps.
Transformers that need more than the replayed rows themselves (earlier frames for
``FrameStacker``, future goals for ``HindsightExperienceTransformer``) declare
``reads_replay_buffer = True``. ``OffPolicyAlgorithm`` hands them, in
``experience.batch_info``, a ``BatchInfo(env_ids, positions, (), replay_buffer)``:
the buffer row ``env_ids[b]`` and replay position ``positions[b]`` of row 0 of
sequence ``b`` (row ``t`` is at ``positions[b] + t``), and the buffer itself.
Because they read raw steps by position, such transformers must see the raw
experience: they come before every other transformer (see
``data_transformer.check_order``).
"""

from __future__ import annotations

import contextlib

import torch.nn as nn

import alf.nest as nest
from alf.data_structures import Experience, TimeStep


class DataTransformer(nn.Module):
    """Base class of data transformers.

    Args:
        transformed_observation_spec: the observation spec after the transform.
        state_spec: spec of the rollout state the transformer carries (``()``
            for stateless transformers).
    """

    #: True for transformers that read the replay buffer in ``transform_experience``.
    reads_replay_buffer = False
    #: True for transformers with running statistics (``ObservationNormalizer``,
    #: ``RewardNormalizer``): see ``statistics_transformers``.
    collects_statistics = False

    def __init__(self, transformed_observation_spec, state_spec=()):
        super().__init__()
        self._transformed_observation_spec = transformed_observation_spec
        self._state_spec = state_spec

    @property
    def transformed_observation_spec(self):
        return self._transformed_observation_spec

    @property
    def state_spec(self):
        return self._state_spec

    @property
    def members(self) -> list[DataTransformer]:
        """The transformers applied, in order (``[self]`` unless a sequence)."""
        return [self]

    def needs_replay(self) -> list[str]:
        """Names of the member transformers that only work on replayed experience.

        On-policy training keeps the rollout's transformed experience and never calls
        ``transform_experience``, so it rejects these.
        """
        return [type(t).__name__ for t in self.members if t._needs_replay()]

    def _needs_replay(self) -> bool:
        return self.reads_replay_buffer

    def train_on_rollout(self) -> None:
        """Training will use the rollout's transformed steps and never replay them (an
        on-policy learner says so once, when it is built): a member whose statistics
        update from replayed steps (``update_mode='replay'``) counts the rollout's steps
        instead. Members that need replayed experience stay in ``needs_replay``."""
        for member in self.members:
            if member is not self:
                member.train_on_rollout()

    def _replay_buffer_of(self, experience: Experience):
        """The ``ReplayBuffer`` in ``experience.batch_info`` (for ``reads_replay_buffer``
        transformers); a ValueError naming this transformer when it is not there."""
        buffer = getattr(experience.batch_info, "replay_buffer", ())
        if buffer == () or buffer is None:
            raise ValueError(
                f"{type(self).__name__}.transform_experience needs experience.batch_info "
                "with env_ids, positions and replay_buffer (set by OffPolicyAlgorithm for "
                "replayed data)"
            )
        return buffer

    def transform_timestep(self, time_step: TimeStep, state):
        """Transform a rollout/predict time step ``[B, ...]``; return ``(time_step, state)``."""
        raise NotImplementedError

    def transform_experience(self, experience: Experience) -> Experience:
        """Transform replayed experience ``[T, B, ...]``."""
        raise NotImplementedError

    def after_train_iter(self) -> None:
        """Called by ``RLAlgorithm.train_iter`` once the iteration's training is done
        (statistics transformers apply the updates their rollout collected)."""
        for member in self.members:
            if member is not self:
                member.after_train_iter()

    # -- statistics collected in one copy, applied in another -----------------------------

    def statistics_transformers(self) -> list[DataTransformer]:
        """The transformers with running statistics within this one (itself included), in
        ``modules()`` order: the same order in every copy built from the same conf."""
        return [
            m for m in self.modules() if isinstance(m, DataTransformer) and m.collects_statistics
        ]

    def take_pending_statistics(self) -> list[list]:
        """Per statistics transformer (``statistics_transformers`` order), the values its
        rollout steps collected for ``after_train_iter`` to apply, in the order seen;
        they are taken away (the caller hands them to another copy of these
        transformers with ``add_pending_statistics``: a remote actor's copy to the
        learner's)."""
        return [m.take_pending_updates() for m in self.statistics_transformers()]

    def add_pending_statistics(self, pending: list[list]) -> None:
        """Hand each statistics transformer values to apply at ``after_train_iter`` after
        those it collected itself: ``pending`` as ``take_pending_statistics`` returns it."""
        members = self.statistics_transformers()
        if len(pending) != len(members):
            raise ValueError(
                f"{type(self).__name__}.add_pending_statistics: {len(pending)} lists for "
                f"{len(members)} statistics transformers"
            )
        for member, values in zip(members, pending):
            member.add_pending_updates(values)


def field_paths(observation_spec, fields, who: str) -> list[str]:
    """Check ``fields`` (dotted paths into the observation) exist; ``[""]`` when None."""
    if fields is None:
        return [""]
    available = [p for p, _ in nest.flatten_with_path(observation_spec)]
    paths = []
    for field in fields:
        try:
            nest.get_field(observation_spec, field)
        except (KeyError, AttributeError, IndexError, ValueError, TypeError) as e:
            raise ValueError(
                f"{who}: field '{field}' is not in the observation (its fields: {available})"
            ) from e
        paths.append(field)
    return paths


def map_fields(observation, fields: list[str], fn):
    """``observation`` with each field ``f`` of ``fields`` replaced by ``fn(f, value)``."""
    for field in fields:
        observation = nest.set_field(
            observation, field, fn(field, nest.get_field(observation, field))
        )
    return observation


class TimeStepTransformer(DataTransformer):
    """A stateless transformer that applies the same ``_transform(time_step)`` to the rollout
    time step ``[B, ...]`` and to the replayed time steps ``[T, B, ...]``."""

    def _transform(self, time_step: TimeStep) -> TimeStep:
        raise NotImplementedError

    def transform_timestep(self, time_step, state):
        return self._transform(time_step), state

    def transform_experience(self, experience):
        return experience._replace(time_step=self._transform(experience.time_step))


class IdentityDataTransformer(TimeStepTransformer):
    """Changes nothing (the default)."""

    def __init__(self, observation_spec):
        super().__init__(observation_spec)

    def _transform(self, time_step):
        return time_step


@contextlib.contextmanager
def statistics_frozen(transformer: DataTransformer):
    """Within this context ``transformer`` updates no statistics (eval mode, restored after)."""
    was_training = transformer.training
    transformer.train(False)
    try:
        yield transformer
    finally:
        transformer.train(was_training)
