"""The checkpoint state of a ``ReplayBuffer``: what ``state_dict`` writes and
``load_state_dict`` reads.

Keys: ``data.<i>`` (the storage of leaf ``i`` of the flattened experience nest,
``[num_envs, max_length, ...]``), ``current_pos``, ``clear_pos``, ``spec_info``
(``[[shape, dtype name], ...]`` of one step's leaves), and with prioritized sampling
``priority`` (``p^alpha`` per slot, ``[num_envs, max_length]`` float64) and
``max_priority``. The ``data.<i>`` tensors are the live storage (no copy).
"""

from __future__ import annotations

import torch

from alf.experience_replayers.prioritized import PrioritizedSampler
from alf.experience_replayers.ring import RingPositions


def spec_info(storage: list[torch.Tensor]) -> list:
    """``[[shape, dtype name], ...]`` of each leaf of one step (``storage``'s order)."""
    return [[list(x.shape[2:]), str(x.dtype).removeprefix("torch.")] for x in storage]


def buffer_state(
    storage: list[torch.Tensor], ring: RingPositions, priorities: PrioritizedSampler | None
) -> dict:
    """The state of a buffer with the flat leaf ``storage``, positions ``ring`` and
    ``priorities`` (None: not prioritized)."""
    state = {f"data.{i}": x for i, x in enumerate(storage)}
    state["current_pos"] = ring.current_pos.clone()
    state["clear_pos"] = ring.clear_pos.clone()
    state["spec_info"] = spec_info(storage)
    if priorities is not None:
        state.update(priorities.state_dict())
    return state


def state_nbytes(state: dict) -> int:
    """Bytes of the tensors of ``state``."""
    return sum(v.numel() * v.element_size() for v in state.values() if torch.is_tensor(v))


def _check_state(state: dict, storage: list[torch.Tensor], ring: RingPositions) -> None:
    missing = [f"data.{i}" for i in range(len(storage)) if f"data.{i}" not in state]
    if missing or "current_pos" not in state:
        raise ValueError(f"{ring.name}: state lacks {missing or ['current_pos']}")
    info = spec_info(storage)
    expected = [[ring.num_envs, ring.max_length, *s] for s, _ in info]
    found = [list(state[f"data.{i}"].shape) for i in range(len(storage))]
    if found != expected or state.get("spec_info", info) != info:
        raise ValueError(
            f"{ring.name}: checkpointed buffer {found} / {state.get('spec_info')} does not "
            f"match this buffer {expected} / {info}"
        )


def load_buffer_state(
    state: dict,
    storage: list[torch.Tensor],
    ring: RingPositions,
    priorities: PrioritizedSampler | None,
) -> None:
    """Load what ``buffer_state`` wrote into ``storage``, ``ring`` and ``priorities``
    (checked first: a mismatched state changes nothing)."""
    _check_state(state, storage, ring)
    for i, leaf in enumerate(storage):
        leaf.copy_(state[f"data.{i}"])
    ring.current_pos.copy_(state["current_pos"])
    ring.clear_pos.copy_(state.get("clear_pos", torch.zeros_like(ring.clear_pos)))
    if priorities is not None:
        priorities.load_state_dict(state)
