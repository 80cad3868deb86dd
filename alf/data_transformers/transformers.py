"""Data transformers: applied to time steps during rollout and to replayed experience.

``transform_timestep(time_step, state)`` runs during rollout and prediction on a
batched ``TimeStep`` ``[B, ...]``; ``transform_experience(experience)`` runs on
replayed raw experience ``[T, B, ...]`` (time-major). The two must agree: the
algorithm trains on what rollout saw. Transformers are ``nn.Module``s, so their
statistics (normalizers) are part of the checkpoint.

**Statistics** (``ObservationNormalizer``, ``RewardNormalizer``) are updated in
one place only, chosen by ``update_mode``: ``'rollout'`` (from the steps of training
unrolls) or ``'replay'`` (in ``transform_experience``). In rollout mode the steps an
unroll saw are applied to the statistics only when its training iteration ends
(``after_train_iter``, in the order they were seen), so the unroll is normalized with
the same statistics at rollout and when its raw steps are replayed in that
iteration: PPO's importance ratios start at exactly 1, as without a normalizer. In
replay mode replayed steps are normalized before they update the statistics, for the
same reason. An on-policy learner (A2C, PPO) replays nothing: it calls
``train_on_rollout``, and 'replay' statistics then count the rollout's steps as in
rollout mode (the steps replayed would be exactly those). Nothing
updates them while the module is in eval mode (evaluation, ``play``), inside
``statistics_frozen`` (the bootstrap row, which is the next unroll's first step)
— and every transform uses the current statistics. ``prenormalizing`` makes them
update in ``transform_timestep`` whatever the mode (``TrainerConfig.
num_prenormalization_steps``).

The base classes ``DataTransformer`` and ``TimeStepTransformer``, the default
``IdentityDataTransformer``, ``statistics_frozen`` and the field helpers are in
``alf.data_transformers.base``; the transformers that read the replay buffer are in their
own modules, ``FrameStacker`` (``frame_stacker``) and ``HindsightExperienceTransformer``
(``hindsight_relabeler``). All are importable from ``alf.data_transformers`` (and from
ALF's path ``alf.algorithms.data_transformer``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import torch
import torch.nn as nn

import alf
import alf.nest as nest
from alf.data_structures import StepType, TimeStep
from alf.data_transformers.base import (
    DataTransformer,
    IdentityDataTransformer,
    TimeStepTransformer,
    field_paths,
    map_fields,
)
from alf.tensor_specs import BoundedTensorSpec, TensorSpec
from alf.utils.action_mask import ACTION_MASK_FIELD, has_action_mask
from alf.utils.normalizers import AdaptiveNormalizer, ScalarAdaptiveNormalizer


@alf.configurable
class UntransformedTimeStep(TimeStepTransformer):
    """Keep a copy of the raw time step in ``TimeStep.untransformed``.

    Must be the first transformer, so the copy is the raw time step.
    """

    def __init__(self, observation_spec):
        super().__init__(observation_spec)

    def _transform(self, time_step):
        return time_step._replace(untransformed=time_step._replace(untransformed=()))


# -- ordering ------------------------------------------------------------------------


def check_order(transformers: Sequence[DataTransformer]) -> None:
    """Raise ``ValueError`` unless ``transformers`` are in a valid order.

    Rules: ``UntransformedTimeStep`` comes first; transformers that read the replay
    buffer directly (``reads_replay_buffer``: ``HindsightExperienceTransformer``,
    ``FrameStacker``) come before all others, since they read raw steps from the
    buffer and would undo or miss what an earlier transformer did.
    """
    names = [type(t).__name__ for t in transformers]
    for i, t in enumerate(transformers):
        if isinstance(t, UntransformedTimeStep) and i > 0:
            raise ValueError(
                f"Data transformer order: UntransformedTimeStep must come before "
                f"{names[0]} (rule: UntransformedTimeStep is the first transformer); got {names}"
            )
    for i, t in enumerate(transformers):
        if not t.reads_replay_buffer:
            continue
        for earlier, name in zip(transformers[:i], names[:i]):
            if not earlier.reads_replay_buffer and not isinstance(earlier, UntransformedTimeStep):
                raise ValueError(
                    f"Data transformer order: {names[i]} must come before {name} (rule: "
                    f"transformers that read the replay buffer directly, e.g. "
                    f"HindsightExperienceTransformer and FrameStacker, come before all others "
                    f"except UntransformedTimeStep); got {names}"
                )


class SequentialDataTransformer(DataTransformer):
    """Applies a list of transformers in order (the order is checked: ``check_order``).

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
        check_order(transformers)
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


# -- rewards ---------------------------------------------------------------------------


@alf.configurable
class RewardClipping(TimeStepTransformer):
    """Clip rewards to ``[minmax[0], minmax[1]]``.

    Args:
        observation_spec: the observation spec (unchanged).
        minmax: ``(min, max)`` of the clipped reward.
    """

    def __init__(self, observation_spec, minmax=(-1.0, 1.0)):
        super().__init__(observation_spec)
        if minmax[0] > minmax[1]:
            raise ValueError(f"RewardClipping: minmax {minmax} has min > max")
        self._minmax = tuple(minmax)

    def _transform(self, time_step):
        return time_step._replace(reward=time_step.reward.clamp(*self._minmax))


@alf.configurable
class RewardScaling(TimeStepTransformer):
    """Multiply rewards by ``scale``.

    Args:
        observation_spec: the observation spec (unchanged).
        scale: the factor.
    """

    def __init__(self, observation_spec, scale: float):
        super().__init__(observation_spec)
        self._scale = scale

    def _transform(self, time_step):
        return time_step._replace(reward=time_step.reward * self._scale)


# -- observations ----------------------------------------------------------------------


@alf.configurable
class ImageScaleTransformer(TimeStepTransformer):
    """Scale uint8 images ``[0, 255]`` to float32 ``[min, max]``.

    Args:
        observation_spec: the observation spec.
        fields: dotted paths of the image fields (None: the whole observation, which
            must then be one uint8 tensor).
        min: value of pixel 0.
        max: value of pixel 255.
    """

    def __init__(self, observation_spec, fields=None, min: float = -1.0, max: float = 1.0):  # noqa: A002
        self._fields = field_paths(observation_spec, fields, "ImageScaleTransformer")
        spec = observation_spec
        for field in self._fields:
            leaf = nest.get_field(observation_spec, field)
            if nest.is_nested(leaf) or leaf.dtype != torch.uint8:
                raise ValueError(
                    f"ImageScaleTransformer: field '{field or 'observation'}' must be a uint8 "
                    f"image, got {leaf}"
                )
            spec = nest.set_field(
                spec, field, BoundedTensorSpec(leaf.shape, torch.float32, min, max)
            )
        super().__init__(spec)
        self._min, self._scale = float(min), (float(max) - float(min)) / 255.0

    def _transform(self, time_step):
        def scale(field, x):
            return x.to(torch.float32) * self._scale + self._min

        return time_step._replace(
            observation=map_fields(time_step.observation, self._fields, scale)
        )


# -- statistics --------------------------------------------------------------------------


class _StatisticsTransformer(DataTransformer):
    """A transformer with running statistics updated in one place (see the module doc).

    Subclasses set ``self._normalizer`` and implement ``_select(time_step)`` (the nest
    the statistics are about) and ``_normalized(time_step)`` (normalize with the current
    statistics).
    """

    collects_statistics = True

    def __init__(self, observation_spec, update_mode: str, name: str):
        super().__init__(observation_spec)
        if update_mode not in ("rollout", "replay"):
            raise ValueError(
                f"{name}: update_mode must be 'rollout' or 'replay', got {update_mode!r}"
            )
        self._update_mode = update_mode
        self._prenormalizing = False
        self._counts_rollout = update_mode == "rollout"
        self._pending = []

    @property
    def update_mode(self) -> str:
        return self._update_mode

    def _needs_replay(self) -> bool:
        return not self._counts_rollout

    def train_on_rollout(self) -> None:
        """Nothing will be replayed: count the rollout's steps, whatever the mode (in
        on-policy training the replayed steps would be exactly these)."""
        self._counts_rollout = True

    def _select(self, time_step: TimeStep):
        raise NotImplementedError

    def _normalized(self, time_step: TimeStep) -> TimeStep:
        raise NotImplementedError

    def _counts_at_rollout(self) -> bool:
        """Whether the time steps transformed now are samples of the statistics."""
        return self.training and (self._prenormalizing or self._counts_rollout)

    def _add_samples(self, values) -> None:
        """Merge ``values`` now (prenormalizing) or when the iteration ends (rollout mode)."""
        if self._prenormalizing:
            self._normalizer.update(values)
        else:
            self._pending.append(values)  # applied by after_train_iter

    def transform_timestep(self, time_step, state):
        if self._counts_at_rollout():
            self._add_samples(self._select(time_step))
        return self._normalized(time_step), state

    def take_pending_updates(self) -> list:
        """The values collected for ``after_train_iter``, taken away (see
        ``DataTransformer.take_pending_statistics``)."""
        pending, self._pending = self._pending, []
        return pending

    def add_pending_updates(self, values: list) -> None:
        """Values for ``after_train_iter`` to apply after those collected so far."""
        self._pending.extend(values)

    def after_train_iter(self) -> None:
        """Apply the updates of this iteration's unroll, in the order they were seen."""
        pending, self._pending = self._pending, []
        with torch.no_grad():
            for values in pending:
                self._normalizer.update(values)

    def transform_experience(self, experience):
        time_step = self._normalized(experience.time_step)
        if self.training and not self._counts_rollout:
            # after normalizing: replayed steps see the statistics their rollout saw
            self._normalizer.update(self._select(experience.time_step))
        return experience._replace(time_step=time_step)


@alf.configurable
class ObservationNormalizer(_StatisticsTransformer):
    """Normalize observation fields elementwise with running mean and variance.

    Args:
        observation_spec: the observation spec.
        fields: dotted paths of the fields to normalize (None: all of the observation but
            its action mask, ``observation['action_mask']``, which is not a feature).
        clipping: clip normalized values to ``[-clipping, clipping]`` (0: no clipping).
        update_mode: ``'replay'`` (update in ``transform_experience``, from every
            replayed batch, as ALF does) or ``'rollout'`` (update from every unrolled
            step; required for on-policy training).
        speed: None for the exact running average; else see ``RunningMeanVar``.
        zero_mean: subtract the mean (else only scale).
        variance_epsilon: added to the variance.
    """

    def __init__(
        self,
        observation_spec,
        fields=None,
        clipping: float = 0.0,
        update_mode: str = "replay",
        speed: float | None = None,
        zero_mean: bool = True,
        variance_epsilon: float = 1e-8,
    ):
        if fields is None and has_action_mask(observation_spec):
            fields = [k for k in observation_spec if k != ACTION_MASK_FIELD]
        self._fields = field_paths(observation_spec, fields, "ObservationNormalizer")
        spec = observation_spec
        for field in self._fields:
            leaf = nest.get_field(observation_spec, field)
            spec = nest.set_field(
                spec, field, nest.map_structure(lambda s: TensorSpec(s.shape, torch.float32), leaf)
            )
        super().__init__(spec, update_mode, "ObservationNormalizer")
        self._normalizer = AdaptiveNormalizer(
            [nest.get_field(observation_spec, f) for f in self._fields],
            speed=speed,
            zero_mean=zero_mean,
            variance_epsilon=variance_epsilon,
            clipping=clipping,
        )

    @property
    def normalizer(self) -> AdaptiveNormalizer:
        return self._normalizer

    def _select(self, time_step):
        return [nest.get_field(time_step.observation, f) for f in self._fields]

    def _normalized(self, time_step):
        normalized = self._normalizer.normalize(self._select(time_step))
        observation = time_step.observation
        for field, value in zip(self._fields, normalized):
            observation = nest.set_field(observation, field, value)
        return time_step._replace(observation=observation)


@alf.configurable
class RewardNormalizer(_StatisticsTransformer):
    """Divide rewards by a running standard deviation (optionally minus the mean).

    By default the statistics are those of the rewards themselves. With ``discount``
    set they are those of each environment's running discounted return
    ``R_t = discount * R_{t-1} + r_t`` (restarted at every episode's FIRST step, whose
    return is no sample), and rewards are divided by that return's standard deviation
    (the mean is not subtracted): the scheme of Stable-Baselines3's ``VecNormalize``
    and the rl-baselines3-zoo's ``normalize: true``, with ``discount`` the algorithm's
    gamma. The returns are the transformer's rollout state, so ``discount`` needs
    ``update_mode='rollout'`` (replayed batches are not consecutive steps).

    Args:
        observation_spec: the observation spec (unchanged).
        clip_value: clip normalized rewards to ``[-clip_value, clip_value]`` (0: none).
        update_mode: ``'replay'`` or ``'rollout'`` (see ``ObservationNormalizer``).
        speed: see ``RunningMeanVar``.
        zero_mean: subtract the mean reward too (False by default: the sign of
            rewards often matters, e.g. a constant per-step penalty). Not with
            ``discount``.
        discount: None (statistics of the rewards) or the discount of the running
            return whose standard deviation rewards are divided by.
        variance_epsilon: added to the variance.
    """

    def __init__(
        self,
        observation_spec,
        clip_value: float = 0.0,
        update_mode: str = "replay",
        speed: float | None = None,
        zero_mean: bool = False,
        discount: float | None = None,
        variance_epsilon: float = 1e-8,
    ):
        super().__init__(observation_spec, update_mode, "RewardNormalizer")
        if discount is not None:
            if update_mode != "rollout":
                raise ValueError("RewardNormalizer: discount needs update_mode='rollout'")
            if zero_mean:
                raise ValueError("RewardNormalizer: discount does not subtract a mean")
            self._state_spec = TensorSpec((), torch.float64)  # each env's running return
        self._discount = discount
        self._normalizer = ScalarAdaptiveNormalizer(
            TensorSpec(()),
            speed=speed,
            zero_mean=zero_mean,
            variance_epsilon=variance_epsilon,
            clipping=clip_value,
        )

    @property
    def normalizer(self) -> ScalarAdaptiveNormalizer:
        return self._normalizer

    def _select(self, time_step):
        return time_step.reward

    def _normalized(self, time_step):
        return time_step._replace(reward=self._normalizer.normalize(time_step.reward))

    def transform_timestep(self, time_step, state):
        if self._discount is None:
            return super().transform_timestep(time_step, state)
        if self._counts_at_rollout():  # (prenormalizing: statistics first, as VecNormalize)
            reward = time_step.reward.to(torch.float64)
            first = time_step.step_type == StepType.FIRST
            if not isinstance(state, torch.Tensor):  # no rollout state yet
                state = torch.zeros_like(reward)
            state = torch.where(first, 0.0, self._discount * state + reward)
            self._add_samples(state[~first])
        return self._normalized(time_step), state


@contextlib.contextmanager
def prenormalizing(transformer: DataTransformer):
    """Within this context every statistics transformer updates in ``transform_timestep``
    (whatever its ``update_mode``); used to initialize statistics before training."""
    members = transformer.statistics_transformers()
    for m in members:
        m._prenormalizing = True
    try:
        yield transformer
    finally:
        for m in members:
            m._prenormalizing = False
