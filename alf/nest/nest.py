"""Nest operations over NamedTuples, dicts, lists and tuples, built on optree.

A *nest* is a leaf (array, tensor, number, spec, ...) or a NamedTuple / dict /
list / tuple of nests. ``None`` and ``()`` are empty nests (they have no leaves).
Dict leaves are visited in sorted key order (an ``OrderedDict``, such as a torch
``state_dict``, in insertion order), the same order for every function here, so
``flatten``, ``flatten_with_path`` and ``pack_sequence_as`` always agree.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optree
import torch

_NAMESPACE = "alf"


def _is_leaf(x) -> bool:
    """Treat everything but list/tuple/dict/NamedTuple (and None) as a leaf."""
    return not isinstance(x, (list, tuple, dict)) and x is not None


def is_namedtuple(value) -> bool:
    """Whether ``value`` is a NamedTuple instance."""
    return isinstance(value, tuple) and hasattr(value, "_fields")


def is_unnamedtuple(value) -> bool:
    """Whether ``value`` is a plain tuple (not a NamedTuple)."""
    return isinstance(value, tuple) and not hasattr(value, "_fields")


def is_nested(value) -> bool:
    """Whether ``value`` is a container (list, tuple, dict, NamedTuple)."""
    return isinstance(value, (list, tuple, dict))


def _spec(nest):
    return optree.tree_structure(nest, is_leaf=_is_leaf, none_is_leaf=False, namespace=_NAMESPACE)


def flatten(nest) -> list:
    """The leaves of ``nest`` in a deterministic order (dict keys sorted)."""
    return optree.tree_leaves(nest, is_leaf=_is_leaf, none_is_leaf=False, namespace=_NAMESPACE)


def flatten_with_spec(nest) -> tuple[list, optree.PyTreeSpec]:
    """``(leaves, treespec)`` of ``nest``; ``unflatten(treespec, leaves)`` rebuilds it.

    For loops that rebuild the same structure many times: the spec is computed once.
    """
    return optree.tree_flatten(nest, is_leaf=_is_leaf, none_is_leaf=False, namespace=_NAMESPACE)


def unflatten(treespec: optree.PyTreeSpec, leaves: Sequence):
    """The nest of structure ``treespec`` (from ``flatten_with_spec``) with ``leaves``."""
    return optree.tree_unflatten(treespec, list(leaves))


def pack_sequence_as(nest, flat_sequence: Sequence):
    """Rebuild the structure of ``nest`` with the leaves of ``flat_sequence``."""
    treespec = _spec(nest)
    flat_sequence = list(flat_sequence)
    if treespec.num_leaves != len(flat_sequence):
        raise ValueError(
            f"Cannot pack {len(flat_sequence)} values into a nest with "
            f"{treespec.num_leaves} leaves: {treespec}"
        )
    return optree.tree_unflatten(treespec, flat_sequence)


def assert_same_structure(nest1, nest2) -> None:
    """Raise ``ValueError`` if the two nests do not have the same structure."""
    s1, s2 = _spec(nest1), _spec(nest2)
    if s1 != s2:
        raise ValueError(f"The two nests do not have the same structure:\n  {s1}\n  {s2}")


def map_structure(func: Callable, *nests):
    """Apply ``func`` to corresponding leaves of ``nests``; same structure as ``nests[0]``."""
    if len(nests) > 1:
        for other in nests[1:]:
            assert_same_structure(nests[0], other)
    return optree.tree_map(func, *nests, is_leaf=_is_leaf, none_is_leaf=False, namespace=_NAMESPACE)


def flatten_up_to(shallow, deep) -> list:
    """The sub-nests of ``deep`` at the leaves of ``shallow`` (``deep`` has ``shallow``'s
    structure down to there), in ``flatten`` order."""
    try:
        return _spec(shallow).flatten_up_to(deep)
    except ValueError as e:
        raise ValueError(f"The nest does not have the structure of {_spec(shallow)}: {e}") from e


def map_structure_up_to(shallow, func: Callable, *nests):
    """``func`` applied to the sub-nests of ``nests`` at the leaves of ``shallow``; the
    result has ``shallow``'s structure."""
    treespec = _spec(shallow)
    columns = [flatten_up_to(shallow, n) for n in nests]
    return optree.tree_unflatten(treespec, [func(*xs) for xs in zip(*columns)])


def _paths(nest, prefix=""):
    """Dotted paths of the leaves of ``nest`` in ``flatten`` order (field names for NamedTuples)."""
    if nest is None:
        return []
    if isinstance(nest, dict):
        # optree's order: an OrderedDict (a torch state_dict) in insertion order, others sorted
        keys = nest if isinstance(nest, OrderedDict) else sorted(nest)
        items = [(str(k), nest[k]) for k in keys]
    elif is_namedtuple(nest):
        items = list(zip(nest._fields, nest))
    elif isinstance(nest, (list, tuple)):
        items = [(str(i), v) for i, v in enumerate(nest)]
    else:
        return [prefix]
    paths = []
    for name, value in items:
        paths.extend(_paths(value, f"{prefix}.{name}" if prefix else name))
    return paths


def map_structure_with_path(func: Callable, *nests):
    """Like ``map_structure`` but calls ``func(path, *leaves)``, ``path`` like ``'a.b.0'``.

    NamedTuple fields appear by name, dict keys by key, list items by index.
    """
    for other in nests[1:]:
        assert_same_structure(nests[0], other)
    flat = [flatten(n) for n in nests]
    results = [func(path, *leaves) for path, *leaves in zip(_paths(nests[0]), *flat)]
    return pack_sequence_as(nests[0], results)


def flatten_with_path(nest) -> list[tuple[str, Any]]:
    """``[(path, leaf), ...]`` with dotted paths, in ``flatten`` order."""
    return list(zip(_paths(nest), flatten(nest)))


def get_field(nest, field: str):
    """The sub-nest at dotted path ``field`` (e.g. ``'time_step.observation.pos'``)."""
    value = nest
    for name in field.split(".") if field else []:
        if isinstance(value, dict):
            value = value[name]
        elif is_namedtuple(value):
            value = getattr(value, name)
        elif isinstance(value, (list, tuple)):
            value = value[int(name)]
        else:
            raise KeyError(f"Field '{field}' not found: '{name}' indexes a leaf")
    return value


def set_field(nest, field: str, new_value):
    """A copy of ``nest`` with the sub-nest at dotted path ``field`` replaced."""
    if not field:
        return new_value
    name, _, rest = field.partition(".")
    if isinstance(nest, dict):
        out = dict(nest)
        out[name] = set_field(nest[name], rest, new_value)
        return type(nest)(out) if type(nest) is not dict else out
    if is_namedtuple(nest):
        return nest._replace(**{name: set_field(getattr(nest, name), rest, new_value)})
    if isinstance(nest, (list, tuple)):
        items = list(nest)
        items[int(name)] = set_field(items[int(name)], rest, new_value)
        return type(nest)(items)
    raise KeyError(f"Field '{field}' not found in a leaf")


def _stack_leaves(leaves, dim):
    first = leaves[0]
    if isinstance(first, torch.Tensor):
        return torch.stack(leaves, dim=dim)
    return np.stack(leaves, axis=dim)


def stack_nests(nests: Sequence, dim: int = 0):
    """Stack a list of same-structure nests into one nest (numpy or torch leaves).

    Each nest is flattened once and the structures are compared as tree specs, so
    stacking ``T`` steps of an unroll costs ``T`` flattens (not ``T`` pairwise
    structure checks of ``map_structure``).
    """
    if not nests:
        raise ValueError("stack_nests needs at least one nest")
    flat = [
        optree.tree_flatten(nest, is_leaf=_is_leaf, none_is_leaf=False, namespace=_NAMESPACE)
        for nest in nests
    ]
    treespec = flat[0][1]
    for _, spec in flat[1:]:
        if spec != treespec:
            raise ValueError(f"The nests do not have the same structure:\n  {treespec}\n  {spec}")
    stacked = [_stack_leaves(list(leaves), dim) for leaves in zip(*(f[0] for f in flat))]
    return optree.tree_unflatten(treespec, stacked)


def unstack_nest(nest, dim: int = 0) -> list:
    """Split a nest along ``dim`` into a list of nests (inverse of ``stack_nests``)."""
    leaves = flatten(nest)
    if not leaves:
        return []
    size = leaves[0].shape[dim]
    return [
        map_structure(
            lambda x, i=i: (
                x.select(dim, i) if isinstance(x, torch.Tensor) else np.take(x, i, axis=dim)
            ),
            nest,
        )
        for i in range(size)
    ]


def batch_nest(nest):
    """Add a leading batch dimension of size 1 to every leaf."""
    return map_structure(
        lambda x: (
            x.unsqueeze(0) if isinstance(x, torch.Tensor) else np.expand_dims(np.asarray(x), 0)
        ),
        nest,
    )


def get_nest_batch_size(nest, dim: int = 0) -> int:
    """The size of dimension ``dim`` of the first leaf of ``nest``."""
    leaves = flatten(nest)
    if not leaves:
        raise ValueError("Empty nest has no batch size")
    return leaves[0].shape[dim]


def slice_nest(nest, index):
    """``leaf[index]`` for every leaf."""
    return map_structure(lambda x: x[index], nest)


def nest_to_torch(nest, device: str | torch.device | None = None):
    """Convert every numpy leaf to a torch tensor (sharing memory on the CPU)."""

    def _convert(x):
        if isinstance(x, torch.Tensor):
            return x if device is None else x.to(device)
        t = torch.from_numpy(np.asarray(x))
        return t if device is None else t.to(device)

    return map_structure(_convert, nest)


def nest_to_numpy(nest):
    """Convert every torch leaf to a numpy array (on the CPU)."""
    return map_structure(
        lambda x: x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x),
        nest,
    )


def prune_nest_like(nest, slim_nest):
    """The part of ``nest`` that has the structure of ``slim_nest`` (dict/namedtuple fields)."""
    if isinstance(slim_nest, dict):
        return {k: prune_nest_like(nest[k], v) for k, v in slim_nest.items()}
    if is_namedtuple(slim_nest):
        return type(slim_nest)(
            **{
                k: prune_nest_like(getattr(nest, k), getattr(slim_nest, k))
                for k in slim_nest._fields
            }
        )
    if isinstance(slim_nest, (list, tuple)):
        return type(slim_nest)(prune_nest_like(n, s) for n, s in zip(nest, slim_nest))
    return nest
