"""``BatchedEnvironment``: several unbatched environments stepped in one process.

This is the fast path for cheap simulators (docs/design.md, section 4; CartPole steps ~10x faster
with all envs in one process than with one subprocess per env). Each member is an
unbatched ``AlfEnvironment`` with its own auto reset (the step after its LAST returns
its FIRST), so rows reset independently. Rows are written into preallocated per-leaf
``[K, ...]`` buffers; every step hands out fresh copies of them, as torch tensors
(``torch_output=True``, the batched ``AlfEnvironment`` contract) or as numpy arrays
(inside a ``ProcessEnvironment``, which ships numpy).

Members made by ``suite_gym.load`` (``AlfGymWrapper``, optionally in ``TimeLimit``)
are stepped by ``GymRows``: it calls the gymnasium envs directly and applies the
wrappers' rules row by row into the buffers, which removes the per-member
``TimeStep`` and wrapper layers (about 11 µs → 6.5 µs per CartPole step here, where
gymnasium's own step is 5.5 µs). Its results equal the members' (tested).

``NestLayout`` (the byte layout of a batched spec nest) is shared with the process
backends, which lay their shared memory out the same way.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import optree
import torch

import alf.nest as nest
from alf.data_structures import StepType, TimeStep
from alf.environments.alf_environment import AlfEnvironment
from alf.environments.alf_gym_wrapper import AlfGymWrapper
from alf.environments.alf_wrappers import TimeLimit
from alf.environments.step_guard import StepGuard
from alf.tensor_specs import BoundedTensorSpec

_ALIGNMENT = 16


def _tree_structure(spec_nest):
    """The optree structure ``alf.nest`` uses (dict keys sorted, ``None`` is empty)."""
    return optree.tree_structure(spec_nest, none_is_leaf=False, namespace="alf")


class NestLayout:
    """Byte layout of a nest of fixed-shape arrays batched to ``[B, ...]``.

    Leaf ``i`` (in ``alf.nest.flatten`` order) occupies one contiguous region of
    ``B * prod(spec.shape) * itemsize`` bytes, so a batch of time steps lives in
    one byte block and a fresh batch is one ``memcpy`` plus one view per leaf.

    Args:
        spec_nest: nest of ``TensorSpec`` (no batch dim).
        batch_size: number of rows ``B``.
    """

    def __init__(self, spec_nest, batch_size: int):
        self.spec_nest = spec_nest
        self.specs = nest.flatten(spec_nest)
        self.batch_size = int(batch_size)
        self.treespec = _tree_structure(spec_nest)
        self.fields = []
        offset = 0
        for spec in self.specs:
            dtype = spec.numpy_dtype
            shape = (self.batch_size, *spec.shape)
            offset = -(-offset // _ALIGNMENT) * _ALIGNMENT
            self.fields.append((offset, shape, dtype))
            offset += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.nbytes = max(offset, 1)

    def views(self, buffer) -> list[np.ndarray]:
        """Per-leaf ``[B, ...]`` arrays viewing ``buffer`` (a uint8 array or mmap)."""
        return [
            np.ndarray(shape, dtype, buffer=buffer, offset=off) for off, shape, dtype in self.fields
        ]

    def unbatched_views(self, buffer) -> list[np.ndarray]:
        """Per-leaf arrays of the spec's own shape viewing row 0 of ``buffer``."""
        return [
            np.ndarray(shape[1:], dtype, buffer=buffer, offset=off)
            for off, shape, dtype in self.fields
        ]

    def unflatten(self, leaves):
        """Pack ``leaves`` (``flatten`` order) into the structure of ``spec_nest``."""
        return self.treespec.unflatten(leaves)


class LeafGetter:
    """Fast ``alf.nest.flatten`` for nests that always have the structure of a spec.

    When every non-empty field of a ``TimeStep`` spec is a single spec (the common
    case: array observation and action, scalar reward, no env_info), the leaves are
    the fields themselves and ``operator.itemgetter`` fetches them without a tree
    walk; otherwise this falls back to ``alf.nest.flatten``.

    Args:
        spec_nest: the nest of specs the values will follow.
    """

    def __init__(self, spec_nest):
        self._getter = nest.flatten
        if not isinstance(spec_nest, tuple) or not nest.is_namedtuple(spec_nest):
            if not nest.is_nested(spec_nest):
                self._getter = _single_leaf
            return
        indices = []
        for index, field in enumerate(spec_nest):
            if nest.is_nested(field) and not nest.flatten(field):
                continue
            if nest.is_nested(field):
                return
            indices.append(index)
        if len(indices) > 1:
            self._getter = operator.itemgetter(*indices)

    def __call__(self, value) -> Sequence:
        return self._getter(value)


def _single_leaf(value):
    return (value,)


def to_numpy_leaf(value) -> np.ndarray:
    """A numpy view of a torch tensor (detached, on the CPU) or ``np.asarray(value)``."""
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            value = value.detach()
        if value.device.type != "cpu":
            value = value.cpu()
        return value.numpy()
    return np.asarray(value)


def plain_numpy(value) -> np.ndarray | None:
    """``value`` as numpy without a copy if it is an array or a plain CPU tensor, else None."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, torch.Tensor) and value.is_cpu and not value.requires_grad:
        return value.numpy()
    return None


def check_batched_leaves(leaves, specs, batch_size: int, what: str = "action") -> None:
    """Raise ``ValueError`` unless every leaf is shaped ``[batch_size, *spec.shape]``."""
    if len(leaves) != len(specs):
        raise ValueError(f"Expected an {what} nest with {len(specs)} leaves, got {len(leaves)}")
    for leaf, spec in zip(leaves, specs):
        if leaf.shape != (batch_size, *spec.shape):
            raise ValueError(
                f"Batched {what} of shape {tuple(leaf.shape)} does not match "
                f"[batch_size={batch_size}] + {spec}"
            )


def split_rows(leaves, treespec, batch_size: int) -> list:
    """Per-row nests from batched numpy ``leaves`` (``[B, ...]`` each).

    Rows of scalar leaves become numpy scalars, rows of array leaves are copies,
    so a member env may keep what it is given.
    """
    if len(leaves) == 1 and treespec.num_leaves == 1 and treespec.num_nodes == 1:
        (leaf,) = leaves
        return list(leaf) if leaf.ndim == 1 else list(leaf.copy())
    columns = [list(leaf) if leaf.ndim == 1 else list(leaf.copy()) for leaf in leaves]
    return [treespec.unflatten(row) for row in zip(*columns)]


def check_same_time_step_spec(specs: Sequence, names: Sequence[str]) -> None:
    """Raise ``ValueError`` unless all ``TimeStep`` spec nests are identical."""
    reference = specs[0]
    ref_structure, ref_leaves = _tree_structure(reference), nest.flatten(reference)
    for spec, name in zip(specs[1:], names[1:]):
        if _tree_structure(spec) != ref_structure or nest.flatten(spec) != ref_leaves:
            raise ValueError(
                f"All environments of a batch must have the same time_step_spec, but "
                f"{names[0]} has\n  {reference}\nand {name} has\n  {spec}"
            )


class BatchedEnvironment(AlfEnvironment):
    """``K`` unbatched environments stepped in the calling process as one batch.

    ``step(action)`` takes an action nest ``[K, ...]`` and returns a ``TimeStep``
    whose leaves are ``[K, ...]`` with row ``i`` from member ``i``. Members auto
    reset independently: a row that was LAST becomes the FIRST of a new episode
    while the other rows keep going. ``env_id`` rows come from the members.

    Args:
        envs: the members: unbatched ``AlfEnvironment`` instances or zero-argument
            callables returning one (picklable callables let the whole batch be
            built inside a ``ProcessEnvironment``). All must have the same specs.
        torch_output: return torch CPU tensors (the batched ``AlfEnvironment``
            contract) when True; numpy arrays when False (inside a worker process,
            which ships numpy). Actions may be torch tensors or numpy arrays either way.
        fuse_gym_steps: when every member is a plain gymnasium env as made by
            ``suite_gym.load`` (see ``gym_member``), step the gymnasium envs directly
            and apply ``AlfGymWrapper``/``TimeLimit``'s rules row by row into the batch
            buffers (``GymRows``) instead of building one ``TimeStep`` per member:
            the same results with about half the per-step overhead.
        step_timeout: seconds a batched ``reset``/``step`` may take before it is
            interrupted with ``EnvironmentStepTimeout`` (``alf.environments.step_guard``);
            None: no limit.
    """

    def __init__(
        self,
        envs: Sequence[AlfEnvironment | Callable[[], AlfEnvironment]],
        torch_output: bool = True,
        fuse_gym_steps: bool = True,
        step_timeout: float | None = None,
    ):
        super().__init__()
        if not envs:
            raise ValueError("BatchedEnvironment needs at least one environment")
        self._envs = []
        try:
            for env in envs:
                self._envs.append(env if isinstance(env, AlfEnvironment) else env())
        except BaseException:
            self.close()
            raise
        for i, env in enumerate(self._envs):
            if env.batched:
                self.close()
                raise ValueError(f"BatchedEnvironment member {i} ({env!r}) is already batched")
        check_same_time_step_spec(
            [env.time_step_spec() for env in self._envs],
            [f"member {i}" for i in range(len(self._envs))],
        )
        self._torch_output = torch_output
        self._time_step_spec = self._envs[0].time_step_spec()
        self._layout = NestLayout(self._time_step_spec, len(self._envs))
        self._scratch = np.zeros(self._layout.nbytes, np.uint8)
        self._scratch_views = self._layout.views(self._scratch)
        self._leaves_of = LeafGetter(self._time_step_spec)
        self._action_specs = nest.flatten(self.action_spec())
        self._action_treespec = _tree_structure(self.action_spec())
        self._single_action_shape = None
        if not nest.is_nested(self.action_spec()):
            self._single_action_shape = (len(self._envs), *self.action_spec().shape)
        self._gym_rows = None
        if fuse_gym_steps:
            members = [gym_member(env) for env in self._envs]
            if all(member is not None for member in members):
                views = self._layout.unflatten(self._scratch_views)
                self._gym_rows = GymRows(members, views, self.action_spec())
        self._guard = StepGuard(
            f"{len(self._envs)} in-process envs ({self._envs[0]!r}, ...)", step_timeout
        )
        self._closed = False

    # -- description -----------------------------------------------------------

    @property
    def batched(self) -> bool:
        return True

    @property
    def batch_size(self) -> int:
        return len(self._envs)

    @property
    def envs(self) -> list[AlfEnvironment]:
        """The member environments (row ``i`` is ``envs[i]``)."""
        return list(self._envs)

    def observation_spec(self):
        return self._envs[0].observation_spec()

    def action_spec(self):
        return self._envs[0].action_spec()

    def reward_spec(self):
        return self._envs[0].reward_spec()

    def env_info_spec(self):
        return self._envs[0].env_info_spec()

    def time_step_spec(self) -> TimeStep:
        return self._time_step_spec

    # -- running -----------------------------------------------------------------

    def _reset(self) -> TimeStep:
        return self._guard.call(self._reset_all)

    def _step(self, action) -> TimeStep:
        return self._guard.call(self._step_all, action)

    def _reset_all(self) -> TimeStep:
        for row, env in enumerate(self._envs):
            time_step = env.reset()
            self._check_leaf_shapes(row, time_step)
            self._write_row(row, time_step)
            if self._gym_rows is not None:
                self._gym_rows.restart(row)
        return self._emit()

    def _step_all(self, action) -> TimeStep:
        if self._gym_rows is not None:
            self._gym_rows.step(self._action_array(action), self._reset_row)
            return self._emit()
        actions = self._split_action(action)
        views = self._scratch_views
        leaves_of = self._leaves_of
        for row, (env, row_action) in enumerate(zip(self._envs, actions)):
            for view, leaf in zip(views, leaves_of(env.step(row_action))):
                view[row] = leaf
        return self._emit()

    def _action_array(self, action) -> np.ndarray:
        """The single-leaf batched action as numpy ``[K, ...]`` (shape checked)."""
        array = plain_numpy(action)
        if array is None or array.shape != self._single_action_shape:
            leaves = [to_numpy_leaf(leaf) for leaf in nest.flatten(action)]
            check_batched_leaves(leaves, self._action_specs, len(self._envs))
            (array,) = leaves
        return array

    def _split_action(self, action) -> list:
        """Per-member actions from a batched action nest (torch or numpy)."""
        if self._single_action_shape is not None:
            array = plain_numpy(action)
            if array is not None and array.shape == self._single_action_shape:
                return list(array) if array.ndim == 1 else list(array.copy())
        leaves = [to_numpy_leaf(leaf) for leaf in nest.flatten(action)]
        check_batched_leaves(leaves, self._action_specs, len(self._envs))
        return split_rows(leaves, self._action_treespec, len(self._envs))

    def _reset_row(self, row: int) -> None:
        self._write_row(row, self._envs[row].reset())

    def _write_row(self, row: int, time_step: TimeStep) -> None:
        for view, leaf in zip(self._scratch_views, self._leaves_of(time_step)):
            view[row] = leaf

    def _check_leaf_shapes(self, row: int, time_step: TimeStep) -> None:
        """Shapes are checked at reset (strictly) so that steps can skip the check."""
        leaves = nest.flatten(time_step)
        if len(leaves) != len(self._layout.specs):
            raise ValueError(
                f"Member {row} returned a time step with {len(leaves)} leaves; its "
                f"time_step_spec has {len(self._layout.specs)}: {self._time_step_spec}"
            )
        for (path, leaf), spec in zip(nest.flatten_with_path(time_step), self._layout.specs):
            if tuple(np.shape(leaf)) != tuple(spec.shape):
                raise ValueError(
                    f"Member {row} returned {path} of shape {np.shape(leaf)}, "
                    f"but its spec is {spec}"
                )

    def _emit(self) -> TimeStep:
        """Fresh copies of the scratch rows, as torch tensors or numpy arrays."""
        if self._torch_output:
            return self._layout.unflatten([torch.from_numpy(v.copy()) for v in self._scratch_views])
        return self._layout.unflatten([v.copy() for v in self._scratch_views])

    def seed(self, seed) -> None:
        """Seed member ``i`` with ``seed + i`` (int) or ``seed[i]`` (sequence)."""
        seeds = member_seeds(seed, len(self._envs))
        for env, member_seed in zip(self._envs, seeds):
            env.seed(member_seed)

    def render(self, mode: str = "rgb_array"):
        """Render member 0."""
        return self._envs[0].render(mode)

    def close(self) -> None:
        """Close every member (idempotent)."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        for env in self._envs:
            env.close()


def member_seeds(seed, count: int) -> list:
    """The seeds of ``count`` batch rows: ``seed + i`` for an int ``seed`` (row ``i`` of a
    batch made by ``create_environment`` is env ``i``, so this is ``seed + env_id``), or
    the ``count`` seeds of a sequence ``seed``.

    Raises:
        ValueError: if a sequence ``seed`` does not have ``count`` seeds.
    """
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(count)]
    seeds = list(seed)
    if len(seeds) != count:
        raise ValueError(f"Expected {count} seeds, got {len(seeds)}")
    return seeds


# ----------------------------------------------------------------------------
# fused stepping of gymnasium members


class GymMember(NamedTuple):
    """What ``GymRows`` needs of a ``[TimeLimit(]AlfGymWrapper[)]`` member."""

    gym_env: object
    max_steps: float
    discount: float
    name: str


def gym_member(env: AlfEnvironment) -> GymMember | None:
    """The gymnasium env and rules of ``env`` if ``GymRows`` can step it, else None.

    That is when ``env`` is exactly ``AlfGymWrapper`` or ``TimeLimit(AlfGymWrapper)``
    (what ``suite_gym.load`` returns without alf wrappers) with a single-array
    observation and action and a scalar reward.
    """
    max_steps = float("inf")
    if type(env) is TimeLimit:
        max_steps, env = env.duration, env.wrapped_env()
    if type(env) is not AlfGymWrapper:
        return None
    if (
        nest.is_nested(env.observation_spec())
        or nest.is_nested(env.action_spec())
        or env.reward_spec().shape != ()
    ):
        return None
    discount = getattr(env, "discount", None)
    if discount is None:
        discount = env._discount  # no public accessor yet
    return GymMember(env.gym, max_steps, float(discount), repr(env))


class GymRows:
    """Steps gymnasium members directly, writing each row of the batch in place.

    Applies, row by row, exactly the rules of ``AlfGymWrapper._step`` and
    ``TimeLimit``: actions are validated against the spec (shape, discrete bounds)
    and cast to its dtype, the gymnasium env is stepped, ``terminated`` gives LAST
    with discount 0, ``truncated`` or reaching ``max_steps`` gives LAST with the
    member's discount, anything else MID with it; ``prev_action`` is the cast
    action; ``env_info`` holds the spec's keys of ``info`` (zeros when missing). A
    row after a LAST is reset through its member (``reset_row``), so seeding and the
    FIRST time step are the member's own. The members' ``current_time_step()`` is
    not updated by fused steps.

    Args:
        members: one ``GymMember`` per row.
        views: ``TimeStep`` of ``[K, ...]`` numpy views of the batch buffers.
        action_spec: the (single) action spec.
    """

    def __init__(self, members: Sequence[GymMember], views: TimeStep, action_spec):
        self._steps = [member.gym_env.step for member in members]
        self._max_steps = [member.max_steps for member in members]
        self._discounts = [member.discount for member in members]
        self._names = [member.name for member in members]
        self._num_steps = [0] * len(members)
        self._ended = [False] * len(members)
        self._views = views
        self._info_views = [(key, view, view.shape[1:]) for key, view in views.env_info.items()]
        self._spec = action_spec
        self._dtype = action_spec.numpy_dtype
        self._bounds = None
        if action_spec.is_discrete and isinstance(action_spec, BoundedTensorSpec):
            self._bounds = (action_spec.minimum, action_spec.maximum)

    def restart(self, row: int) -> None:
        """Row ``row`` was just reset (its episode restarts)."""
        self._num_steps[row] = 0
        self._ended[row] = False

    def step(self, actions: np.ndarray, reset_row: Callable[[int], None]) -> None:
        """Step row ``i`` with ``actions[i]`` (``[K, ...]``); rows after a LAST reset instead."""
        self._check_actions(actions)
        actions = actions.astype(self._dtype, copy=False)
        rows = list(actions) if actions.ndim == 1 else list(actions.copy())
        views = self._views
        step_types, rewards, discounts = views.step_type, views.reward, views.discount
        observations, prev_actions = views.observation, views.prev_action
        last, mid = StepType.LAST, StepType.MID
        num_steps, ended = self._num_steps, self._ended
        for row, action in enumerate(rows):
            if ended[row]:
                reset_row(row)
                self.restart(row)
                continue
            observation, reward, terminated, truncated, info = self._steps[row](action)
            num_steps[row] += 1
            if self._info_views:
                self._write_info(row, info)
            observations[row] = observation
            rewards[row] = reward
            prev_actions[row] = action
            if terminated:
                step_types[row], discounts[row] = last, 0.0
                ended[row] = True
            else:
                ended[row] = bool(truncated) or num_steps[row] >= self._max_steps[row]
                step_types[row] = last if ended[row] else mid
                discounts[row] = self._discounts[row]

    def _write_info(self, row: int, info: dict) -> None:
        """``AlfGymWrapper``'s env_info rule: the spec's keys, zeros when missing."""
        for key, view, shape in self._info_views:
            value = info.get(key)
            if value is None:
                view[row] = 0
                continue
            array = np.asarray(value, dtype=view.dtype)
            if array.shape != shape:
                raise ValueError(
                    f"env_info['{key}'] of env {self._names[row]} has shape {array.shape}, "
                    f"but its spec has shape {shape}"
                )
            view[row] = array

    def _check_actions(self, actions: np.ndarray) -> None:
        """``AlfGymWrapper``'s validation: discrete actions must lie within the bounds."""
        if self._bounds is None:
            return
        low, high = self._bounds
        if actions.ndim == 1 and low.ndim == 0 and high.ndim == 0:
            low_value, high_value = low.item(), high.item()
            if all(low_value <= value <= high_value for value in actions.tolist()):
                return
        bad = ((actions < low) | (actions > high)).reshape(actions.shape[0], -1).any(axis=1)
        bad[np.asarray(self._ended)] = False  # their actions are ignored (auto reset)
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(
                f"Action {actions[row].tolist()} of row {row} is outside the action spec "
                f"{self._spec} of env {self._names[row]}: value out of range"
            )
