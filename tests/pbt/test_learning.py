"""PBT learns (slow: about a minute on 2 cores; ``pytest -m slow``): a population of 4 PPO
CartPole members (``alf/examples/pbt_ppo_cart_pole_conf.py``, 50,000 env steps each) where
member 3 starts at lr 1e-6. The bad member is replaced at its first decision, and the
population's best reaches the return of a single run of the conf in the same env steps.
The fast twin is ``test_member.py::test_the_bad_member_of_a_short_cartpole_population_...``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from alf.pbt.workspace import Workspace
from tests.bin.test_train_play import finish, start
from tests.pbt.conftest import REPO, make_trainer

CONF = os.path.join(REPO, "alf", "examples", "pbt_ppo_cart_pole_conf.py")
PARAMS = [
    "TrainerConfig.num_env_steps=50000",
    "TrainerConfig.random_seed=1",
    "TrainerConfig.evaluate=False",
]
PBT_PARAMS = [
    "PBTConfig.interval_steps=5000",
    "PBTConfig.start_after=5000",
    "PBTConfig.initial_delay=10000",
]


@pytest.mark.slow
def test_a_population_replaces_its_bad_member_and_matches_a_single_run(tmp_path):
    single = make_trainer(tmp_path / "single", *PARAMS, conf=CONF)
    single.train()
    single_return = float(np.mean(single.algorithm.metrics.average_return))

    workspace = str(tmp_path / "ws")
    args = ["--conf", CONF, "--workspace", workspace, "--num_policies", 4, "--nostore_snapshot"]
    for param in PARAMS + PBT_PARAMS:
        args += ["--conf_param", param]
    args += ["--member_conf_param", '3:PBTConfig.initial_values={"Adam.lr": 1e-6}']
    code, _, stderr = finish(start("alf.bin.pbt_launch", *args))
    assert code == 0, stderr[-3000:]

    ws = Workspace(workspace)
    first = next(r for r in ws.read_lineage() if r["member"] == 3 and r["kind"] != "continue")
    assert first["kind"] == "exploit" and first["env_steps"] == 10240
    assert first["changes"]["Adam.lr"][0] == 1e-6 and first["changes"]["Adam.lr"][1] > 1e-4
    entries = [ws.newest_entry(i, verify=False) for i in range(4)]
    assert [e.env_steps for e in entries] == [50176] * 4
    best = max(e.objective for e in entries)
    assert best >= 0.95 * single_return, (best, single_return)
    assert best >= 400
