"""Implementation of ``alf.summary``: a default ``SummaryWriter`` plus a global step."""

from __future__ import annotations

import contextlib

import torch

_state = {"writer": None, "enabled": True, "record": False, "step": 0}


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
    """Write a scalar summary (a tensor is averaged) if recording."""
    if should_record_summaries():
        _state["writer"].add_scalar(
            name, _to_float(value), _state["step"] if step is None else step
        )


def histogram(name: str, values, step: int | None = None) -> None:
    """Write a histogram summary if recording."""
    if should_record_summaries():
        if isinstance(values, torch.Tensor):
            values = values.detach().float().cpu()
        _state["writer"].add_histogram(name, values, _state["step"] if step is None else step)


def text(name: str, value: str, step: int | None = None) -> None:
    """Write a text summary (recorded whenever a writer is set)."""
    if _state["writer"] is not None and _state["enabled"]:
        _state["writer"].add_text(name, value, _state["step"] if step is None else step)


def flush() -> None:
    if _state["writer"] is not None:
        _state["writer"].flush()
