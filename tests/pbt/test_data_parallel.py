"""PBT members on two data-parallel learner ranks (``alf.bin.train --num_processes 2``).

Member 1 (the tiny SAC PBT conf, trained in this process) is published with objective
1000; member 0 then trains on two ranks (one env each) and copies it at its check (32 env
steps summed over the ranks, the end of its 4th iteration), emptying its replay buffers
(``replay_buffer_on_exploit='reset'``). Rank 0 decides and writes the lineage; both
ranks load the copied state and log the sha256 of the algorithm state they hold (the
member checks that they agree, else it stops with an error); the checkpoint rank 0
writes holds member 1's weights.
"""

from __future__ import annotations

import re

import torch

from alf.pbt.workspace import Workspace
from tests.bin.test_train_play import load_ckpt, train
from tests.pbt.test_off_policy import SAC_PBT_CONF, publish_source

RANK_LINE = re.compile(
    r"PBT member 0: after the exploit: learner rank (\d) holds the algorithm state sha256 "
    r"([0-9a-f]{64}) \(replay buffer steps \[(\d+)\]\)"
)


def rank_digests(output: str) -> dict[int, tuple[str, int]]:
    """``{rank: (sha256, stored steps of its env)}`` of the lines the ranks log."""
    return {int(r): (d, int(n)) for r, d, n in RANK_LINE.findall(output)}


def test_a_member_on_two_ranks_copies_a_peer_and_its_ranks_hold_the_same_state(tmp_path):
    source = publish_source(tmp_path, "reset")
    code, stdout, stderr = train(
        tmp_path / "000",
        "--num_processes", 2,
        "--nostore_snapshot",
        "--conf_param", f"PBTConfig.workspace={str(tmp_path)!r}",
        "--conf_param", "PBTConfig.policy_idx=0",
        "--conf_param", "PBTConfig.num_policies=2",
        "--conf_param", "PBTConfig.replay_buffer_on_exploit='reset'",
        "--conf_param", "TrainerConfig.num_iterations=4",
        conf=SAC_PBT_CONF,
    )  # fmt: skip
    assert code == 0, stderr[-3000:]
    records = [r for r in Workspace(str(tmp_path)).read_lineage() if r["member"] == 0]
    assert [(r["env_steps"], r["kind"], r["source"]) for r in records] == [(32, "exploit", 1)]
    assert records[0]["replay_buffer"] == {"policy": "reset", "steps": [0]}  # rank 0's env
    digests = rank_digests(stdout + stderr)
    assert sorted(digests) == [0, 1], stderr[-3000:]
    assert digests[0] == digests[1] and digests[0][1] == 0
    state = load_ckpt(tmp_path / "000", 4)["algorithm"]
    copied = source["algorithm"]
    assert all(torch.equal(state[k], copied[k]) for k in copied)
