r"""``EpisodicReturns``: the discounted return from each stored step to its episode's end.

ALF's ``ReplayBuffer(record_episodic_return=True)`` (``BatchInfo.discounted_return``),
for lower-bounding value targets (``LowerBoundedTDLoss``). Per env row, the steps are
cut into *windows* at the steps that are FIRST or have discount 0: a window runs from
such a step ``s`` to the next step ``n`` (``n > s``, not FIRST) with discount 0, with no
FIRST and no other discount-0 step in between. When ``n`` is added, every step ``j`` of
``[s, n)`` still in the buffer gets

.. math::

    G_j = \tilde r_{j+1} + \gamma\, d_{j+1}\, G_{j+1}, \qquad G_n = 0,

i.e. :math:`G_j = \sum_{k=j}^{n-1} \gamma^{k-j} (\prod_{i=j+1}^{k} d_i)\,\tilde r_{k+1}`
with :math:`\tilde r` the reward clipped to ``reward_clip`` and :math:`d` the step's
``TimeStep.discount`` (1 inside a window): the TD(1) target of step ``j`` with nothing
to bootstrap from. Every other step holds ``default_return``, which marks the return as
unavailable:

- steps of an episode still running (no discount-0 step after them yet);
- steps of an episode that ended by a time limit (a LAST with discount 1: its value is
  not 0, so the return is not known), after its last discount-0 step;
- the discount-0 step ``n`` itself, e.g. a terminal LAST (as in ALF: nothing is
  trained from a LAST step). A discount-0 step that is not LAST (a life lost under
  ``AtariTerminalOnLifeLossWrapper``) starts the next window and gets its return when
  that window closes.

Ring overwrite: a window whose beginning was overwritten is computed from the oldest
step still stored (returns only look forward, so the values are unchanged); a slot
being written gets ``default_return`` again.

Two details differ from ALF's code, for correctness: ALF multiplies
:math:`\tilde r_{s+1}` by :math:`d_s`, which drops the first reward after a lost life
(a window starting at a discount-0 step); and a FIRST step with discount 0 does not
close a window across the episode boundary here. The returns are computed in float64
by a vectorized reverse scan over all closed windows at once (chunked so that the
discount products cannot underflow), and stored as float32.
"""

from __future__ import annotations

import math

import torch

import alf.nest as nest
from alf.data_structures import StepType
from alf.experience_replayers.ring import RingPositions

#: a discount product within one chunk of the scan stays above exp(-_MAX_LOG_DECAY)
_MAX_LOG_DECAY = 600.0


class EpisodicReturns:
    """Per-slot discounted returns of a ``ReplayBuffer`` ring (see the module doc).

    Args:
        ring: the buffer's positions (read, never changed here).
        storage: the buffer's storage nest ``[num_envs, max_length, ...]`` (read); its
            ``time_step.step_type``, ``.discount`` and ``.reward`` (or top-level
            ``step_type``, ... as in ALF's experience) are used, the reward scalar.
        gamma: the discount :math:`\\gamma` in ``(0, 1]``.
        reward_clip: None or ``(min, max)`` applied to the rewards.
        default_return: the value of steps whose return is not available.
    """

    def __init__(
        self,
        ring: RingPositions,
        storage,
        gamma: float,
        reward_clip: tuple[float, float] | None,
        default_return: float,
    ):
        if not 0.0 < float(gamma) <= 1.0:
            raise ValueError(f"{ring.name}: gamma must be in (0, 1], got {gamma}")
        if reward_clip is not None:
            if len(reward_clip) != 2 or not float(reward_clip[0]) <= float(reward_clip[1]):
                raise ValueError(f"{ring.name}: reward_clip must be (min, max), got {reward_clip}")
            reward_clip = (float(reward_clip[0]), float(reward_clip[1]))
        self._ring = ring
        self._fields = _episode_fields(storage, ring.name)
        self._step_type, self._discount, self._reward = (
            nest.get_field(storage, f) for f in self._fields
        )
        self.gamma = float(gamma)
        self.reward_clip = reward_clip
        self.default_return = float(default_return)
        self.returns = torch.full(
            (ring.num_envs, ring.max_length), self.default_return, dtype=torch.float32
        )
        # Per env, the newest position that is FIRST or has discount 0 (where the next
        # window starts); -1 when there is none yet.
        self.window_start = torch.full((ring.num_envs,), -1, dtype=torch.int64)

    # -- adding ------------------------------------------------------------------------

    def on_add(self, steps, env_ids, positions, as_rows) -> None:
        """Update after ``steps`` were written (``ring.current_pos`` already advanced).

        Args:
            steps: the nest just added.
            env_ids: ``[B]`` envs (distinct).
            positions: ``[T, B]`` positions just written (consecutive per env).
            as_rows: makes a leaf of ``steps`` ``[T, B]``.
        """
        step_type, discount = (as_rows(nest.get_field(steps, f)).cpu() for f in self._fields[:2])
        ring = self._ring
        self.returns.view(-1)[ring.slots(env_ids.expand_as(positions), positions).reshape(-1)] = (
            self.default_return
        )
        starts = self.window_start[env_ids].unsqueeze(0)  # [1, B]
        self._close_windows(env_ids, positions, step_type, discount, starts)

    def _close_windows(self, env_ids, positions, step_type, discount, starts):
        """Find the windows closed by the discount-0 steps among ``positions`` ``[T, B]``
        (``-1`` where a column has no step), compute them, and advance ``window_start``."""
        valid = positions >= 0
        is_first = step_type == StepType.FIRST
        zero = discount == 0
        marker = torch.where(valid & (is_first | zero), positions, -1)
        through = torch.maximum(torch.cummax(marker, 0).values, starts)  # newest mark <= pos
        before = torch.cat([starts, through[:-1]])  # newest mark <= pos - 1
        self.window_start[env_ids] = through[-1]
        ends = valid & zero & ~is_first
        if not bool(ends.any()):
            return
        end_pos = positions[ends]
        end_env = env_ids.expand_as(positions)[ends]
        oldest = self._ring.oldest_readable_pos()[end_env]
        start_pos = torch.maximum(before[ends], oldest)
        self._compute(end_env, start_pos, end_pos)

    def _compute(self, env, start, end) -> None:
        """Write :math:`G_j` for ``j`` in ``[start, end)`` of each window ``[W]``."""
        length = int((end - start).max()) + 1
        offsets = torch.arange(length) - (length - 1)
        pos = end.unsqueeze(1) + offsets  # [W, N], right-aligned: column N-1 is the end
        inside = pos >= start.unsqueeze(1)
        slots = self._ring.slots(env.unsqueeze(1), torch.where(inside, pos, end.unsqueeze(1)))
        rewards = self._reward.reshape(-1)[slots].to(torch.float64)
        if self.reward_clip is not None:
            rewards = rewards.clamp(*self.reward_clip)
        # Column c holds position p_c; R_c = r(p_c + 1) and g_c = gamma * d(p_c + 1) for
        # p_c < end (R = 0 at the end). d(end) = 0 never multiplies anything (G_end = 0),
        # so g there is 1, as outside the window: the scan's products stay > 0.
        ones = torch.ones_like(rewards[:, :1])
        step_reward = torch.where(inside, torch.cat([rewards[:, 1:], 0 * ones], 1), 0.0)
        next_discount = self._discount.reshape(-1)[slots[:, 1:]].to(torch.float64)
        factor = torch.cat([self.gamma * next_discount, ones], 1)
        if length >= 2:
            factor[:, -2] = 1.0
        factor = torch.where(inside, factor, 1.0)
        returns = discounted_suffix_sums(step_reward, factor)
        write = inside.clone()
        write[:, -1] = False
        self.returns.view(-1)[slots[write]] = returns[write].to(torch.float32)

    # -- reading, rebuilding, checkpoints ----------------------------------------------------

    def read(self, env_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """The returns at ``positions`` of envs ``env_ids`` (broadcast), float32."""
        return self.returns.view(-1)[self._ring.slots(env_ids, positions)]

    def rebuild(self) -> None:
        """Recompute every stored step's return and ``window_start`` from the stored
        steps (the values an incremental computation gives for the steps still stored)."""
        ring = self._ring
        self.returns.fill_(self.default_return)
        self.window_start.fill_(-1)
        oldest = ring.oldest_readable_pos()
        positions = oldest.unsqueeze(0) + torch.arange(ring.max_length).unsqueeze(1)  # [L, E]
        stored = positions < ring.current_pos.unsqueeze(0)
        env_ids = ring.env_range
        slots = ring.slots(env_ids.expand_as(positions), positions)
        positions = torch.where(stored, positions, -1)
        self._close_windows(
            env_ids,
            positions,
            self._step_type.reshape(-1)[slots],
            self._discount.reshape(-1)[slots],
            torch.full((1, ring.num_envs), -1, dtype=torch.int64),
        )
        # Envs with no stored step keep -1; others got their newest mark from the scan.

    def state_dict(self) -> dict:
        return {
            "episodic_return": self.returns.clone(),
            "episodic_window_start": self.window_start.clone(),
        }

    def load_state_dict(self, state: dict) -> bool:
        """Load what ``state_dict`` wrote; False if ``state`` has no returns."""
        if "episodic_return" not in state:
            return False
        returns = torch.as_tensor(state["episodic_return"])
        if returns.shape != self.returns.shape:
            raise ValueError(
                f"{self._ring.name}: checkpointed episodic returns {list(returns.shape)} do "
                f"not match this buffer {list(self.returns.shape)}"
            )
        self.returns.copy_(returns)
        self.window_start.copy_(torch.as_tensor(state["episodic_window_start"]))
        return True


def _episode_fields(buffer, name: str) -> tuple[str, str, str]:
    """The paths of the step type, discount and reward leaves in the stored nest
    (``time_step.*`` of an ``Experience``, else top-level as in ALF's experience)."""
    for prefix in ("time_step.", ""):
        paths = tuple(prefix + f for f in ("step_type", "discount", "reward"))
        try:
            leaves = [nest.get_field(buffer, p) for p in paths]
        except (KeyError, AttributeError, IndexError, ValueError):
            continue
        if all(torch.is_tensor(x) for x in leaves):
            if leaves[2].shape != leaves[0].shape:
                raise ValueError(
                    f"{name}: record_episodic_return needs a scalar reward, got "
                    f"{list(leaves[2].shape[2:])}"
                )
            return paths
    raise ValueError(f"{name}: record_episodic_return needs step_type, discount and reward")


def discounted_suffix_sums(rewards: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    r"""``G [W, N]`` with :math:`G_j = R_j + g_j G_{j+1}` and :math:`G_N = 0`, per row.

    ``rewards`` :math:`R` and ``factors`` :math:`g` are ``[W, N]`` float64 with
    :math:`0 < g \le 1`. Vectorized: within a chunk,
    :math:`G_j = (\sum_{k \ge j} D_k R_k + D_{end} G_{next}) / D_j` with
    :math:`D_k = \prod_{i<k} g_i` from the chunk's start; the chunks (as long as
    :math:`D` stays above :math:`e^{-600}`, one chunk for :math:`\gamma = 0.99` up to
    59,000 steps) are chained from the last. The sum runs from the small terms to the
    large ones, so the error is relative to the return, not to :math:`1 / D_j`.
    """
    num_rows, length = rewards.shape
    if length == 0:
        return rewards.clone()
    smallest = float(factors.min())
    if smallest <= 0.0:
        raise ValueError(f"discount factors must be > 0, got {smallest}")
    chunk = length if smallest >= 1.0 else max(1, int(_MAX_LOG_DECAY / -math.log(smallest)))
    out = torch.empty_like(rewards)
    carry = torch.zeros(num_rows, dtype=rewards.dtype)
    ones = torch.ones(num_rows, 1, dtype=rewards.dtype)
    stop = length
    while stop > 0:
        begin = max(0, stop - chunk)
        g = factors[:, begin:stop]
        prod = torch.cumprod(torch.cat([ones, g[:, :-1]], 1), 1)  # D_k
        through = prod[:, -1] * g[:, -1]  # D over the whole chunk
        weighted = (prod * rewards[:, begin:stop]).flip(1).cumsum(1).flip(1)
        block = (weighted + (through * carry).unsqueeze(1)) / prod
        out[:, begin:stop] = block
        carry = block[:, 0]
        stop = begin
    return out
