"""``FrameStacker``: stack the last ``stack_size`` frames of observation fields.

The replay buffer stores single frames. During rollout the transformer keeps the
``stack_size - 1`` previous frames as its state; on replay it reads the frames
before each sequence's first row from the replay buffer by position (see
``data_transformer_base``'s module doc) and stacks the rows of the sequence itself.
Both ways, a frame from before the episode's FIRST step is replaced by the FIRST
frame (the first frame is repeated), so replay gives exactly what rollout gave,
across episode boundaries too. One exception: history older than what the buffer
still holds (``ReplayBuffer.oldest_readable_pos``) is replaced by the oldest frame
held; keep ``replay_buffer_length >= unroll_length + stack_size - 1`` when the buffer
is cleared after every iteration so this never happens.
"""

from __future__ import annotations

import torch

import alf
import alf.nest as nest
from alf.data_structures import StepType
from alf.data_transformers.base import DataTransformer, field_paths
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


def _stacked_spec(spec: TensorSpec, stack_size: int, axis: int) -> TensorSpec:
    shape = list(spec.shape)
    shape[axis] *= stack_size
    if isinstance(spec, BoundedTensorSpec):

        def tile(bound):
            bound = torch.as_tensor(bound).broadcast_to(tuple(spec.shape))
            return torch.cat([bound] * stack_size, dim=axis).numpy()

        return BoundedTensorSpec(shape, spec.dtype, tile(spec.minimum), tile(spec.maximum))
    return TensorSpec(shape, spec.dtype)


@alf.configurable
class FrameStacker(DataTransformer):
    """Concatenate each field's last ``stack_size`` frames (oldest first) along ``stack_axis``.

    Args:
        observation_spec: the observation spec.
        stack_size: number of frames stacked (>= 1).
        stack_axis: axis of one frame (no batch dims) to concatenate along, e.g. 0
            for ``[C, H, W]`` images (giving ``[stack_size * C, H, W]``).
        fields: dotted paths of the fields to stack (None: the whole observation,
            which must then be one tensor).
    """

    reads_replay_buffer = True

    def __init__(self, observation_spec, stack_size: int = 4, stack_axis: int = 0, fields=None):
        if stack_size < 1:
            raise ValueError(f"FrameStacker: stack_size must be >= 1, got {stack_size}")
        self._fields = field_paths(observation_spec, fields, "FrameStacker")
        self._stack_size = stack_size
        self._axes = []
        spec = observation_spec
        state_spec = []
        for field in self._fields:
            leaf = nest.get_field(observation_spec, field)
            axis = self._check_leaf(field, leaf, stack_axis)
            self._axes.append(axis)
            spec = nest.set_field(spec, field, _stacked_spec(leaf, stack_size, axis))
            state_spec.append(TensorSpec((stack_size - 1, *leaf.shape), leaf.dtype))
        super().__init__(spec, state_spec=state_spec)

    @staticmethod
    def _check_leaf(field, leaf, stack_axis) -> int:
        name = field or "observation"
        if nest.is_nested(leaf):
            raise ValueError(
                f"FrameStacker: field '{name}' is a nest {leaf}; list its tensor fields instead"
            )
        if leaf.ndim == 0:
            raise ValueError(f"FrameStacker: field '{name}' is a scalar; nothing to stack along")
        axis = stack_axis + leaf.ndim if stack_axis < 0 else stack_axis
        if not 0 <= axis < leaf.ndim:
            raise ValueError(
                f"FrameStacker: stack_axis {stack_axis} is out of range for field '{name}' "
                f"of shape {tuple(leaf.shape)}"
            )
        return axis

    def _needs_replay(self) -> bool:
        return False  # on-policy training keeps the stacked frames of the rollout

    @staticmethod
    def _concat(frames: torch.Tensor, dim: int, axis: int) -> torch.Tensor:
        """``frames`` with a stack dim at ``dim`` (followed by one frame) → concatenated."""
        moved = frames.movedim(dim, dim + axis)
        shape = list(moved.shape)
        shape[dim + axis : dim + axis + 2] = [shape[dim + axis] * shape[dim + axis + 1]]
        return moved.reshape(shape)

    # -- rollout ---------------------------------------------------------------

    def transform_timestep(self, time_step, state):
        is_first = time_step.step_type == StepType.FIRST
        observation = time_step.observation
        new_state = []
        for field, axis, history in zip(self._fields, self._axes, state):
            frame = nest.get_field(observation, field)  # [B, *F]
            first = is_first.reshape(-1, *([1] * frame.ndim))
            repeated = frame.unsqueeze(1).expand(-1, self._stack_size - 1, *frame.shape[1:])
            history = torch.where(first, repeated, history.to(frame.device, frame.dtype))
            frames = torch.cat([history, frame.unsqueeze(1)], dim=1)  # [B, K, *F]
            new_state.append(frames[:, 1:])
            observation = nest.set_field(observation, field, self._concat(frames, 1, axis))
        return time_step._replace(observation=observation), new_state

    # -- replay ----------------------------------------------------------------

    def transform_experience(self, experience):
        batch_info = experience.batch_info
        buffer = self._replay_buffer_of(experience)
        step_type = experience.time_step.step_type  # [T, B]
        num_history = self._stack_size - 1
        history_pos = (
            batch_info.positions.cpu().unsqueeze(0) + torch.arange(-num_history, 0)[:, None]
        )  # [H, B]
        env_ids = batch_info.env_ids.cpu()
        history_pos = torch.maximum(history_pos, buffer.oldest_readable_pos()[env_ids])
        history = buffer.get_field("time_step", env_ids, history_pos)
        ext_step_type = torch.cat([history.step_type.to(step_type), step_type])  # [H + T, B]
        source = self._source_rows(ext_step_type)  # [T, K, B]
        batch = torch.arange(step_type.shape[1], device=step_type.device)
        observation = experience.time_step.observation
        for field, axis in zip(self._fields, self._axes):
            rows = nest.get_field(observation, field)  # [T, B, *F]
            old = nest.get_field(history.observation, field).to(rows)
            frames = torch.cat([old, rows])[source, batch]  # [T, K, B, *F]
            stacked = self._concat(frames.transpose(1, 2), 2, axis)
            observation = nest.set_field(observation, field, stacked)
        return experience._replace(time_step=experience.time_step._replace(observation=observation))

    def _source_rows(self, ext_step_type: torch.Tensor) -> torch.Tensor:
        """``[T, K, B]`` row of the extended sequence ``[H + T, B]`` holding frame ``k`` of
        row ``t``: ``max(H + t - (K - 1 - k), start)``, ``start`` the row of the episode's
        FIRST step at or before ``H + t`` (0 when none is in view)."""
        length = ext_step_type.shape[0]
        num_history = self._stack_size - 1
        index = torch.arange(length, device=ext_step_type.device)[:, None].expand_as(ext_step_type)
        first = torch.where(ext_step_type == StepType.FIRST, index, torch.zeros_like(index))
        start = first.cummax(0).values[num_history:]  # [T, B]
        rows = index[num_history:].unsqueeze(1) - torch.arange(num_history, -1, -1)[:, None].to(
            index
        )  # [T, K, B]
        return torch.maximum(rows, start.unsqueeze(1))
