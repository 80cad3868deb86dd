"""``ReplayBuffer``: per-environment ring storage of experience nests, optionally prioritized.

Storage is ``[num_envs, max_length, ...]`` torch tensors on the CPU for every
leaf of the experience nest. Each env has a position counter that only grows
(the total number of steps it has added, never reset, not even by ``clear``);
step ``p`` of env ``e`` lives in slot ``p % max_length`` of row ``e`` and the
newest ``max_length`` steps are kept (FIFO overwrite). Sampled sequences never
cross environments. Training code moves sampled minibatches to the training
device; the storage stays on the CPU.

**Prioritized sampling** (Schaul et al. 2016, "Prioritized Experience Replay",
arXiv:1511.05952). Every stored step ``i`` has a priority ``p_i``; a sequence
starting at ``i`` is drawn with probability ``P(i) = p_i^alpha / sum_j p_j^alpha``
over the valid starts ``j`` (steps with ``batch_length - 1`` successors stored in
the same env). New steps get the largest priority seen so far (1 at first) so
they are replayed at least once soon; ``update_priority`` sets the priorities of
replayed sequences (e.g. from ``|TD error|``), clamped below at
``priority_eps``. A sum tree gives ``O(B log N)`` vectorized sampling and updates.
See ``get_batch`` for the importance weights.
"""

from __future__ import annotations

import contextlib
import logging
import math

import torch

import alf
import alf.nest as nest
from alf.configuration.argtypes import Count, ScheduledFloat
from alf.data_structures import BatchInfo, StepType
from alf.experience_replayers.segment_tree import MinTree, SumTree
from alf.utils.schedulers import as_scheduler
from alf.utils.torch_utils import lazy_zeros


@alf.configurable
class ReplayBuffer:
    """Ring buffer of experience, one ring per environment.

    A configurable, as in ALF: the learner passes the sizes and the priority settings
    from ``TrainerConfig`` (so configure those there); ``enable_checkpoint`` is read
    from the conf (``ReplayBuffer.enable_checkpoint = False`` leaves the buffer out of
    checkpoints, as ``TrainerConfig.checkpoint_replay_buffer=False`` does).

    Args:
        data_spec: nest of ``TensorSpec`` of one step (no batch dim).
        num_environments: number of environments (rows).
        max_length: steps kept per environment.
        device: where the storage lives (CPU by default).
        name: for messages.
        prioritized_sampling: sample sequences by priority (see the module doc)
            instead of uniformly.
        priority_alpha: exponent ``alpha`` of the priorities (0: uniform).
        priority_beta: exponent ``beta`` of the importance weights: a float or a
            scheduler (a callable returning the current value, e.g. annealed to 1
            over training).
        priority_eps: the smallest priority ``update_priority`` stores (keeps every
            step reachable).
        enable_checkpoint: save the buffer in checkpoints (when
            ``TrainerConfig.checkpoint_replay_buffer`` is True too).
    """

    def __init__(
        self,
        data_spec,
        num_environments: Count,
        max_length: Count,
        device: str | torch.device = "cpu",
        name: str = "ReplayBuffer",
        prioritized_sampling: bool = False,
        priority_alpha: float = 0.7,
        priority_beta: ScheduledFloat = 0.4,
        priority_eps: float = 1e-6,
        enable_checkpoint: bool = True,
    ):
        self.enable_checkpoint = enable_checkpoint
        self._data_spec = data_spec
        self._num_envs = num_environments
        self._max_length = max_length
        self._device = torch.device(device)
        self._name = name
        self._buffer = nest.map_structure(  # memory committed as rows are first written
            lambda spec: lazy_zeros(
                (num_environments, max_length) + tuple(spec.shape), spec.dtype, self._device
            ),
            data_spec,
        )
        self._flat_buffer, self._treespec = nest.flatten_with_spec(self._buffer)
        # [num_envs * max_length, ...] views of the leaves: a step is one row (slot).
        self._slot_views = [x.view(-1, *x.shape[2:]) for x in self._flat_buffer]
        self._current_pos = torch.zeros(num_environments, dtype=torch.int64)
        self._clear_pos = torch.zeros(num_environments, dtype=torch.int64)
        self._env_range = torch.arange(num_environments)
        self._prioritized = prioritized_sampling
        self._alpha = float(priority_alpha)
        self._beta = as_scheduler(priority_beta)
        self._eps = float(priority_eps)
        self._max_priority = 1.0
        if prioritized_sampling:
            self._sum_tree = SumTree(num_environments * max_length)
            self._min_tree = MinTree(num_environments * max_length)

    # -- description -------------------------------------------------------------

    @property
    def data_spec(self):
        return self._data_spec

    @property
    def num_environments(self) -> int:
        return self._num_envs

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def prioritized_sampling(self) -> bool:
        return self._prioritized

    @property
    def max_priority(self) -> float:
        """The largest priority set so far (1 at first); new steps get it."""
        return self._max_priority

    @property
    def current_pos(self) -> torch.Tensor:
        """``[num_envs]`` total steps added per env (only grows)."""
        return self._current_pos

    def current_size(self) -> torch.Tensor:
        """``[num_envs]`` steps currently stored per env."""
        return (self._current_pos - self._clear_pos).clamp(max=self._max_length)

    def first_pos(self) -> torch.Tensor:
        """``[num_envs]`` position of the oldest stored step per env."""
        return self._current_pos - self.current_size()

    def current_beta(self) -> float:
        """The importance-weight exponent now (``priority_beta`` may be scheduled)."""
        return float(self._beta())

    def bytes_per_transition(self) -> int:
        """Memory of one stored step of one env, in bytes (priorities not included)."""
        return sum(x[0, 0].numel() * x.element_size() for x in self._flat_buffer)

    def priority_bytes(self) -> int:
        """Memory of the priority trees, in bytes (0 without prioritized sampling)."""
        if not self._prioritized:
            return 0
        return self._sum_tree.nbytes() + self._min_tree.nbytes()

    def total_bytes(self) -> int:
        """Memory of the storage and the priority trees, in bytes."""
        data = self.bytes_per_transition() * self._num_envs * self._max_length
        return data + self.priority_bytes()

    # -- adding ----------------------------------------------------------------------

    def _leaf(self, env_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Flat slot index ``env_id * max_length + position % max_length``."""
        return env_ids * self._max_length + positions % self._max_length

    def add_batch(self, batch, env_ids: torch.Tensor | None = None) -> None:
        """Append one step ``[B, ...]`` for the envs ``env_ids`` ``[B]`` (all envs when None).

        With prioritized sampling the new steps get the current ``max_priority``.
        """
        if env_ids is None:
            env_ids = self._env_range
        env_ids = env_ids.to(device="cpu", dtype=torch.int64)
        pos = self._current_pos[env_ids]
        slots = self._leaf(env_ids, pos)
        self._put_all(slots, nest.flatten(batch))
        self._current_pos[env_ids] += 1
        if self._prioritized:
            self._set_priority_leaves(self._leaf(env_ids, pos), self._max_priority**self._alpha)

    def add_steps(self, steps, env_ids: torch.Tensor | None = None) -> None:
        """Append ``T`` consecutive steps ``[T, B, ...]`` for the envs ``env_ids`` ``[B]``.

        The same as ``add_batch(steps[t], env_ids)`` for ``t = 0..T-1`` in order, with
        one write per leaf instead of ``T`` (an unroll is stored at once).
        """
        if env_ids is None:
            env_ids = self._env_range
        env_ids = env_ids.to(device="cpu", dtype=torch.int64)
        num_steps = nest.flatten(steps)[0].shape[0]
        if num_steps > self._max_length:  # later steps overwrite earlier ones: keep the order
            for t in range(num_steps):
                self.add_batch(nest.map_structure(lambda x, t=t: x[t], steps), env_ids)
            return
        pos = self._current_pos[env_ids] + torch.arange(num_steps).unsqueeze(1)  # [T, B]
        slots = self._leaf(env_ids.expand_as(pos), pos)
        self._put_all(slots, nest.flatten(steps))
        self._current_pos[env_ids] += num_steps
        if self._prioritized:
            self._set_priority_leaves(slots.reshape(-1), self._max_priority**self._alpha)

    def _put_all(self, slots: torch.Tensor, values: list) -> None:
        """Write the leaves ``values`` ``[*slots.shape, ...]`` at the distinct flat
        ``slots``: one ``index_copy_`` per leaf into its slot view."""
        slots = slots.reshape(-1).to(self._device)
        for rows, value in zip(self._slot_views, values):
            if value.dtype != rows.dtype or value.device != rows.device:
                value = value.to(rows.device, rows.dtype)
            rows.index_copy_(0, slots, value.reshape(-1, *rows.shape[1:]))

    def _set_priority_leaves(self, leaves: torch.Tensor, values) -> None:
        """Set ``p^alpha`` of slots ``leaves`` ``[K]`` in both trees."""
        self._sum_tree[leaves] = values
        self._min_tree[leaves] = values

    # -- reading ---------------------------------------------------------------------

    def _check_uniform_size(self) -> int:
        sizes = self.current_size()
        size = int(sizes[0])
        if not bool((sizes == size).all()):
            raise RuntimeError(
                f"{self._name}: gather_all needs the same number of steps for every env, "
                f"got {sizes.tolist()}"
            )
        return size

    def gather_all(self):
        """All stored steps, oldest first: ``[num_envs, size, ...]`` (batch-major)."""
        size = self._check_uniform_size()
        pos = int(self._current_pos[0])
        indices = torch.arange(pos - size, pos) % self._max_length
        return nest.map_structure(lambda x: x[:, indices], self._buffer)

    def get_batch(
        self, batch_size: int, batch_length: int, generator=None, time_major: bool = False
    ):
        """Sample ``batch_size`` sequences of ``batch_length`` consecutive steps of one env each.

        Uniform over all valid starts, or by priority with ``prioritized_sampling``.
        Importance weights (prioritized only) correct the bias of non-uniform
        sampling (Schaul et al. 2016, section 3.4):
        ``w_i = (N * P(i))^-beta / max_j (N * P(j))^-beta = (min_j p_j^alpha / p_i^alpha)^beta``
        with ``N`` valid starts ``j`` in the whole buffer (not just the batch), so
        weights are at most 1 and only scale updates down.

        Args:
            batch_size: number of sequences ``B``.
            batch_length: steps per sequence ``T``.
            generator: optional ``torch.Generator`` for the draws.
            time_major: return the batch as ``[T, B, ...]`` (what training
                uses) instead of ``[B, T, ...]``; gathered that way directly.

        Returns:
            ``(batch, BatchInfo)``: the batch ``[B, T, ...]`` (``[T, B, ...]`` if
            ``time_major``) and
            ``BatchInfo(env_ids, positions, importance_weights)``, each ``[B]``:
            env id (int64), position of each sequence's first step (int64), and
            importance weights (float32; ``()`` for uniform sampling).
        """
        if batch_length > self._max_length:
            raise ValueError(
                f"{self._name}: batch_length {batch_length} > max_length {self._max_length}"
            )
        if self._prioritized:
            env_ids, first_pos, weights = self._sample_prioritized(
                batch_size, batch_length, generator
            )
        else:
            env_ids, first_pos = self._sample_uniform(batch_size, batch_length, generator)
            weights = ()
        positions = first_pos.unsqueeze(1) + torch.arange(batch_length)  # [B, T]
        slots = env_ids.unsqueeze(1) * self._max_length + positions % self._max_length
        if time_major:
            slots = slots.t()
        batch = nest.unflatten(self._treespec, self._take_all(slots))
        info = BatchInfo(env_ids=env_ids, positions=first_pos, importance_weights=weights)
        return batch, info

    def _take_all(self, slots: torch.Tensor) -> list[torch.Tensor]:
        """Every leaf at the flat ``slots`` ``[M, N]``, as ``[M, N, ...]``: one
        ``index_select`` per leaf on its slot view (cheaper than indexing with an
        env-id and a position tensor, which broadcasts and checks both)."""
        flat = slots.reshape(-1).to(self._device)
        return [
            rows.index_select(0, flat).reshape(*slots.shape, *rows.shape[1:])
            for rows in self._slot_views
        ]

    # -- reading by position (for data transformers) -----------------------------------

    def oldest_readable_pos(self) -> torch.Tensor:
        """``[num_envs]`` oldest position still in the storage, per env.

        Steps forgotten by ``clear`` stay readable until overwritten, so transformers
        can read the history before a cleared buffer's first step (e.g. earlier frames
        for ``FrameStacker``); ``first_pos`` is the oldest step still to be trained on.
        """
        return (self._current_pos - self._max_length).clamp(min=0)

    def get_field(self, field: str, env_ids: torch.Tensor, positions: torch.Tensor):
        """The sub-nest ``field`` (a dotted path, e.g. ``'time_step.step_type'``) at
        ``positions`` of envs ``env_ids``.

        Args:
            field: dotted path into the stored experience nest (``''``: all of it).
            env_ids: int64 env ids, broadcastable to ``positions``.
            positions: int64 replay positions ``[...]``, each readable
                (``oldest_readable_pos() <= p < current_pos``).

        Returns:
            the sub-nest with leaves ``[*positions.shape, ...]`` (CPU).
        """
        env_ids = torch.as_tensor(env_ids, dtype=torch.int64).cpu()
        positions = torch.as_tensor(positions, dtype=torch.int64).cpu()
        env_ids = env_ids.expand_as(positions)
        readable = (positions >= self.oldest_readable_pos()[env_ids]) & (
            positions < self._current_pos[env_ids]
        )
        if not bool(readable.all()):
            bad = (~readable).nonzero()[0].tolist()
            raise ValueError(
                f"{self._name}: position {int(positions[tuple(bad)])} of env "
                f"{int(env_ids[tuple(bad)])} is not in the storage (readable: "
                f"{self.oldest_readable_pos().tolist()} .. {(self._current_pos - 1).tolist()})"
            )
        index = positions % self._max_length
        return nest.map_structure(lambda x: x[env_ids, index], nest.get_field(self._buffer, field))

    def steps_to_episode_end(
        self,
        env_ids: torch.Tensor,
        positions: torch.Tensor,
        step_type_field: str = "time_step.step_type",
        chunk: int = 64,
    ) -> torch.Tensor:
        """``[B]`` number of steps from ``positions`` ``[B]`` to the end of their episode.

        The end is the first LAST step at or after the position, or the env's newest
        stored step when the episode is still running. Scans forward ``chunk`` steps
        at a time for the sequences not yet resolved.
        """
        storage = nest.get_field(self._buffer, step_type_field)
        env_ids = torch.as_tensor(env_ids, dtype=torch.int64).cpu()
        positions = torch.as_tensor(positions, dtype=torch.int64).cpu()
        newest = self._current_pos[env_ids] - 1
        end = newest.clone()
        todo = torch.arange(len(positions))
        offset = 0
        while len(todo) and offset < self._max_length:
            pos = positions[todo, None] + offset + torch.arange(chunk)  # [N, chunk]
            valid = pos <= newest[todo, None]
            is_last = storage[env_ids[todo, None], pos % self._max_length] == StepType.LAST
            hit = is_last & valid
            found = hit.any(1)
            first_hit = pos.gather(1, hit.int().argmax(1, keepdim=True)).squeeze(1)
            end[todo[found]] = first_hit[found]
            unresolved = ~found & valid[:, -1]
            todo = todo[unresolved]
            offset += chunk
        return end - positions

    def _no_starts_error(self, batch_length: int) -> RuntimeError:
        return RuntimeError(
            f"{self._name}: no env has {batch_length} steps stored yet "
            f"(sizes {self.current_size().tolist()})"
        )

    def _sample_uniform(self, batch_size: int, batch_length: int, generator):
        """``(env_ids, first_pos)`` ``[B]`` uniform over the valid starts of all envs."""
        sizes = self.current_size()
        num_starts = (sizes - batch_length + 1).clamp(min=0)
        total = int(num_starts.sum())
        if total == 0:
            raise self._no_starts_error(batch_length)
        flat = torch.randint(0, total, (batch_size,), generator=generator)
        cumulative = torch.cumsum(num_starts, 0)
        env_ids = torch.searchsorted(cumulative, flat, right=True)
        offsets = flat - (cumulative[env_ids] - num_starts[env_ids])
        return env_ids, self.first_pos()[env_ids] + offsets

    def _sample_prioritized(self, batch_size: int, batch_length: int, generator):
        """``(env_ids, first_pos, importance_weights)`` ``[B]`` drawn by priority."""
        with self._tail_excluded(batch_length):
            total = self._sum_tree.summary()
            if total <= 0:
                raise self._no_starts_error(batch_length)
            mass = torch.rand(batch_size, dtype=torch.float64, generator=generator) * total
            leaves = self._sum_tree.find_sum_index(mass)
            priorities = self._sum_tree[leaves]
            min_priority = self._min_tree.summary()
        env_ids = leaves // self._max_length
        slots = leaves % self._max_length
        last = self._current_pos[env_ids] - 1
        first_pos = last - (last - slots) % self._max_length
        weights = (min_priority / priorities) ** self.current_beta()
        return env_ids, first_pos, weights.to(torch.float32)

    @contextlib.contextmanager
    def _tail_excluded(self, batch_length: int):
        """Zero the priorities of each env's newest ``batch_length - 1`` steps meanwhile.

        They cannot start a full sequence; excluding them (rather than clipping
        starts) keeps ``P(i)`` exactly proportional to ``p_i^alpha`` over valid starts.
        """
        if batch_length <= 1:
            yield
            return
        back = torch.arange(batch_length - 1)
        positions = self._current_pos.unsqueeze(1) - 1 - back
        stored = back < self.current_size().unsqueeze(1)
        envs = self._env_range.unsqueeze(1).expand_as(positions)
        leaves = self._leaf(envs[stored], positions[stored])
        sums, minima = self._sum_tree[leaves], self._min_tree[leaves]
        self._sum_tree[leaves] = 0.0
        self._min_tree[leaves] = math.inf
        try:
            yield
        finally:
            self._sum_tree[leaves] = sums
            self._min_tree[leaves] = minima

    # -- priorities --------------------------------------------------------------------

    def update_priority(self, env_ids, positions, priorities) -> None:
        """Set the priorities of the steps at ``positions`` of envs ``env_ids``.

        Typically called with a replayed batch's ``BatchInfo.env_ids`` and
        ``BatchInfo.positions`` (the first step of each sequence) and the
        algorithm's ``LossInfo.priority``. Steps overwritten or cleared since they
        were sampled are skipped.

        Args:
            env_ids: ``[B]`` environment ids.
            positions: ``[B]`` positions (as in ``BatchInfo.positions``).
            priorities: ``[B]`` nonnegative finite priorities (any device, detached
                here), clamped below at ``priority_eps``.
        """
        if not self._prioritized:
            raise RuntimeError(f"{self._name}: update_priority without prioritized_sampling")
        env_ids = torch.as_tensor(env_ids).to(device="cpu", dtype=torch.int64).reshape(-1)
        positions = torch.as_tensor(positions).to(device="cpu", dtype=torch.int64).reshape(-1)
        priorities = torch.as_tensor(priorities).detach().to("cpu", torch.float64).reshape(-1)
        if not env_ids.shape == positions.shape == priorities.shape:
            raise ValueError(
                f"{self._name}: update_priority got {env_ids.numel()} env ids, "
                f"{positions.numel()} positions and {priorities.numel()} priorities"
            )
        if not bool(torch.isfinite(priorities).all()) or bool((priorities < 0).any()):
            raise ValueError(f"{self._name}: priorities must be finite and >= 0: {priorities}")
        priorities = priorities.clamp(min=self._eps)
        valid = (positions >= self.first_pos()[env_ids]) & (positions < self._current_pos[env_ids])
        if not bool(valid.any()):
            return
        priorities = priorities[valid]
        leaves = self._leaf(env_ids[valid], positions[valid])
        self._set_priority_leaves(leaves, priorities**self._alpha)
        self._max_priority = max(self._max_priority, float(priorities.max()))

    def _valid_slots(self) -> torch.Tensor:
        """``[num_envs * max_length]`` bool: which slots hold a stored step."""
        slots = torch.arange(self._max_length)
        last = self._current_pos.unsqueeze(1) - 1
        positions = last - (last - slots) % self._max_length
        return (positions >= self.first_pos().unsqueeze(1)).reshape(-1)

    def _set_all_priorities(self, values: torch.Tensor) -> None:
        """Rebuild both trees from ``[num_envs * max_length]`` ``p^alpha`` (0 where not stored)."""
        values = torch.where(self._valid_slots(), values.to(torch.float64).reshape(-1), 0.0)
        self._sum_tree.set_all(values)
        self._min_tree.set_all(torch.where(values > 0, values, math.inf))

    # -- clearing and checkpoints ------------------------------------------------------

    def set_newest(self, field: str, value) -> None:
        """Set leaf ``field`` (a dotted path, e.g. ``'time_step.step_type'``) of each env's
        newest stored step to ``value`` (envs with nothing stored are left alone)."""
        storage = nest.get_field(self._buffer, field)
        has_data = self._current_pos > self._clear_pos
        env_ids = self._env_range[has_data]
        index = (self._current_pos[has_data] - 1) % self._max_length
        storage[env_ids, index] = torch.as_tensor(value, dtype=storage.dtype)

    def clear(self, keep_last: int = 0) -> None:
        """Forget stored steps except each env's newest ``keep_last`` (positions keep growing)."""
        self._clear_pos = torch.maximum(self._clear_pos, self._current_pos - keep_last)
        if self._prioritized:
            self._set_all_priorities(self._sum_tree.leaves())

    def spec_info(self) -> list:
        """``[[shape, dtype name], ...]`` of each leaf of one step (flattened order)."""
        return [[list(x.shape[2:]), str(x.dtype).removeprefix("torch.")] for x in self._flat_buffer]

    def state_dict(self) -> dict:
        """Contents, pointers and priorities, for checkpoints (tensors and plain values).

        Keys: ``data.<i>`` (the storage of leaf ``i``, ``[num_envs, max_length, ...]``),
        ``current_pos``, ``clear_pos``, ``spec_info``, and with prioritized sampling
        ``priority`` (``p^alpha`` per slot, ``[num_envs, max_length]`` float64) and
        ``max_priority``. The ``data.<i>`` tensors are the live storage (no copy, so a
        checkpoint of a large buffer does not need twice its memory): save or clone
        them before the buffer changes.
        """
        state = {f"data.{i}": x for i, x in enumerate(self._flat_buffer)}
        state["current_pos"] = self._current_pos.clone()
        state["clear_pos"] = self._clear_pos.clone()
        state["spec_info"] = self.spec_info()
        if self._prioritized:
            leaves = self._sum_tree.leaves()
            state["priority"] = leaves.reshape(self._num_envs, self._max_length)
            state["max_priority"] = self._max_priority
        return state

    def state_nbytes(self, state: dict | None = None) -> int:
        """Bytes of the tensors of ``state`` (``state_dict()`` when None)."""
        state = self.state_dict() if state is None else state
        return sum(v.numel() * v.element_size() for v in state.values() if torch.is_tensor(v))

    def _check_state(self, state: dict) -> None:
        expected = [[self._num_envs, self._max_length, *s] for s, _ in self.spec_info()]
        found = [list(state[f"data.{i}"].shape) for i in range(len(self._flat_buffer))]
        if found != expected or state.get("spec_info", self.spec_info()) != self.spec_info():
            raise ValueError(
                f"{self._name}: checkpointed buffer {found} / {state.get('spec_info')} does not "
                f"match this buffer {expected} / {self.spec_info()}"
            )

    def load_state_dict(self, state: dict) -> None:
        """Load what ``state_dict`` wrote (shapes and dtypes must match).

        A prioritized buffer loading a state without priorities gives every stored
        step the priority ``max_priority`` (1).
        """
        missing = [f"data.{i}" for i in range(len(self._flat_buffer)) if f"data.{i}" not in state]
        if missing or "current_pos" not in state:
            raise ValueError(f"{self._name}: state lacks {missing or ['current_pos']}")
        self._check_state(state)
        for i, storage in enumerate(self._flat_buffer):
            storage.copy_(state[f"data.{i}"])
        self._current_pos.copy_(state["current_pos"])
        self._clear_pos.copy_(state.get("clear_pos", torch.zeros_like(self._clear_pos)))
        if not self._prioritized:
            return
        if "priority" in state:
            self._max_priority = float(state["max_priority"])
            self._set_all_priorities(torch.as_tensor(state["priority"]).cpu())
        else:
            logging.warning("%s: no priorities in the state; using max_priority", self._name)
            slots = self._num_envs * self._max_length
            self._set_all_priorities(torch.full((slots,), self._max_priority**self._alpha))
