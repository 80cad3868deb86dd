"""Layout-invariant hashes of a training iteration's unroll.

An ``Unroll`` (``alf.learners.acting``) holds ``T`` ``Experience`` rows ``[B, ...]`` and an
optional bootstrap row. The same experiment run in one process, with remote samplers or
with ``K`` data-parallel learner ranks steps the same ``B`` environments in another
layout; when the unrolls are the same, so must their hashes be. So every environment
(column ``g`` of the batch) is hashed on its own, and the run's hash is made of those
in the global order of the environments:

- ``env_digest_pairs(unroll)``: for each column ``g``, a trajectory digest and a full
  digest. Each tensor leaf ``x`` contributes a header with ``x``'s dtype and
  per-environment shape (``[T, ...]``) and then the bytes of ``x[:, g]`` in time order,
  the bootstrap row's leaves (``[...]``) after the unroll's. The trajectory digest
  ``t_g`` is ``sha256`` over what the environments saw and did: the time steps
  (``env_id`` left out: its numbering depends on the layout, a rank's or a sampler's envs
  count from 0) and the actions. The full digest ``d_g`` continues that same ``sha256``
  with the policy's outputs (``rollout_info``, ``state``), so every leaf is read and
  hashed once. Non-tensor leaves (a replay buffer handle, a field name) are left out.
  ``env_digests(unroll, trajectory=False)`` is either list.
- ``unroll_hash(digests)``: ``sha256(d_0 || d_1 || ... || d_{B-1})`` as hex, the digests
  being in the global order of the environments (gathered from the ranks in rank order:
  rank ``r`` steps the contiguous block ``[r B/K, (r+1) B/K)``).

The trajectory digests leave out the policy's outputs because those are floats a learner
computes with its parameters: ``K`` learner ranks sum the gradients in another order than
one process, so their parameters, and the log-probabilities and values computed with
them, differ in the last bits while the trajectories stay the same.

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


def _tensor_leaves(experience) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(trajectory leaves, policy-output leaves)`` of ``experience``: its time step
    (``env_id`` left out) and action, then the rest, each in ``nest.flatten`` order."""
    experience = _without_env_id(experience)
    if hasattr(experience, "time_step"):
        parts = (
            (experience.time_step, experience.action),
            experience._replace(time_step=(), action=()),
        )
    else:
        parts = experience, ()
    return tuple([x for x in nest.flatten(p) if isinstance(x, torch.Tensor)] for p in parts)


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


def env_digest_pairs(unroll) -> tuple[list[bytes], list[bytes]]:
    """``(full, trajectory)``: the per-environment sha256 digests of ``unroll`` (module
    docstring), each list in the unroll's batch order, every leaf hashed once.

    Args:
        unroll: an ``Unroll`` (``experiences`` list of ``Experience`` ``[B, ...]`` and an
            optional ``bootstrap`` ``Experience`` ``[B, ...]``).
    Returns:
        two lists of ``B`` digests of ``DIGEST_BYTES`` bytes each (empty for an empty
        unroll).
    """
    experiences = list(unroll.experiences)
    if not experiences:
        return [], []
    parts = ([], [])  # the trajectory's leaves, the policy outputs' leaves
    rows = [_tensor_leaves(e) for e in experiences]
    for i in (0, 1):  # [T, B, ...] -> [B, T, ...]: an env's column is one contiguous block
        parts[i].extend(torch.stack(c, dim=1) for c in zip(*(r[i] for r in rows), strict=True))
    if getattr(unroll, "bootstrap", None) is not None:
        for i, leaves in enumerate(_tensor_leaves(unroll.bootstrap)):
            parts[i].extend(leaves)
    if not parts[0] and not parts[1]:
        return [], []
    num_envs = int((parts[0] or parts[1])[0].shape[0])
    hashers = [hashlib.sha256() for _ in range(num_envs)]
    _update(hashers, parts[0])
    trajectory = [h.digest() for h in hashers]
    _update(hashers, parts[1])
    return [h.digest() for h in hashers], trajectory


def _update(hashers: list, leaves: list) -> None:
    for leaf in leaves:
        if leaf.shape[0] != len(hashers):
            raise ValueError(
                f"unroll leaves of different batch sizes: {leaf.shape[0]} and {len(hashers)}"
            )
        header, data = _bytes_by_env(leaf)
        for g, hasher in enumerate(hashers):
            hasher.update(header)
            if data is not None:
                hasher.update(data[g])


def env_digests(unroll, trajectory: bool = False) -> list[bytes]:
    """The full (or, with ``trajectory``, the trajectory) digests of ``env_digest_pairs``."""
    full, trajectory_digests = env_digest_pairs(unroll)
    return trajectory_digests if trajectory else full


def unroll_hash(digests) -> str:
    """sha256 hex of the per-environment ``digests`` concatenated (global env order)."""
    hasher = hashlib.sha256()
    for digest in digests:
        hasher.update(digest)
    return hasher.hexdigest()
