"""Data transformers: applied to time steps during rollout and to replayed experience.

``transform_timestep(time_step, state)`` runs during rollout and prediction on a
batched ``TimeStep`` ``[B, ...]``; ``transform_experience(experience)`` runs on
replayed raw experience ``[T, B, ...]`` (time-major). The two must agree: the
algorithm trains on what rollout saw. Transformers are ``nn.Module``s, so their
statistics (normalizers) are part of the checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch.nn as nn

from alf.data_structures import Experience, TimeStep


class DataTransformer(nn.Module):
    """Base class of data transformers.

    Args:
        transformed_observation_spec: the observation spec after the transform.
        state_spec: spec of the rollout state the transformer carries (``()``
            for stateless transformers).
    """

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

    def transform_timestep(self, time_step: TimeStep, state):
        """Transform a rollout/predict time step ``[B, ...]``; return ``(time_step, state)``."""
        raise NotImplementedError

    def transform_experience(self, experience: Experience) -> Experience:
        """Transform replayed experience ``[T, B, ...]``."""
        raise NotImplementedError


class IdentityDataTransformer(DataTransformer):
    """Changes nothing (the default)."""

    def __init__(self, observation_spec):
        super().__init__(observation_spec)

    def transform_timestep(self, time_step, state):
        return time_step, state

    def transform_experience(self, experience):
        return experience


class SequentialDataTransformer(DataTransformer):
    """Applies a list of transformers in order.

    Args:
        data_transformer_ctors: ctors called as ``ctor(observation_spec=spec)``,
            each receiving the previous transformer's output spec.
        observation_spec: the raw observation spec.
    """

    def __init__(self, data_transformer_ctors: Sequence[Callable], observation_spec):
        transformers = []
        spec = observation_spec
        for ctor in data_transformer_ctors:
            transformer = ctor(observation_spec=spec)
            spec = transformer.transformed_observation_spec
            transformers.append(transformer)
        super().__init__(spec, state_spec=[t.state_spec for t in transformers])
        self._transformers = nn.ModuleList(transformers)

    @property
    def members(self):
        return list(self._transformers)

    def transform_timestep(self, time_step, state):
        new_state = []
        for transformer, sub_state in zip(self._transformers, state):
            time_step, sub_state = transformer.transform_timestep(time_step, sub_state)
            new_state.append(sub_state)
        return time_step, new_state

    def transform_experience(self, experience):
        for transformer in self._transformers:
            experience = transformer.transform_experience(experience)
        return experience


def create_data_transformer(data_transformer_ctor, observation_spec) -> DataTransformer:
    """Build the transformer(s) given by ``TrainerConfig.data_transformer_ctor``.

    Args:
        data_transformer_ctor: None, a ctor, or a list of ctors.
        observation_spec: the raw observation spec of the environment.
    """
    if data_transformer_ctor is None:
        return IdentityDataTransformer(observation_spec)
    if isinstance(data_transformer_ctor, (list, tuple)):
        if not data_transformer_ctor:
            return IdentityDataTransformer(observation_spec)
        return SequentialDataTransformer(data_transformer_ctor, observation_spec)
    return data_transformer_ctor(observation_spec=observation_spec)
