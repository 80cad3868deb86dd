"""The inputs of an exported policy's checks (``alf.export``): random observations, the
``TimeStep`` the exported function builds, and the difference between two sets of actions."""

from __future__ import annotations

import numpy as np
import torch

from alf.data_structures import TimeStep
from alf.tensor_specs import BoundedTensorSpec


def sample_observations(specs: list, batch_size: int, seed: int = 0) -> list[torch.Tensor]:
    """Random observation leaves ``[batch_size, ...]`` for ``specs``: uniform within finite
    bounds up to 1e4 wide, else standard normal clipped to the bounds; integers uniform."""
    generator = torch.Generator().manual_seed(seed)
    result = []
    for spec in specs:
        if not spec.dtype.is_floating_point:
            result.append(spec.sample((batch_size,), generator=generator))
            continue
        x = torch.randn((batch_size, *spec.shape), dtype=torch.float64, generator=generator)
        if isinstance(spec, BoundedTensorSpec):
            low = torch.as_tensor(np.broadcast_to(spec.minimum, tuple(spec.shape)).copy())
            high = torch.as_tensor(np.broadcast_to(spec.maximum, tuple(spec.shape)).copy())
            narrow = torch.isfinite(low) & torch.isfinite(high) & (high - low <= 1e4)
            u = torch.rand(x.shape, dtype=torch.float64, generator=generator)
            uniform = low.double() + u * (high - low).double().where(narrow, torch.zeros(()))
            x = torch.where(narrow, uniform, x.clamp(low.double(), high.double()))
        result.append(x.to(spec.dtype))
    return result


def time_step_of(observation, step_type: torch.Tensor, prev_action=()) -> TimeStep:
    """The ``TimeStep`` an exported policy acts on: reward 0, discount 1 (``predict_step``
    reads neither)."""
    batch = step_type.shape[0]
    return TimeStep(
        step_type=step_type,
        reward=torch.zeros((batch,), dtype=torch.float32),
        discount=torch.ones((batch,), dtype=torch.float32),
        observation=observation,
        prev_action=prev_action,
    )


def action_difference(expected: list, got: list) -> float:
    """The largest difference between action leaves ``expected`` (tensors) and ``got``
    (arrays): ``inf`` when shapes, dtype kinds or integer actions differ."""
    worst = 0.0
    for e, g in zip(expected, got):
        e = e.numpy()
        if e.shape != g.shape or e.dtype.kind != g.dtype.kind:
            return float("inf")
        if e.dtype.kind in "iub":
            if not np.array_equal(e, g):
                return float("inf")
            continue
        worst = max(worst, float(np.max(np.abs(e.astype(np.float64) - g), initial=0.0)))
    return worst
