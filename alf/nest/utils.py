"""ALF's nest utilities: combiners that turn a nest of ``[B, ...]`` tensors into one tensor
(``NestConcat``, ``NestSum``, ``NestMultiply``, ``NestOuterProduct``), as a network's
``preprocessing_combiner`` or a container's layer, and ``get_nested_field`` /
``make_nested_module``.

A combiner called on a nest of ``TensorSpec`` gives the spec of its result; ``dim`` arguments
do not count the batch dimension (``dim=0`` is the first dimension after it), as in ALF.
``make_parallel(n)`` gives the combiner that does the same to ``[B, n, ...]`` replicas.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import nn

import alf
import alf.nest as nest
from alf.tensor_specs import TensorSpec


def get_nested_field(nested, nest_fields):
    """The values of ``nested`` at the ``'.'``-separated paths of the nest of strings
    ``nest_fields``, in that nest's structure."""
    return nest.map_structure(lambda path: nest.get_field(nested, path), nest_fields)


def make_nested_module(nested) -> nn.Module | None:
    """A nest of modules as one module (``ModuleList`` for sequences, ``ModuleDict`` for
    dicts and namedtuples), so that their parameters are registered; leaves that are not
    modules become None."""
    if isinstance(nested, (tuple, list)) and not nest.is_namedtuple(nested):
        return nn.ModuleList([make_nested_module(m) for m in nested])
    if nest.is_namedtuple(nested) or isinstance(nested, dict):
        items = nested._asdict().items() if nest.is_namedtuple(nested) else nested.items()
        return nn.ModuleDict({str(k): make_nested_module(v) for k, v in items})
    return nested if isinstance(nested, nn.Module) else None


def _identity(x):
    return x


class NestCombiner(nn.Module):
    """Combines the leaves of a nest (``alf.nest.flatten`` order: dict keys sorted) into one
    tensor; called on a nest of ``TensorSpec``, gives the result's spec.

    Args:
        name: the combiner's name (in error messages).
        batch_dims: leading dimensions that are batch dimensions (1; a parallel combiner has 2).
    """

    def __init__(self, name: str, batch_dims: int = 1):
        super().__init__()
        self._name = name
        self._batch_dims = batch_dims

    def _combine_flat(self, tensors: list[torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, nested):
        flat = nest.flatten(nested)
        if not flat:
            raise ValueError(f"{self._name}: the nest to combine is empty")
        if isinstance(flat[0], TensorSpec):
            return self.output_spec(nested)
        return self._combine_flat(flat)

    def output_spec(self, input_spec) -> TensorSpec:
        """The spec of the combined tensor, from a dry run on zeros; a ``ValueError`` naming
        the shapes when they do not combine."""
        flat = nest.flatten(input_spec)
        zeros = [s.zeros(outer_dims=(1,) * self._batch_dims) for s in flat]
        try:
            out = self._combine_flat(zeros)
        except (RuntimeError, ValueError) as e:
            shapes = ", ".join(
                f"{path or '<root>'}: {tuple(s.shape)}"
                for path, s in nest.flatten_with_path(input_spec)
            )
            raise ValueError(f"{self._name} cannot combine inputs of shapes [{shapes}]: {e}") from e
        return TensorSpec.from_tensor(out, from_dim=self._batch_dims)


@alf.configurable
@alf.repr_wrapper
class NestConcat(NestCombiner):
    """The selected leaves concatenated along ``dim`` (not counting the batch dimension;
    -1: the last). Integer leaves are cast to float32.

    Args:
        nest_mask: a nest of bools of the input's structure; only leaves marked True are
            concatenated (None: all).
        dim: the dimension to concatenate along.
        name: the combiner's name.
    """

    def __init__(self, nest_mask=None, dim: int = -1, name: str = "NestConcat"):
        super().__init__(name)
        self._nest_mask = nest_mask
        self._flat_mask = None if nest_mask is None else nest.flatten(nest_mask)
        self._dim = dim
        self._torch_dim = dim if dim < 0 else dim + 1

    def _combine_flat(self, tensors):
        if self._flat_mask is not None:
            if len(self._flat_mask) != len(tensors):
                raise ValueError(
                    f"{self._name}: nest_mask has {len(self._flat_mask)} leaves, the input "
                    f"{len(tensors)}"
                )
            tensors = [t for t, keep in zip(tensors, self._flat_mask) if keep]
        if not tensors:
            raise ValueError(f"{self._name}: nothing to concatenate")
        tensors = [t if t.is_floating_point() else t.float() for t in tensors]
        return torch.cat(tensors, dim=self._torch_dim)

    def output_spec(self, input_spec) -> TensorSpec:
        if self._nest_mask is not None:
            nest.assert_same_structure(input_spec, self._nest_mask)
        return super().output_spec(input_spec)

    def make_parallel(self, n: int) -> NestConcat:
        dim = self._dim if self._dim < 0 else self._dim + 1
        return NestConcat(self._nest_mask, dim, f"parallel_{self._name}")


@alf.configurable
@alf.repr_wrapper
class NestSum(NestCombiner):
    """``activation`` of the sum (or, with ``average``, the mean) of leaves of one shape."""

    def __init__(
        self, average: bool = False, activation: Callable | None = None, name: str = "NestSum"
    ):
        super().__init__(name)
        self._average = average
        self._activation = activation or _identity

    def _combine_flat(self, tensors):
        total = functools.reduce(torch.add, tensors)
        if self._average:
            total = total * (1.0 / len(tensors))
        return self._activation(total)

    def make_parallel(self, n: int) -> NestSum:
        return NestSum(self._average, self._activation, f"parallel_{self._name}")


@alf.configurable
@alf.repr_wrapper
class NestMultiply(NestCombiner):
    """``activation`` of the element-wise product of leaves of one shape."""

    def __init__(self, activation: Callable | None = None, name: str = "NestMultiply"):
        super().__init__(name)
        self._activation = activation or _identity

    def _combine_flat(self, tensors):
        return self._activation(functools.reduce(torch.mul, tensors))

    def make_parallel(self, n: int) -> NestMultiply:
        return NestMultiply(self._activation, f"parallel_{self._name}")


@alf.configurable
@alf.repr_wrapper
class NestOuterProduct(NestCombiner):
    """``activation`` of the outer product of the leaves, each flattened after the batch
    dimensions (with ``padding``, each gets a trailing 1 first, so the result also holds
    every leaf itself and the products of every subset: Florensa et al. 2017's combination).

    Args:
        activation: applied to the flattened product.
        batch_dims: leading batch dimensions, kept.
        padding: append a 1 to every flattened leaf.
        name: the combiner's name.
    """

    def __init__(
        self,
        activation: Callable | None = None,
        batch_dims: int = 1,
        padding: bool = False,
        name: str = "NestOuterProduct",
    ):
        super().__init__(name, batch_dims=batch_dims)
        self._activation = activation or _identity
        self._padding = padding

    def _combine_flat(self, tensors):
        batch_shape = tensors[0].shape[: self._batch_dims]
        if any(t.shape[: self._batch_dims] != batch_shape for t in tensors):
            shapes = [tuple(t.shape) for t in tensors]
            raise ValueError(f"{self._name}: the leaves' batch shapes differ: {shapes}")
        rows = math.prod(batch_shape)
        flat = [t.reshape(rows, -1) for t in tensors]
        if self._padding:
            flat = [torch.cat([t, t.new_ones(rows, 1)], dim=1) for t in flat]
        out = functools.reduce(
            lambda x, y: torch.einsum("bn,bm->bnm", x, y).reshape(rows, -1), flat
        )
        return self._activation(out.reshape(*batch_shape, -1))

    def make_parallel(self, n: int) -> NestOuterProduct:
        return NestOuterProduct(
            self._activation, self._batch_dims + 1, self._padding, f"parallel_{self._name}"
        )
