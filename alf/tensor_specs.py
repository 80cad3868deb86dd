"""Specs describing tensors: ``TensorSpec`` and ``BoundedTensorSpec``.

A spec holds the shape (without batch dims) and dtype of a tensor; a bounded
spec adds elementwise ``minimum`` / ``maximum``. Specs make zero / random values
(torch or numpy) and convert from and to gymnasium spaces (Box, Discrete,
MultiDiscrete, MultiBinary, Dict, Tuple).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

import alf
import alf.nest as nest

_TORCH_TO_NUMPY = {
    torch.float16: np.float16,
    torch.float32: np.float32,
    torch.float64: np.float64,
    torch.bfloat16: np.float32,
    torch.int8: np.int8,
    torch.int16: np.int16,
    torch.int32: np.int32,
    torch.int64: np.int64,
    torch.uint8: np.uint8,
    torch.bool: np.bool_,
}
_NUMPY_TO_TORCH = {np.dtype(v): k for k, v in _TORCH_TO_NUMPY.items() if k is not torch.bfloat16}


def torch_dtype(dtype) -> torch.dtype:
    """Convert a torch dtype, numpy dtype or dtype name (``'float32'``) to a torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return _NUMPY_TO_TORCH[np.dtype(dtype)]
    except (KeyError, TypeError) as e:
        raise ValueError(f"Unsupported dtype for a TensorSpec: {dtype!r}") from e


def numpy_dtype(dtype) -> np.dtype:
    """Convert a torch dtype, numpy dtype or dtype name to a numpy dtype."""
    return np.dtype(_TORCH_TO_NUMPY[torch_dtype(dtype)])


def _outer_shape(outer_dims) -> tuple:
    if outer_dims is None:
        return ()
    if isinstance(outer_dims, int):
        return (outer_dims,)
    return tuple(outer_dims)


@alf.configurable
class TensorSpec:
    """Shape and dtype of a tensor (without batch dimensions).

    Args:
        shape: the shape, e.g. ``(3,)`` or ``()`` for a scalar.
        dtype: torch dtype, numpy dtype or its name; float32 by default.
    """

    __slots__ = ("_shape", "_dtype")

    def __init__(self, shape: Sequence[int] = (), dtype=torch.float32):
        self._shape = torch.Size(tuple(int(d) for d in shape))
        self._dtype = torch_dtype(dtype)

    @property
    def shape(self) -> torch.Size:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def numpy_dtype(self) -> np.dtype:
        return numpy_dtype(self._dtype)

    @property
    def is_discrete(self) -> bool:
        """Integer or bool dtype."""
        return not (self._dtype.is_floating_point or self._dtype.is_complex)

    @property
    def is_continuous(self) -> bool:
        return self._dtype.is_floating_point

    @classmethod
    def from_spec(cls, spec: TensorSpec) -> TensorSpec:
        return TensorSpec(spec.shape, spec.dtype)

    @classmethod
    def from_tensor(cls, tensor: torch.Tensor, from_dim: int = 0) -> TensorSpec:
        """The spec of ``tensor`` without its first ``from_dim`` (batch) dims."""
        return cls(tensor.shape[from_dim:], tensor.dtype)

    @classmethod
    def from_array(cls, array, from_dim: int = 0) -> TensorSpec:
        array = np.asarray(array)
        return cls(array.shape[from_dim:], array.dtype)

    def __eq__(self, other) -> bool:
        return (
            type(self) is type(other)
            and self._shape == other._shape
            and self._dtype == other._dtype
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(self._shape), self._dtype))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={tuple(self._shape)}, dtype={self._dtype})"

    def __reduce__(self):
        return (TensorSpec, (tuple(self._shape), str(self._dtype).split(".")[-1]))

    def _full_shape(self, outer_dims) -> tuple:
        return _outer_shape(outer_dims) + tuple(self._shape)

    def constant(self, value, outer_dims=None) -> torch.Tensor:
        """A tensor filled with ``value``, shaped ``outer_dims + shape``."""
        return torch.full(self._full_shape(outer_dims), value, dtype=self._dtype)

    def zeros(self, outer_dims=None) -> torch.Tensor:
        return torch.zeros(self._full_shape(outer_dims), dtype=self._dtype)

    def ones(self, outer_dims=None) -> torch.Tensor:
        return torch.ones(self._full_shape(outer_dims), dtype=self._dtype)

    def randn(self, outer_dims=None) -> torch.Tensor:
        """Standard normal samples (floating dtypes only)."""
        return torch.randn(self._full_shape(outer_dims), dtype=self._dtype)

    def numpy_zeros(self, outer_dims=None) -> np.ndarray:
        return np.zeros(self._full_shape(outer_dims), dtype=self.numpy_dtype)

    def numpy_constant(self, value, outer_dims=None) -> np.ndarray:
        return np.full(self._full_shape(outer_dims), value, dtype=self.numpy_dtype)

    def sample(self, outer_dims=None, generator: torch.Generator | None = None) -> torch.Tensor:
        """Random values: standard normal for floats, random bits for ints / bools."""
        shape = self._full_shape(outer_dims)
        if self._dtype.is_floating_point:
            return torch.randn(shape, dtype=self._dtype, generator=generator)
        if self._dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=generator).bool()
        return torch.randint(0, 2, shape, dtype=self._dtype, generator=generator)

    def shape_matches(self, value, outer_dims=None) -> bool:
        """Whether ``value`` (array or tensor) has shape ``outer_dims + shape``."""
        return tuple(np.shape(value)) == self._full_shape(outer_dims)


@alf.configurable
class BoundedTensorSpec(TensorSpec):
    """A ``TensorSpec`` with elementwise inclusive bounds.

    Args:
        shape: the shape.
        dtype: the dtype (float32 by default).
        minimum: scalar or array broadcastable to ``shape``; the dtype's lowest
            value when None.
        maximum: scalar or array broadcastable to ``shape``; the dtype's highest
            value when None.
    """

    __slots__ = ("_minimum", "_maximum")

    def __init__(self, shape=(), dtype=torch.float32, minimum=None, maximum=None):
        super().__init__(shape, dtype)
        np_dtype = self.numpy_dtype
        info = np.finfo(np_dtype) if np.issubdtype(np_dtype, np.floating) else None
        if np_dtype == np.bool_:
            low, high = False, True
        elif info is not None:
            low, high = info.min, info.max
        else:
            low, high = np.iinfo(np_dtype).min, np.iinfo(np_dtype).max
        minimum = low if minimum is None else minimum
        maximum = high if maximum is None else maximum
        self._minimum = self._as_bound(minimum, "minimum")
        self._maximum = self._as_bound(maximum, "maximum")
        if np.any(self._minimum > self._maximum):
            raise ValueError(f"BoundedTensorSpec: minimum {minimum} > maximum {maximum}")

    def _as_bound(self, value, name) -> np.ndarray:
        array = np.asarray(value, dtype=self.numpy_dtype)
        try:
            np.broadcast_to(array, tuple(self._shape))
        except ValueError as e:
            raise ValueError(
                f"BoundedTensorSpec: {name} of shape {array.shape} does not broadcast to "
                f"shape {tuple(self._shape)}"
            ) from e
        if array.ndim and np.all(array == array.flat[0]):
            array = np.asarray(array.flat[0], dtype=self.numpy_dtype)
        return array

    @property
    def minimum(self) -> np.ndarray:
        return self._minimum

    @property
    def maximum(self) -> np.ndarray:
        return self._maximum

    @property
    def num_values(self) -> int:
        """Number of values of a scalar discrete spec (``maximum - minimum + 1``)."""
        if not self.is_discrete or self._minimum.ndim or self._maximum.ndim:
            raise ValueError(f"num_values needs a discrete spec with scalar bounds: {self}")
        return int(self._maximum) - int(self._minimum) + 1

    @classmethod
    def from_spec(cls, spec: TensorSpec) -> BoundedTensorSpec:
        if isinstance(spec, BoundedTensorSpec):
            return BoundedTensorSpec(spec.shape, spec.dtype, spec.minimum, spec.maximum)
        return BoundedTensorSpec(spec.shape, spec.dtype)

    def __eq__(self, other) -> bool:
        return (
            super().__eq__(other)
            and np.array_equal(self._minimum, other._minimum)
            and np.array_equal(self._maximum, other._maximum)
        )

    def __hash__(self) -> int:
        return super().__hash__()

    def __repr__(self) -> str:
        return (
            f"BoundedTensorSpec(shape={tuple(self._shape)}, dtype={self._dtype}, "
            f"minimum={self._minimum.tolist()}, maximum={self._maximum.tolist()})"
        )

    def __reduce__(self):
        return (
            BoundedTensorSpec,
            (tuple(self._shape), str(self._dtype).split(".")[-1], self._minimum, self._maximum),
        )

    def sample(self, outer_dims=None, generator: torch.Generator | None = None) -> torch.Tensor:
        """Uniform samples within the bounds (inclusive for integers)."""
        shape = self._full_shape(outer_dims)
        low = torch.as_tensor(np.broadcast_to(self._minimum, tuple(self._shape)).copy())
        high = torch.as_tensor(np.broadcast_to(self._maximum, tuple(self._shape)).copy())
        if self._dtype.is_floating_point:
            low, high = low.double(), high.double()
            finite_max = torch.finfo(self._dtype).max / 2
            low, high = low.clamp(-finite_max, finite_max), high.clamp(-finite_max, finite_max)
            u = torch.rand(shape, dtype=torch.float64, generator=generator)
            return (low + u * (high - low)).to(self._dtype)
        if self._dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=generator).bool()
        low, high = low.long(), high.long()
        u = torch.rand(shape, dtype=torch.float64, generator=generator)
        values = low + (u * (high - low + 1).double()).floor().long()
        return torch.minimum(values, high).to(self._dtype)

    def contains(self, value) -> bool:
        """Whether ``value`` has this spec's (unbatched) shape and lies within the bounds."""
        array = np.asarray(value)
        if tuple(array.shape) != tuple(self._shape):
            return False
        return bool(np.all(array >= self._minimum) and np.all(array <= self._maximum))


# ----------------------------------------------------------------------------
# gymnasium spaces


def tensor_spec_from_gym_space(space, float_dtype=np.float32):
    """Convert a gymnasium space into a nest of ``BoundedTensorSpec``.

    Box → bounded float spec (``float_dtype`` for float boxes, ``None`` keeps the
    box dtype); Discrete(n, start) → int64 scalar in ``[start, start+n-1]``;
    MultiDiscrete → int64 with per-element bounds; MultiBinary → int8 in [0, 1];
    Dict → dict; Tuple → tuple.
    """
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        dtype = space.dtype
        if np.issubdtype(dtype, np.floating) and float_dtype is not None:
            dtype = float_dtype
        return BoundedTensorSpec(space.shape, dtype, space.low, space.high)
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return BoundedTensorSpec((), np.int64, start, start + int(space.n) - 1)
    if isinstance(space, spaces.MultiDiscrete):
        start = np.asarray(space.start, dtype=np.int64)
        return BoundedTensorSpec(space.shape, np.int64, start, start + space.nvec - 1)
    if isinstance(space, spaces.MultiBinary):
        return BoundedTensorSpec(space.shape, np.int8, 0, 1)
    if isinstance(space, spaces.Dict):
        return {k: tensor_spec_from_gym_space(s, float_dtype) for k, s in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(tensor_spec_from_gym_space(s, float_dtype) for s in space.spaces)
    raise ValueError(f"Unsupported gymnasium space {space!r}")


def _spec_to_space(spec):
    from gymnasium import spaces

    if not isinstance(spec, BoundedTensorSpec):
        spec = BoundedTensorSpec.from_spec(spec)
    np_dtype = spec.numpy_dtype
    low = np.broadcast_to(spec.minimum, tuple(spec.shape))
    high = np.broadcast_to(spec.maximum, tuple(spec.shape))
    if spec.is_discrete and spec.ndim == 0:
        return spaces.Discrete(int(high - low + 1), start=int(low))
    if spec.is_discrete and np.all(low == 0) and np.all(high == 1) and np_dtype == np.int8:
        n = int(spec.shape[0]) if spec.ndim == 1 else list(spec.shape)
        return spaces.MultiBinary(n)
    if spec.is_discrete:
        return spaces.MultiDiscrete(
            (high - low + 1).astype(np.int64), dtype=np_dtype, start=low.astype(np.int64)
        )
    return spaces.Box(low=low.copy(), high=high.copy(), shape=tuple(spec.shape), dtype=np_dtype)


def tensor_spec_to_gym_space(spec_nest):
    """Convert a nest of specs into a gymnasium space (dict → Dict, tuple → Tuple)."""
    from gymnasium import spaces

    if isinstance(spec_nest, dict):
        return spaces.Dict({k: tensor_spec_to_gym_space(v) for k, v in spec_nest.items()})
    if isinstance(spec_nest, (list, tuple)):
        return spaces.Tuple([tensor_spec_to_gym_space(v) for v in spec_nest])
    return _spec_to_space(spec_nest)


def zeros_from_spec(spec_nest, batch_size=None):
    """A nest of torch zeros for ``spec_nest`` (``[batch_size, ...]`` when given)."""
    return nest.map_structure(lambda s: s.zeros(batch_size), spec_nest)


def numpy_zeros_from_spec(spec_nest, batch_size=None):
    """A nest of numpy zeros for ``spec_nest``."""
    return nest.map_structure(lambda s: s.numpy_zeros(batch_size), spec_nest)
