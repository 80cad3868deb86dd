"""Result files and tables: ``results/<name>.json`` holds a benchmark's records by key, each
with the ``command`` that made it, the ``machine`` it ran on and its ``runs``; its summary goes
between ``<!-- name:key -->`` and ``<!-- /name:key -->`` in RESULTS.md, whose prose around the
blocks is written by hand (regenerating a block changes nothing else).
"""

from __future__ import annotations

import json
import os
import re
import statistics

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_MD = os.path.join(BENCH_DIR, "RESULTS.md")
RESULTS_DIR = os.path.join(BENCH_DIR, "results")
HOUSEKEEPING = r" --(work_dir|results_json|json_path) \S+| --no_write"  # left out of commands


def fmt(value, digits: int = 1, none: str = "-", whole_from: float | None = None) -> str:
    """A table cell: ``none`` for None, thousands separators, integers (and floats from
    ``whole_from`` up) without decimals."""
    if value is None:
        return none
    if isinstance(value, int) or (whole_from is not None and abs(value) >= whole_from):
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def median(values) -> float | None:
    """The median of the values that are not None (None if there are none)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b) -> float | None:
    """``a / b``, or None when either is missing or ``b`` is 0."""
    return None if a is None or not b else a / b


def table(header: list[str], rows: list[list]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def measured(record: dict) -> str:
    """The line that opens a block: when, on what and by which command the record was made."""
    m, command = record["machine"], re.sub(HOUSEKEEPING, "", record["command"])
    alf = f", alf {m['alf']}" if m.get("alf") else ""
    return f"{m['date']}, {m['cpu']} ({m['nproc']} cores){alf}: `{command}`"


def write_block(name: str, body: str, path: str = RESULTS_MD) -> None:
    """Put ``body`` between the ``name`` markers of ``path`` (appended when absent)."""
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    with open(path) as f:
        text = f.read()
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n{block}\n"
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def read_json(path: str) -> dict:
    """A results file (empty dict when it does not exist yet)."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def write_json(path: str, data) -> None:
    """Write ``data`` as compact JSON (a line per top-level key), floats rounded to 6 decimals."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    data = _rounded(data)
    items = [f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in data.items()]
    with open(path + ".tmp", "w") as f:
        f.write("{\n" + ",\n".join(items) + "\n}\n")
    os.replace(path + ".tmp", path)


def write_record(path: str, key: str, record: dict) -> None:
    """Store ``record`` as ``key`` of the results file ``path`` (its other records kept)."""
    write_json(path, dict(read_json(path), **{key: record}))


def _rounded(data):
    if isinstance(data, float):
        return round(data, 6)
    if isinstance(data, dict):
        return {k: _rounded(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_rounded(v) for v in data]
    return data
