"""The population table (``alf.tuning.pbt.status``): the hyperparameters shown are those in force
(``NNN/pbt/hyperparameters.json``, rewritten after an exploit or a mutation), not the last
published ones; without that file (or with a damaged one) the published values."""

from __future__ import annotations

import json
import logging
import os

import torch

from alf.pbt.workspace import Workspace
from alf.tuning.pbt.status import population_rows, status_text
from alf.utils.run_record import PBT_HYPERPARAMETERS

PUBLISHED = {"Adam.lr": 0.001, "PPOLoss.gamma": 0.98}
IN_FORCE = {"Adam.lr": 0.00131, "PPOLoss.gamma": 0.9755}


def _publish(workspace) -> Workspace:
    """Member 0 publishes ``PUBLISHED`` at 128 env steps (objective 20)."""
    ws = Workspace(str(workspace))
    ws.publish(0, 128, 4, 20.0, PUBLISHED, {"algorithm": {"w": torch.ones(2)}})
    return ws


def _write_in_force(ws: Workspace, text: str) -> None:
    path = os.path.join(ws.member_dir(0), PBT_HYPERPARAMETERS)
    with open(path, "w") as f:
        f.write(text)


def test_the_table_shows_the_values_in_force_after_an_exploit(tmp_path):
    ws = _publish(tmp_path)
    record = {"policy_idx": 0, "values": IN_FORCE, "history": []}
    _write_in_force(ws, json.dumps(record))
    (row,) = population_rows(str(tmp_path))
    assert row["hyperparameters"] == IN_FORCE
    assert (row["env_steps"], row["objective"]) == (128, 20.0)  # still the published entry's
    line = status_text(str(tmp_path)).splitlines()[1]
    assert line.split()[:5] == ["000", "-", "0", "128", "20"]
    assert line.endswith("Adam.lr=0.00131, PPOLoss.gamma=0.9755")


def test_without_a_record_of_the_values_in_force_the_published_ones_are_shown(tmp_path):
    _publish(tmp_path)
    (row,) = population_rows(str(tmp_path))
    assert row["hyperparameters"] == PUBLISHED


def test_a_damaged_record_falls_back_to_the_published_values_with_a_log_line(tmp_path, caplog):
    ws = _publish(tmp_path)
    for text in ('{"values": {"Adam.lr": ', '{"values": {"Adam.lr": [1]}}', "[1, 2]"):
        _write_in_force(ws, text)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            (row,) = population_rows(str(tmp_path))
        assert row["hyperparameters"] == PUBLISHED, text
        (message,) = [r.getMessage() for r in caplog.records]
        assert PBT_HYPERPARAMETERS in message, message
