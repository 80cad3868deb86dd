"""Layout-invariant hashes of a training iteration's unroll.

An ``Unroll`` (``alf.learners.acting``) holds ``T`` ``Experience`` rows ``[B, ...]`` and an
optional bootstrap row. The same experiment run in one process, with remote samplers or
with ``K`` data-parallel learner ranks steps the same ``B`` environments in another
layout; when the unrolls are the same, so must their hashes be. So every environment
(column ``g`` of the batch) is hashed on its own, and the run's hash is made of those
in the global order of the environments:

- ``env_digests(unroll)``: for each column ``g``, ``d_g = sha256`` over, for every tensor
  leaf ``x`` of the experience nest in ``alf.nest.flatten`` order, a header with ``x``'s
  dtype and per-environment shape (``[T, ...]``) and then the bytes of ``x[:, g]`` in
  time order; then the same for the bootstrap row's leaves (``[...]``), when there is
  one. ``time_step.env_id`` is left out: its numbering depends on the layout (a rank's
  or a sampler's envs count from 0). Non-tensor leaves (a replay buffer handle, a field
  name) are left out too.
- ``unroll_hash(digests)``: ``sha256(d_0 || d_1 || ... || d_{B-1})`` as hex, the digests
  being in the global order of the environments (gathered from the ranks in rank order:
  rank ``r`` steps the contiguous block ``[r B/K, (r+1) B/K)``).

``env_digests(unroll, trajectory=True)`` hashes only what the environments saw and did:
the time steps (``env_id`` left out) and the actions, not the policy's outputs
(``rollout_info``, ``state``). Those are floats a learner computes with its parameters:
``K`` learner ranks sum the gradients in another order than one process, so their
parameters, and the log-probabilities and values computed with them, differ in the last
bits while the trajectories stay the same.

Raw (replay) and transformed (on-policy) unrolls are both hashed as they are held.
Tensors are brought to the CPU once per leaf (the ``T`` rows stacked on their device
first) and hashed from their numpy buffers: an Atari-sized ``[8, 16, 4, 84, 84]``
``uint8`` unroll costs a few milliseconds.
"""

from __future__ import annotations

import hashlib

import torch

import alf.nest as nest

#: bytes of one environment's digest (sha256)
DIGEST_BYTES = 32


def _without_env_id(experience):
    """``experience`` with ``time_step.env_id`` replaced by ``()`` (no leaf)."""
    time_step = getattr(experience, "time_step", None)
    if time_step is None or not hasattr(time_step, "env_id"):
        return experience
    return experience._replace(time_step=time_step._replace(env_id=()))


def _tensor_leaves(experience, trajectory: bool = False) -> list[torch.Tensor]:
    experience = _without_env_id(experience)
    if trajectory and hasattr(experience, "time_step"):
        experience = (experience.time_step, experience.action)
    return [x for x in nest.flatten(experience) if isinstance(x, torch.Tensor)]


def _bytes_by_env(x: torch.Tensor):
    """``x`` ``[B, ...]`` as a CPU numpy ``uint8`` array ``[B, n]`` (row ``g``: the bytes of
    ``x[g]``), and the header naming ``x[g]``'s dtype and shape."""
    header = f"{x.dtype}{tuple(x.shape[1:])};".encode()
    x = x.detach().to("cpu").contiguous()
    num_envs = x.shape[0]
    if x.numel() == 0:
        return header, None
    flat = x.reshape(-1)
    if flat.stride(0) != 1:  # one element of any stride (a size-1 dim keeps its stride)
        flat = torch.empty(flat.shape, dtype=flat.dtype).copy_(flat)
    as_bytes = flat.view(torch.uint8).reshape(num_envs, -1)  # any dtype (bfloat16 too)
    return header, as_bytes.numpy()


def env_digests(unroll, trajectory: bool = False) -> list[bytes]:
    """The per-environment sha256 digests of ``unroll`` (module docstring), in the
    unroll's batch order.

    Args:
        unroll: an ``Unroll`` (``experiences`` list of ``Experience`` ``[B, ...]`` and an
            optional ``bootstrap`` ``Experience`` ``[B, ...]``).
        trajectory: hash only the time steps and actions (not the policy's outputs).
    Returns:
        ``B`` digests of ``DIGEST_BYTES`` bytes each (``[]`` for an empty unroll).
    """
    experiences = list(unroll.experiences)
    if not experiences:
        return []
    rows = [_tensor_leaves(e, trajectory) for e in experiences]
    # [T, B, ...] -> [B, T, ...]: one environment's column is one contiguous block
    leaves = [torch.stack(column, dim=1) for column in zip(*rows, strict=True)]
    if getattr(unroll, "bootstrap", None) is not None:
        leaves += _tensor_leaves(unroll.bootstrap, trajectory)
    if not leaves:
        return []
    num_envs = int(leaves[0].shape[0])
    hashers = [hashlib.sha256() for _ in range(num_envs)]
    for leaf in leaves:
        if leaf.shape[0] != num_envs:
            raise ValueError(
                f"unroll leaves of different batch sizes: {leaf.shape[0]} and {num_envs}"
            )
        header, data = _bytes_by_env(leaf)
        for g, hasher in enumerate(hashers):
            hasher.update(header)
            if data is not None:
                hasher.update(data[g])
    return [h.digest() for h in hashers]


def unroll_hash(digests) -> str:
    """sha256 hex of the per-environment ``digests`` concatenated (global env order)."""
    hasher = hashlib.sha256()
    for digest in digests:
        hasher.update(digest)
    return hasher.hexdigest()
