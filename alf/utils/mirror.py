r"""Mirror (left/right symmetry) maps of flat observations and actions.

The mirror loss of Abdolhosseini, Ling, Xie, van de Panne and Yin, "On Learning
Symmetric Locomotion" (MIG 2019) asks the policy to commute with a reflection of
the body: :math:`\pi(\Psi_o(s)) = \Psi_a(\pi(s))`. Here a reflection of a flat
vector is a *signed permutation*:

.. math::

    \Psi(x)_i = \sigma_i \, x_{p_i}

given as two sequences of the same length ``D``: ``indices`` :math:`p` (a
permutation of ``0..D-1``: entry ``i`` of the mirrored vector is read from entry
``p_i``) and ``signs`` :math:`\sigma` (each ``+1`` or ``-1``; all ``+1`` when
omitted). A (permutation, signs) pair is used rather than signed indices because
``-0`` cannot say "flip entry 0".

A reflection is its own inverse, so every map is validated to be an involution
(:math:`\Psi(\Psi(x)) = x`, i.e. :math:`p_{p_i} = i` and
:math:`\sigma_i\sigma_{p_i} = 1`) when it is built.

Only flat vectors are supported: an observation or action spec of rank 1 (a single
tensor, not a nest). ``Mirror.check_specs`` raises a clear error otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

import alf


def _as_index_array(indices, what: str) -> np.ndarray:
    array = np.asarray(indices)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{what} must be a non-empty 1-D sequence, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{what} must hold integers, got dtype {array.dtype}: {indices}")
    return array.astype(np.int64)


def _as_sign_array(signs, size: int, what: str) -> np.ndarray:
    if signs is None:
        return np.ones(size, dtype=np.float32)
    array = np.asarray(signs, dtype=np.float64)
    if array.shape != (size,):
        raise ValueError(f"{what} must have length {size} (one per index), got {array.shape}")
    if not np.all(np.abs(array) == 1.0):
        raise ValueError(f"{what} must hold only +1 or -1, got {list(signs)}")
    return array.astype(np.float32)


@alf.repr_wrapper
class SignedPermutation:
    """``y[..., i] = signs[i] * x[..., indices[i]]``, validated to be an involution.

    Args:
        indices: a permutation of ``0..D-1``.
        signs: ``D`` values in ``{+1, -1}``; None for all ``+1``.
        name: what is mirrored, for error messages (e.g. ``'Walker2d observation'``).

    Raises:
        ValueError: naming ``name`` if ``indices`` is not a permutation, ``signs`` has the
            wrong length or values, or the map is not an involution.
    """

    def __init__(
        self, indices: Sequence[int], signs: Sequence[float] | None = None, name: str = "mirror"
    ):
        self._name = name
        self._indices = _as_index_array(indices, f"{name} indices")
        size = self._indices.size
        if not np.array_equal(np.sort(self._indices), np.arange(size)):
            raise ValueError(
                f"{name} indices must be a permutation of 0..{size - 1}, got {list(indices)}"
            )
        self._signs = _as_sign_array(signs, size, f"{name} signs")
        self._check_involution()
        self._torch_indices = torch.as_tensor(self._indices)
        self._torch_signs = torch.as_tensor(self._signs)

    def _check_involution(self) -> None:
        p, s = self._indices, self._signs
        bad = np.nonzero((p[p] != np.arange(p.size)) | (s * s[p] != 1.0))[0]
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{self._name} is not an involution (mirroring twice must give the input back): "
                f"entry {i} reads entry {p[i]} (sign {s[i]:+g}), which reads entry {p[p[i]]} "
                f"(sign {s[p[i]]:+g})"
            )

    @property
    def name(self) -> str:
        return self._name

    @property
    def size(self) -> int:
        """``D``, the length of the mirrored vectors."""
        return int(self._indices.size)

    @property
    def indices(self) -> np.ndarray:
        return self._indices.copy()

    @property
    def signs(self) -> np.ndarray:
        return self._signs.copy()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Mirror ``x`` ``[..., D]`` (a torch tensor; differentiable)."""
        if x.shape[-1] != self.size:
            raise ValueError(f"{self._name} maps vectors of size {self.size}, got {tuple(x.shape)}")
        indices = self._torch_indices.to(x.device)
        signs = self._torch_signs.to(device=x.device, dtype=x.dtype)
        return x.index_select(-1, indices) * signs

    def numpy(self, x: np.ndarray) -> np.ndarray:
        """Mirror a numpy array ``[..., D]``."""
        x = np.asarray(x)
        if x.shape[-1] != self.size:
            raise ValueError(f"{self._name} maps vectors of size {self.size}, got {x.shape}")
        return (x[..., self._indices] * self._signs).astype(x.dtype, copy=False)


def _check_flat_spec(spec, permutation: SignedPermutation, what: str, owner: str) -> None:
    shape = getattr(spec, "shape", None)
    if shape is None:
        raise ValueError(
            f"{owner}: the mirror loss supports a single flat {what} vector, got a nest "
            f"{spec}; flatten it (e.g. with a gymnasium FlattenObservation wrapper) first"
        )
    if len(shape) != 1:
        raise ValueError(f"{owner}: the mirror loss needs a rank-1 {what}, got shape {shape}")
    if shape[0] != permutation.size:
        raise ValueError(
            f"{owner}: {permutation.name} has {permutation.size} entries but the {what} has "
            f"{shape[0]}"
        )


@alf.repr_wrapper
class Mirror:
    """The mirror of a task: one signed permutation for observations, one for actions.

    Args:
        observation_indices: permutation of the observation entries (see the module doc).
        action_indices: permutation of the action entries.
        observation_signs: ``+1``/``-1`` per observation entry (None: all ``+1``).
        action_signs: ``+1``/``-1`` per action entry (None: all ``+1``).
        name: the task, for error messages (e.g. ``'Walker2d-v5'``).
    """

    def __init__(
        self,
        observation_indices: Sequence[int],
        action_indices: Sequence[int],
        observation_signs: Sequence[float] | None = None,
        action_signs: Sequence[float] | None = None,
        name: str = "env",
    ):
        self.name = name
        self.observation = SignedPermutation(
            observation_indices, observation_signs, f"{name} mirror_observation"
        )
        self.action = SignedPermutation(action_indices, action_signs, f"{name} mirror_action")

    def check_specs(self, observation_spec, action_spec, owner: str = "mirror") -> None:
        """Raise a ``ValueError`` naming ``owner`` unless both specs are flat vectors of the
        mirrored sizes (``TensorSpec`` or anything with a ``shape``, e.g. a gymnasium ``Box``).
        """
        _check_flat_spec(observation_spec, self.observation, "observation", owner)
        _check_flat_spec(action_spec, self.action, "action", owner)
