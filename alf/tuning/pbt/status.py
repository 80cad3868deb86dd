"""The population table of a PBT workspace (``alf.bin.pbt_launch --status``)."""

from __future__ import annotations

import json
import logging
import math
import os
import statistics

from alf.pbt.files import scalar_problem
from alf.pbt.rule import EXPLOIT, MUTATE_ONLY
from alf.pbt.workspace import Workspace
from alf.utils.run_record import PBT_HYPERPARAMETERS


def values_in_force(member_dir: str) -> dict | None:
    """The hyperparameter values member ``member_dir`` trains with now: the ``values`` of
    its ``pbt/hyperparameters.json`` (``alf.pbt.member`` rewrites it at every change, after
    publishing the values it had). None when the file is missing or not such a record (a
    damaged one with one log line)."""
    path = os.path.join(member_dir, PBT_HYPERPARAMETERS)
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f).get("values")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError) as e:
        logging.warning("PBT status: %s cannot be read (%s); showing the published values", path, e)
        return None
    if not isinstance(values, dict) or any(
        not isinstance(k, str) or scalar_problem(v) for k, v in values.items()
    ):
        logging.warning("PBT status: %s holds no valid values; showing the published ones", path)
        return None
    return values


def population_rows(workspace_dir: str, record: dict | None = None) -> list[dict]:
    """One row per member: ``member``, ``status`` (from the launch record, else ``-``),
    ``env_steps``, ``objective``, ``best``, ``exploits``, ``mutations`` and
    ``hyperparameters`` (the values in force: those of its ``pbt/hyperparameters.json``,
    else those of its newest published entry; the other numbers come from that entry, None
    where it has none yet)."""
    workspace = Workspace(workspace_dir)
    statuses = {m["policy_idx"]: m for m in (record or {}).get("members", [])}
    lineage = workspace.read_lineage()
    rows = []
    for idx in sorted(set(workspace.members()) | set(statuses)):
        entry = workspace.newest_entry(idx, verify=False)
        best = workspace.best(idx)
        launch = statuses.get(idx, {})
        kinds = [r["kind"] for r in lineage if r["member"] == idx]
        values = values_in_force(workspace.member_dir(idx))
        if values is None:
            values = dict(entry.hyperparameters) if entry else {}
        rows.append(
            {
                "member": idx,
                "status": launch.get("status", "-"),
                "restarts": launch.get("restarts", 0),
                "env_steps": entry.env_steps if entry else None,
                "objective": entry.objective if entry else None,
                "best": best.objective if best else None,
                "exploits": kinds.count(EXPLOIT),
                "mutations": kinds.count(MUTATE_ONLY),
                "hyperparameters": values,
            }
        )
    return rows


def _number(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def status_text(workspace_dir: str, record: dict | None = None) -> str:
    """The population table, then the best and median objective of the members' newest
    entries."""
    rows = population_rows(workspace_dir, record)
    if not rows:
        return f"{workspace_dir}: no member has published anything yet\n"
    header = ["member", "status", "restarts", "env_steps", "objective", "best", "lineage"]
    table = [header + ["hyperparameters"]]
    for row in rows:
        values = ", ".join(f"{k}={_number(v)}" for k, v in sorted(row["hyperparameters"].items()))
        table.append(
            [
                f"{row['member']:03d}",
                row["status"],
                str(row["restarts"]),
                _number(row["env_steps"]),
                _number(row["objective"]),
                _number(row["best"]),
                f"{row['exploits']} exploit, {row['mutations']} mutate",
                values or "-",
            ]
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths)) + "  " + line[-1]
        for line in table
    ]
    finite = [
        r["objective"]
        for r in rows
        if r["objective"] is not None and not math.isnan(r["objective"])
    ]
    if finite:
        lines.append(
            f"objective: best {max(finite):.4g}, median {statistics.median(finite):.4g} "
            f"over {len(finite)} members"
        )
    return "\n".join(line.rstrip() for line in lines) + "\n"
