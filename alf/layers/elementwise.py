"""Layers without parameters: shape changes, casts, field selection, sums and gradient tricks.

Every layer takes and returns tensors with a leading batch dimension ``B``; a dimension
argument (``Transpose``, ``Permute``, ``Sum``, ``Reshape``) does not count it: ``dim=0``
is the first dimension after the batch. ``make_parallel(n)`` gives the layer that does the
same to a parallel batch ``[B, n, ...]`` (the replica dimension not counted either), as
``alf.layers.make_parallel_net`` and the containers use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

import alf
import alf.nest as nest


class ElementwiseLayerBase(nn.Module):
    """A layer that acts on each element (or each sample) alike: its parallel form is
    itself."""

    def make_parallel(self, n: int) -> nn.Module:
        """This layer: it already treats a ``[B, n, ...]`` batch as ``n`` replicas would."""
        return self


class Identity(ElementwiseLayerBase):
    """``x`` unchanged."""

    def forward(self, x):
        return x


class Cast(ElementwiseLayerBase):
    """``x`` as ``dtype``."""

    def __init__(self, dtype: torch.dtype = torch.float32):
        super().__init__()
        self._dtype = dtype

    def forward(self, x):
        return x.to(self._dtype)


def _after_batch(dim: int, outer: int = 1) -> int:
    """A dimension index that does not count ``outer`` leading dimensions, as torch's."""
    return dim + outer if dim >= 0 else dim


class Transpose(nn.Module):
    """Swap dimensions ``dim0`` and ``dim1`` (not counting the batch dimension)."""

    def __init__(self, dim0: int = 0, dim1: int = 1):
        super().__init__()
        self._dims = (dim0, dim1)
        self._torch_dims = (_after_batch(dim0), _after_batch(dim1))

    def forward(self, x):
        return x.transpose(*self._torch_dims)

    def make_parallel(self, n: int) -> Transpose:
        """The same swap on ``[B, n, ...]``."""
        return Transpose(*(_after_batch(d) for d in self._dims))


class Permute(nn.Module):
    """Reorder the dimensions after the batch: ``Permute(2, 0, 1)`` takes ``[B, H, W, C]``
    to ``[B, C, H, W]``."""

    def __init__(self, *dims: int):
        super().__init__()
        if sorted(dims) != list(range(len(dims))):
            raise ValueError(f"Permute{dims}: the dims must be a permutation of 0..{len(dims) - 1}")
        self._dims = dims

    def forward(self, x):
        return x.permute(0, *(d + 1 for d in self._dims))

    def make_parallel(self, n: int) -> Permute:
        """The same reordering on ``[B, n, ...]``."""
        return Permute(0, *(d + 1 for d in self._dims))


class Reshape(nn.Module):
    """``x`` reshaped to ``[B, *shape]``; ``Reshape(4, 4)``, ``Reshape((4, 4))`` and
    ``Reshape(shape=(4, 4))`` are the same, and ``-1`` takes what is left, as in torch
    (``Reshape(shape=())`` turns ``[B, 1]`` into ``[B]``)."""

    def __init__(self, *shape, **kwargs):
        super().__init__()
        if set(kwargs) - {"shape"} or (shape and kwargs):
            raise ValueError(f"Reshape: give the shape once, positionally or as shape=: {kwargs}")
        if kwargs:
            shape = (kwargs["shape"],)
        if len(shape) == 1 and isinstance(shape[0], Iterable):
            shape = tuple(shape[0])
        self._shape = tuple(int(s) for s in shape)

    def forward(self, x):
        return x.reshape(x.shape[0], *self._shape)

    def make_parallel(self, n: int) -> Reshape:
        """Each replica's rows reshaped: ``[B, n, *shape]``."""
        return Reshape(n, *self._shape)


@alf.configurable
class OneHot(nn.Module):
    """Integer classes ``[B, ...]`` to float32 one-hot vectors ``[B, ..., num_classes]``."""

    def __init__(self, num_classes: int):
        super().__init__()
        self._num_classes = num_classes

    def forward(self, x):
        return F.one_hot(x.long(), num_classes=self._num_classes).to(torch.float32)

    def make_parallel(self, n: int) -> OneHot:
        return OneHot(self._num_classes)


class Lambda(nn.Module):
    """A parameterless function as a layer: ``Lambda(lambda x: x[:, :3])``."""

    def __init__(self, func: Callable):
        super().__init__()
        self._func = func

    def forward(self, x):
        return self._func(x)


class GetFields(ElementwiseLayerBase):
    """Fields of a nested input, by ``'.'``-separated paths: ``GetFields(('a', 'b.c'))``
    gives ``(x['a'], x['b']['c'])`` (names of namedtuple fields work alike);
    ``GetFields(a='x', b='y')`` is ``GetFields(dict(a='x', b='y'))``."""

    def __init__(self, field_nest=None, **fields):
        super().__init__()
        if field_nest is not None and fields:
            raise ValueError("GetFields: give a field nest or keyword fields, not both")
        self._fields = field_nest if field_nest is not None else fields

    def forward(self, x):
        return nest.map_structure(lambda path: nest.get_field(x, path), self._fields)


class Sum(nn.Module):
    """The sum over ``dim`` (an int or a tuple, not counting the batch dimension)."""

    def __init__(self, dim):
        super().__init__()
        self._dim = dim
        self._torch_dim = nest.map_structure(_after_batch, dim)

    def forward(self, x):
        return x.sum(dim=self._torch_dim)

    def make_parallel(self, n: int) -> Sum:
        """The same sum on ``[B, n, ...]``."""
        return Sum(nest.map_structure(_after_batch, self._dim))


class AddN(ElementwiseLayerBase):
    """The sum of a sequence of tensors of one shape."""

    def forward(self, xs: Iterable[torch.Tensor]):
        return sum(xs)


class Detach(ElementwiseLayerBase):
    """The nested input cut from the graph: no gradient flows back through it."""

    def forward(self, x):
        return nest.map_structure(lambda t: t.detach(), x)


class Scale(ElementwiseLayerBase):
    """``scale * x``."""

    def __init__(self, scale: float):
        super().__init__()
        self._scale = scale

    def forward(self, x):
        return self._scale * x


class ScaleGradient(ElementwiseLayerBase):
    """``x`` unchanged on the way forward; its gradient multiplied by ``scale`` on the way
    back (``x.detach() + scale * (x - x.detach())``)."""

    def __init__(self, scale: float):
        super().__init__()
        self._scale = scale

    def forward(self, x):
        return torch.lerp(x.detach(), x, self._scale)
