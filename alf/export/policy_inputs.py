"""The inputs of an exported policy's checks (``alf.export``): random observations, the
``TimeStep`` the exported function builds, and the difference between two sets of actions."""

from __future__ import annotations

import numpy as np
import torch

import alf.nest as nest
from alf.data_structures import TimeStep
from alf.tensor_specs import BoundedTensorSpec
from alf.utils.action_mask import ACTION_MASK_FIELD


class NamedSpecs(list):
    """A list of leaf specs with the leaves' names (``names``: ``observation.action_mask``,
    as the exported inputs are named), for ``sample_observations``."""

    def __init__(self, specs, names):
        super().__init__(specs)
        self.names = list(names)
        if len(self.names) != len(self):
            raise ValueError(f"NamedSpecs: {len(self)} specs but {len(self.names)} names")


def leaf_names(prefix: str, spec) -> list[str]:
    """The names of ``spec``'s leaves: ``prefix`` for a single spec, else
    ``prefix.<path>`` (``observation.action_mask``)."""
    if not nest.is_nested(spec):
        return [prefix]
    return [f"{prefix}.{path}" for path, _ in nest.flatten_with_path(spec)]


def observation_leaf_specs(observation_spec) -> NamedSpecs:
    """The leaf specs of ``observation_spec`` named as the exported inputs are."""
    return NamedSpecs(nest.flatten(observation_spec), leaf_names("observation", observation_spec))


def is_action_mask(name: str | None) -> bool:
    """Whether the leaf named ``name`` (``observation.action_mask``) is an action mask: the
    ``action_mask`` field of a dict (a name with a parent)."""
    return bool(name) and name.split(".")[-1] == ACTION_MASK_FIELD and "." in name


def sample_observations(
    specs: list, batch_size: int, seed: int = 0, names: list | None = None
) -> list[torch.Tensor]:
    """Random observation leaves ``[batch_size, ...]`` for ``specs``: uniform within finite
    bounds up to 1e4 wide, else standard normal clipped to the bounds; integers uniform.

    A leaf named as an action mask (``is_action_mask``; the names are ``names``, else
    ``specs.names`` of a ``NamedSpecs``) holds random 0/1 bits with at least one 1 per row
    over its last dim (``sample_action_mask``): a mask without a legal action is treated as
    all legal, so it would not check the masking."""
    generator = torch.Generator().manual_seed(seed)
    if names is None:
        names = getattr(specs, "names", None)
    if names is not None and len(names) != len(specs):
        raise ValueError(f"sample_observations: {len(specs)} specs but {len(names)} names")
    result = []
    for k, spec in enumerate(specs):
        if names is not None and is_action_mask(names[k]):
            result.append(sample_action_mask(spec, batch_size, generator))
        elif not spec.dtype.is_floating_point:
            result.append(spec.sample((batch_size,), generator=generator))
        else:
            result.append(_sample_float(spec, batch_size, generator))
    return result


def _sample_float(spec, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    x = torch.randn((batch_size, *spec.shape), dtype=torch.float64, generator=generator)
    if isinstance(spec, BoundedTensorSpec):
        low = torch.as_tensor(np.broadcast_to(spec.minimum, tuple(spec.shape)).copy())
        high = torch.as_tensor(np.broadcast_to(spec.maximum, tuple(spec.shape)).copy())
        narrow = torch.isfinite(low) & torch.isfinite(high) & (high - low <= 1e4)
        u = torch.rand(x.shape, dtype=torch.float64, generator=generator)
        uniform = low.double() + u * (high - low).double().where(narrow, torch.zeros(()))
        x = torch.where(narrow, uniform, x.clamp(low.double(), high.double()))
    return x.to(spec.dtype)


def sample_action_mask(spec, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    """``[batch_size, ...]`` masks of ``spec``'s shape and dtype: each row (the last dim)
    uniform over the nonempty sets of legal actions (independent fair bits, the rows
    without a 1 drawn again)."""
    if len(spec.shape) == 0:
        raise ValueError(f"sample_observations: an action mask needs a shape, got {spec}")
    shape = (batch_size, *spec.shape)
    bits = torch.randint(0, 2, shape, generator=generator, dtype=torch.int64)
    empty = bits.sum(-1) == 0
    while bool(empty.any()):
        redrawn = torch.randint(0, 2, shape, generator=generator, dtype=torch.int64)
        bits = torch.where(empty.unsqueeze(-1), redrawn, bits)
        empty = bits.sum(-1) == 0
    return bits.to(spec.dtype)


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
