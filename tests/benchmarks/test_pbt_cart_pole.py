"""The PBT CartPole benchmark's tables: best and median of the population at each check, the
bad member and the single runs beside them, the lineage with its values old -> new, the
check times; and its RESULTS.md block regenerates exactly from the committed results."""

from __future__ import annotations

import os

from benchmarks import pbt_cart_pole
from benchmarks.harness import report

RUNS = [
    {
        "job": "population",
        "seed": 1,
        "wall_s": 100.4,
        "curves": {
            "0": [[5120, 30.0, 1e-3], [10240, 90.0, 1e-3]],
            "1": [[5120, 20.0, 1e-3], [10240, 70.0, 1e-3]],
            "2": [[5120, 40.0, 1e-3], [10240, 60.0, 1e-3]],
            "3": [[5120, 10.0, 1e-6], [10240, 12.0, 1e-6]],
        },
        "lineage": [
            {
                "member": 3,
                "env_steps": 10240,
                "kind": "exploit",
                "source": 0,
                "objective": 12.0,
                "source_objective": 90.0,
                "changes": {"Adam.lr": [1e-6, 0.0012], "PPOLoss.gamma": [0.98, 0.985]},
            }
        ],
        "checks": [[0, 5120, 0.02], [1, 5120, 0.03], [2, 5120, 0.05], [3, 5120, 0.04]],
    },
    {
        "job": "single_default",
        "seed": 1,
        "wall_s": 30.0,
        "curves": {"0": [[5120, 30.0, 1e-3], [10240, 80.0, 1e-3]]},
        "checks": [[0, 5120, 0.01], [0, 10240, 0.03]],
    },
]


def test_tables():
    text = pbt_cart_pole.markdown(RUNS)
    assert "| 5,120 | 40.0 | 25.0 | 10.0 | 1e-06 | 30.0 | - |" in text
    assert "| 10,240 | 90.0 | 65.0 | 12.0 | 1e-06 | 80.0 | - |" in text
    assert (
        "| 10,240 | 3 | exploit | 0 | 12.0 | 90.0 | lr 1e-06 → 0.0012, gamma 0.98 → 0.985 |" in text
    )
    assert "| population | 4 | 35 | 50 | 100 |" in text
    assert "| single_default | 2 | 20 | 30 | 30 |" in text


def test_the_results_block_regenerates_from_json():
    path = os.path.join(report.RESULTS_DIR, "pbt_cart_pole.json")
    runs = report.read_json(path)["runs"]
    with open(report.RESULTS_MD) as f:
        text = f.read()
    block = text.split("<!-- pbt_cart_pole -->\n")[1].split("\n<!-- /pbt_cart_pole -->")[0]
    assert pbt_cart_pole.markdown(runs) == block
