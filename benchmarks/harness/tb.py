"""Reading alf's tensorboard summaries back."""

from __future__ import annotations


def scalars(event_dir: str, tag: str) -> list[tuple[int, float, float]]:
    """``[(step, wall_time, value)]`` of the scalar ``tag`` in ``event_dir`` (empty if absent)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(event_dir, size_guidance={"scalars": 0})
    events.Reload()
    if tag not in events.Tags()["scalars"]:
        return []
    return [(e.step, e.wall_time, e.value) for e in events.Scalars(tag)]
