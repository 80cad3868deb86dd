"""``ReplayBuffer``: per-environment ring storage of experience nests, optionally prioritized.

Storage is ``[num_envs, max_length, ...]`` torch tensors on the CPU for every
leaf of the experience nest. Each env has a position counter that only grows
(the total number of steps it has added, never reset, not even by ``clear``);
step ``p`` of env ``e`` lives in slot ``p % max_length`` of row ``e`` and the
newest ``max_length`` steps are kept (FIFO overwrite). Sampled sequences never
cross environments. Training code moves sampled minibatches to the training
device; the storage stays on the CPU.

The job is split: ``RingPositions`` (``ring.py``) keeps the per-env position counters
and the slot layout, ``PrioritizedSampler`` (``prioritized.py``) the priorities and
sampling by them (Schaul et al. 2016, "Prioritized Experience Replay"),
``EpisodicReturns`` (``episodic.py``) the discounted return of each step to its
episode's end (``record_episodic_return``), and ``ReplayBuffer`` the storage, what is
added and read, and checkpoints.
"""

from __future__ import annotations

import torch

import alf
import alf.nest as nest
from alf.configuration.argtypes import Count, Discount, ScheduledFloat
from alf.data_structures import BatchInfo
from alf.experience_replayers import buffer_state
from alf.experience_replayers.episodic import EpisodicReturns
from alf.experience_replayers.prioritized import PrioritizedSampler
from alf.experience_replayers.ring import RingPositions
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
        prioritized_sampling: sample sequences by priority (see ``PrioritizedSampler``)
            instead of uniformly.
        priority_alpha: exponent ``alpha`` of the priorities (0: uniform).
        priority_beta: exponent ``beta`` of the importance weights: a float or a
            scheduler (a callable returning the current value, e.g. annealed to 1
            over training).
        priority_eps: the smallest priority ``update_priority`` stores (keeps every
            step reachable).
        enable_checkpoint: save the buffer in checkpoints (when
            ``TrainerConfig.checkpoint_replay_buffer`` is True too).
        keep_episodic_info: ALF's episode indexing (alf scans step types instead); it
            must not be False with ``record_episodic_return``, as in ALF.
        record_episodic_return: keep each stored step's discounted return to its
            episode's end, once that is in the buffer (``episodic.py``), for
            ``BatchInfo.discounted_return``. The rewards are raw (transformers run after
            sampling): match ``reward_clip`` and ``gamma`` to the ``RewardClipping`` and
            the TD loss.
        default_return: the return of steps whose episode has not ended (or ended by a
            time limit): below any real return (e.g. 0 with nonnegative rewards).
        gamma: the discount of the returns.
        reward_clip: None or ``(min, max)``: clip the rewards of the returns.
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
        keep_episodic_info: bool | None = None,
        record_episodic_return: bool = False,
        default_return: float = -1000.0,
        gamma: Discount = 0.99,
        reward_clip: tuple[float, float] | None = None,
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
        self._ring = RingPositions(num_environments, max_length, name)
        self._beta = as_scheduler(priority_beta)
        self._priorities = None
        if prioritized_sampling:
            self._priorities = PrioritizedSampler(
                self._ring, float(priority_alpha), self._beta, float(priority_eps)
            )
        self._episodic = None
        if record_episodic_return:
            if keep_episodic_info is False:
                raise ValueError(f"{name}: record_episodic_return needs keep_episodic_info")
            self._episodic = EpisodicReturns(
                self._ring, self._buffer, gamma, reward_clip, default_return
            )

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
        return self._priorities is not None

    @property
    def records_episodic_return(self) -> bool:
        return self._episodic is not None

    @property
    def max_priority(self) -> float:
        """The largest priority set so far (1 at first); new steps get it."""
        return 1.0 if self._priorities is None else self._priorities.max_priority

    @property
    def current_pos(self) -> torch.Tensor:
        """``[num_envs]`` total steps added per env (only grows)."""
        return self._ring.current_pos

    def current_size(self) -> torch.Tensor:
        """``[num_envs]`` steps currently stored per env."""
        return self._ring.current_size()

    def first_pos(self) -> torch.Tensor:
        """``[num_envs]`` position of the oldest stored step per env."""
        return self._ring.first_pos()

    def current_beta(self) -> float:
        """The importance-weight exponent now (``priority_beta`` may be scheduled)."""
        return float(self._beta())

    def bytes_per_transition(self) -> int:
        """Memory of one stored step of one env, in bytes (priorities not included)."""
        return sum(x[0, 0].numel() * x.element_size() for x in self._flat_buffer)

    def priority_bytes(self) -> int:
        """Memory of the priority trees, in bytes (0 without prioritized sampling)."""
        return 0 if self._priorities is None else self._priorities.nbytes()

    def total_bytes(self) -> int:
        """Memory of the storage and the priority trees, in bytes."""
        data = self.bytes_per_transition() * self._num_envs * self._max_length
        return data + self.priority_bytes()

    # -- adding ----------------------------------------------------------------------

    def add_batch(self, batch, env_ids: torch.Tensor | None = None) -> None:
        """Append one step ``[B, ...]`` for the envs ``env_ids`` ``[B]`` (all envs when None).

        With prioritized sampling the new steps get the current ``max_priority``.
        """
        env_ids = self._ring.env_ids(env_ids)
        slots = self._ring.slots(env_ids, self._ring.current_pos[env_ids])
        positions = self._ring.current_pos[env_ids].unsqueeze(0)
        self._put_all(slots, nest.flatten(batch))
        self._ring.current_pos[env_ids] += 1
        if self._priorities is not None:
            self._priorities.mark_new(slots)
        if self._episodic is not None:
            self._episodic.on_add(batch, env_ids, positions, lambda x: x.unsqueeze(0))

    def add_steps(self, steps, env_ids: torch.Tensor | None = None) -> None:
        """Append ``T`` consecutive steps ``[T, B, ...]`` for the envs ``env_ids`` ``[B]``.

        The same as ``add_batch(steps[t], env_ids)`` for ``t = 0..T-1`` in order, with
        one write per leaf instead of ``T`` (an unroll is stored at once).
        """
        env_ids = self._ring.env_ids(env_ids)
        num_steps = nest.flatten(steps)[0].shape[0]
        if num_steps > self._max_length:  # later steps overwrite earlier ones: keep the order
            for t in range(num_steps):
                self.add_batch(nest.map_structure(lambda x, t=t: x[t], steps), env_ids)
            return
        pos = self._ring.current_pos[env_ids] + torch.arange(num_steps).unsqueeze(1)  # [T, B]
        slots = self._ring.slots(env_ids.expand_as(pos), pos)
        self._put_all(slots, nest.flatten(steps))
        self._ring.current_pos[env_ids] += num_steps
        if self._priorities is not None:
            self._priorities.mark_new(slots.reshape(-1))
        if self._episodic is not None:
            self._episodic.on_add(steps, env_ids, pos, lambda x: x)

    def _put_all(self, slots: torch.Tensor, values: list) -> None:
        """Write the leaves ``values`` ``[*slots.shape, ...]`` at the distinct flat
        ``slots``: one ``index_copy_`` per leaf into its slot view."""
        slots = slots.reshape(-1).to(self._device)
        for rows, value in zip(self._slot_views, values):
            if value.dtype != rows.dtype or value.device != rows.device:
                value = value.to(rows.device, rows.dtype)
            rows.index_copy_(0, slots, value.reshape(-1, *rows.shape[1:]))

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
        pos = int(self._ring.current_pos[0])
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
            importance weights (float32; ``()`` for uniform sampling); with
            ``record_episodic_return`` also ``discounted_return`` ``[B, T]`` (float32),
            each sampled step's return to its episode's end, ``default_return`` where
            not available (``episodic.py``; ALF gives the first step's, ``[B]``).
        """
        if batch_length > self._max_length:
            raise ValueError(
                f"{self._name}: batch_length {batch_length} > max_length {self._max_length}"
            )
        if self._priorities is not None:
            env_ids, first_pos, weights = self._priorities.sample(
                batch_size, batch_length, generator
            )
        else:
            env_ids, first_pos = self._ring.sample_uniform(batch_size, batch_length, generator)
            weights = ()
        positions = first_pos.unsqueeze(1) + torch.arange(batch_length)  # [B, T]
        slots = env_ids.unsqueeze(1) * self._max_length + positions % self._max_length
        if time_major:
            slots = slots.t()
        batch = nest.unflatten(self._treespec, self._take_all(slots))
        info = BatchInfo(env_ids=env_ids, positions=first_pos, importance_weights=weights)
        if self._episodic is not None:
            returns = self._episodic.read(env_ids.unsqueeze(1), positions)
            info = info._replace(discounted_return=returns)
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
        return self._ring.oldest_readable_pos()

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
        self._ring.check_readable(env_ids, positions)
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
        step_types = nest.get_field(self._buffer, step_type_field)
        env_ids = torch.as_tensor(env_ids, dtype=torch.int64).cpu()
        positions = torch.as_tensor(positions, dtype=torch.int64).cpu()
        return self._ring.steps_to_last(step_types, env_ids, positions, chunk)

    def discounted_return(self, env_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """The episodic discounted returns (``record_episodic_return``) at ``positions`` of
        envs ``env_ids`` (broadcast), float32; ``default_return`` where not available."""
        if self._episodic is None:
            raise RuntimeError(f"{self._name}: discounted_return without record_episodic_return")
        env_ids = torch.as_tensor(env_ids, dtype=torch.int64).cpu()
        positions = torch.as_tensor(positions, dtype=torch.int64).cpu()
        env_ids = env_ids.expand_as(positions)
        self._ring.check_readable(env_ids, positions)
        return self._episodic.read(env_ids, positions)

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
        if self._priorities is None:
            raise RuntimeError(f"{self._name}: update_priority without prioritized_sampling")
        self._priorities.update(env_ids, positions, priorities)

    # -- clearing and checkpoints ------------------------------------------------------

    def set_newest(self, field: str, value) -> None:
        """Set leaf ``field`` (a dotted path, e.g. ``'time_step.step_type'``) of each env's
        newest stored step to ``value`` (envs with nothing stored are left alone)."""
        storage = nest.get_field(self._buffer, field)
        ring = self._ring
        has_data = ring.current_pos > ring.clear_pos
        env_ids = ring.env_range[has_data]
        index = (ring.current_pos[has_data] - 1) % self._max_length
        storage[env_ids, index] = torch.as_tensor(value, dtype=storage.dtype)

    def clear(self, keep_last: int = 0) -> None:
        """Forget stored steps except each env's newest ``keep_last`` (positions keep growing)."""
        self._ring.forget(keep_last)
        if self._priorities is not None:
            self._priorities.rebuild()

    def spec_info(self) -> list:
        """``[[shape, dtype name], ...]`` of each leaf of one step (flattened order)."""
        return buffer_state.spec_info(self._flat_buffer)

    def state_dict(self) -> dict:
        """Contents, pointers and priorities, for checkpoints (tensors and plain values).

        Keys: ``data.<i>`` (the storage of leaf ``i``, ``[num_envs, max_length, ...]``),
        ``current_pos``, ``clear_pos``, ``spec_info``, and with prioritized sampling
        ``priority`` (``p^alpha`` per slot, ``[num_envs, max_length]`` float64) and
        ``max_priority``. The ``data.<i>`` tensors are the live storage (no copy, so a
        checkpoint of a large buffer does not need twice its memory): save or clone
        them before the buffer changes.
        """
        state = buffer_state.buffer_state(self._flat_buffer, self._ring, self._priorities)
        if self._episodic is not None:
            state.update(self._episodic.state_dict())
        return state

    def state_nbytes(self, state: dict | None = None) -> int:
        """Bytes of the tensors of ``state`` (``state_dict()`` when None)."""
        return buffer_state.state_nbytes(self.state_dict() if state is None else state)

    def load_state_dict(self, state: dict) -> None:
        """Load what ``state_dict`` wrote (shapes and dtypes must match).

        A prioritized buffer loading a state without priorities gives every stored
        step the priority ``max_priority`` (1).
        """
        buffer_state.load_buffer_state(state, self._flat_buffer, self._ring, self._priorities)
        if self._episodic is not None and not self._episodic.load_state_dict(state):
            self._episodic.rebuild()
