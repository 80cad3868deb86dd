"""Implementation of ``alf.summary``: a default ``SummaryWriter`` plus a global step."""

from __future__ import annotations

import contextlib

import torch

_state = {"writer": None, "enabled": True, "record": False, "step": 0, "pending": None}
_scopes = []  # the names of the open ``scope`` blocks, outermost first


@contextlib.contextmanager
def scope(name: str):
    """Prefix the names of the summaries (and renderings) written inside the block
    with ``name + '/'``; blocks nest (``scope('a')`` in ``scope('b')``: ``'b/a/'``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"alf.summary.scope needs a non-empty string name, got {name!r}")
    _scopes.append(name)
    try:
        yield
    finally:
        _scopes.pop()


def scope_name() -> str:
    """The prefix of the open ``scope`` blocks (``'a/b/'``; ``''`` outside any)."""
    return "".join(s + "/" for s in _scopes)


def _scoped(name: str) -> str:
    return scope_name() + name if _scopes else name


def set_default_writer(writer) -> None:
    """Use ``writer`` (a ``torch.utils.tensorboard.SummaryWriter`` or None) for summaries."""
    _state["writer"] = writer


def enable_summary(flag: bool = True) -> None:
    """Globally enable or disable summaries."""
    _state["enabled"] = bool(flag)


@contextlib.contextmanager
def record_if(condition: bool):
    """Record summaries inside the block only if ``condition`` holds."""
    previous = _state["record"]
    _state["record"] = bool(condition)
    try:
        yield
    finally:
        _state["record"] = previous


def should_record_summaries() -> bool:
    """Whether a summary written now would be recorded."""
    return _state["record"] and _state["enabled"] and _state["writer"] is not None


def get_global_counter() -> int:
    """The global step used for summaries (the trainer's iteration count)."""
    return _state["step"]


def set_global_counter(step: int) -> None:
    _state["step"] = int(step)


def _to_float(value) -> float:
    if isinstance(value, torch.Tensor):
        return float(value.detach().float().mean())
    return float(value)


def scalar(name: str, value, step: int | None = None) -> None:
    """Write a scalar summary (a tensor is averaged) if recording.

    Inside ``average_scalars()`` the value is accumulated instead, and the mean
    of all values given for ``(name, step)`` is written when the block ends.
    """
    if not should_record_summaries():
        return
    name = _scoped(name)
    step = _state["step"] if step is None else step
    pending = _state["pending"]
    if pending is None:
        _state["writer"].add_scalar(name, _to_float(value), step)
        return
    if isinstance(value, torch.Tensor):
        value = value.detach().float().mean()
    else:
        value = float(value)
    entry = pending.get((name, step))
    if entry is None:
        pending[(name, step)] = [value, 1]
    else:
        entry[0] = entry[0] + value
        entry[1] += 1


@contextlib.contextmanager
def average_scalars():
    """Average the scalars written in the block per name and step; write them at its end.

    A training iteration makes many updates (PPO: epochs x minibatches), each
    summarizing its loss terms. Inside this block those calls only add to a
    running sum (no host sync, no protobuf), and one mean per name is written
    when the block exits normally, so summary iterations cost little more than
    others and the curve shows the iteration's average rather than its last
    minibatch.
    """
    previous = _state["pending"]
    _state["pending"] = {}
    try:
        yield
    except BaseException:
        _state["pending"] = previous
        raise
    pending, _state["pending"] = _state["pending"], previous
    _write_pending(pending)


def _write_pending(pending: dict) -> None:
    if not pending or _state["writer"] is None:
        return
    keys = list(pending)
    sums = [pending[k][0] for k in keys]
    tensor_pos = [i for i, v in enumerate(sums) if isinstance(v, torch.Tensor)]
    if tensor_pos:  # one device-to-host copy for all of them
        device = sums[tensor_pos[0]].device
        values = torch.stack([sums[i].to(device) for i in tensor_pos]).tolist()
        for i, v in zip(tensor_pos, values):
            sums[i] = v
    for (name, step), total in zip(keys, sums):
        _state["writer"].add_scalar(name, total / pending[(name, step)][1], step)


def histogram(name: str, values, step: int | None = None) -> None:
    """Write a histogram summary if recording."""
    if should_record_summaries():
        if isinstance(values, torch.Tensor):
            values = values.detach().float().cpu()
        step = _state["step"] if step is None else step
        _state["writer"].add_histogram(_scoped(name), values, step)


def text(name: str, value: str, step: int | None = None) -> None:
    """Write a text summary (recorded whenever a writer is set)."""
    if _state["writer"] is not None and _state["enabled"]:
        _state["writer"].add_text(_scoped(name), value, _state["step"] if step is None else step)


def flush() -> None:
    if _state["writer"] is not None:
        _state["writer"].flush()
