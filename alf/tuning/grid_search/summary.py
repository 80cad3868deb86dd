"""The grid search's summary: one row per grid point, over its repeats.

A run's objective is the last ``Metrics/AverageReturn`` scalar (the highest step; the
newest of equal steps) in its ``eval`` event files, or in its ``train`` event files when
it has no eval ones. Only runs that finished count. A row gives the point's parameters,
its finished runs out of its runs, and the mean of their objectives ± their sample
standard deviation (just the mean for one run).
"""

from __future__ import annotations

import json
import os
import statistics

from alf.tuning.grid_search import record as rec
from alf.tuning.grid_search.spec import value_literal

OBJECTIVE_TAG = "Metrics/AverageReturn"
OBJECTIVE_SOURCES = ("eval", "train")


def last_scalar(directory: str, tag: str) -> float | None:
    """The last value of scalar ``tag`` in the event files in ``directory`` (None if none)."""
    if not os.path.isdir(directory) or not any(
        name.startswith("events.") for name in os.listdir(directory)
    ):
        return None
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(directory, size_guidance={"scalars": 0})
    accumulator.Reload()
    if tag not in accumulator.Tags()["scalars"]:
        return None
    events = accumulator.Scalars(tag)
    return float(max(events, key=lambda e: (e.step, e.wall_time)).value) if events else None


def objective(run_dir: str) -> tuple[float, str] | None:
    """``(value, source)`` of the run in ``run_dir``: its objective and ``eval`` or
    ``train``, the events it came from; None when neither has the tag."""
    for source in OBJECTIVE_SOURCES:
        value = last_scalar(os.path.join(run_dir, source), OBJECTIVE_TAG)
        if value is not None:
            return value, source
    return None


def add_objectives(record: dict, root_dir: str) -> None:
    """Set ``objective`` and ``objective_source`` of each finished run of ``record``."""
    for entry in record["runs"]:
        if entry["status"] != rec.FINISHED:
            continue
        found = objective(os.path.join(root_dir, entry["name"]))
        entry["objective"], entry["objective_source"] = found or (None, None)


def format_objective(values: list[float]) -> str:
    """``mean ± sample std`` of ``values`` (``6g`` format), the value alone for one, ``-``
    for none."""
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.6g}"
    return f"{mean:.6g} ± {statistics.stdev(values):.6g}"


def rows(record: dict) -> list[dict]:
    """One row per grid point (in record order): ``parameters``, ``finished``, ``total``
    and ``values`` (the finished runs' objectives found)."""
    by_point = {}
    for entry in record["runs"]:
        key = json.dumps(list(entry["parameters"].items()))
        row = by_point.setdefault(
            key, {"parameters": entry["parameters"], "finished": 0, "total": 0, "values": []}
        )
        row["total"] += 1
        if entry["status"] == rec.FINISHED:
            row["finished"] += 1
            if entry.get("objective") is not None:
                row["values"].append(entry["objective"])
    return list(by_point.values())


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(record: dict) -> str:
    """The Markdown table of ``rows(record)``."""
    the_rows = rows(record)
    names = list(the_rows[0]["parameters"]) if the_rows else []
    header = [*names, "runs finished", f"{OBJECTIVE_TAG} (mean ± std)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in the_rows:
        cells = [_cell(value_literal(row["parameters"][name])) for name in names]
        objective_text = format_objective(row["values"])
        missing = row["finished"] - len(row["values"])
        if missing:
            objective_text += f" ({missing} finished without it)"
        cells += [f"{row['finished']}/{row['total']}", objective_text]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def counts(record: dict) -> dict:
    """How many runs have each status."""
    result = dict.fromkeys((rec.FINISHED, rec.FAILED, rec.INTERRUPTED, rec.RUNNING), 0)
    result[rec.PENDING] = 0
    for entry in record["runs"]:
        result[entry["status"]] = result.get(entry["status"], 0) + 1
    return result


def summary_text(record: dict) -> str:
    """The whole summary (``summary.md``): a header, the table, the failed runs."""
    config = record.get("search_config") or {}
    status = counts(record)
    status_text = ", ".join(f"{n} {name}" for name, n in status.items() if n)
    lines = [
        "# Grid search summary",
        "",
        f"Search config: `{record.get('search_config_file')}`"
        + (f": {config['desc']}" if config.get("desc") else ""),
        f"Conf: `{record.get('conf')}`",
        f"Runs: {len(record['runs'])} ({status_text}).",
        f"Objective: the last `{OBJECTIVE_TAG}` of each finished run's eval events (train "
        "events when it has none); mean ± sample standard deviation over the repeats.",
        "",
        table(record),
    ]
    failed = [e for e in record["runs"] if e["status"] == rec.FAILED]
    if failed:
        lines.append(f"Failed runs (the end of each one's output: <run>/{rec.STDERR_TAIL_FILE}):")
        lines.append("")
        lines += [f"- `{e['name']}`: exit status {e['exit_code']}" for e in failed]
        lines.append("")
    return "\n".join(lines)
