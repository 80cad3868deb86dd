"""Off-policy PBT members (``PBTConfig.replay_buffer_on_exploit``), in this process, on the
tiny SAC PBT conf (two 5-step-episode envs, 8 env steps an iteration, a check every 32).

Member 1 trains 4 iterations and is published again with objective 1000, so member 0
copies it at its check (32 env steps, the end of its 4th iteration). After the exploit,
member 0 holds member 1's weights bit for bit and, by content hash
(``alf.pbt.exploit.buffer_digest``), the replay buffer the policy asks for: its own
(that of a twin run without a peer), an empty one (training then waits for the initial
collection again), or member 1's (each env's newest step a time-limit LAST). The lineage
records the policy and the steps each env holds.
"""

from __future__ import annotations

import os

import pytest
import torch

import alf
from alf.data_structures import StepType
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.pbt import exploit as ex
from alf.pbt.config import PBTConfig
from alf.pbt.workspace import Workspace
from alf.utils import common
from tests.pbt.conftest import REPO, make_trainer, member_params, tensors

SAC_PBT_CONF = os.path.join(REPO, "tests", "confs", "tiny_sac_pbt_conf.py")
SOURCE_VALUES = {"Adam.lr": 5e-4}


def sac_member(workspace, idx: int, policy: str, *extra):
    """Member ``idx`` (seed ``idx + 1``) of the tiny SAC PBT conf in ``workspace``."""
    params = [f"PBTConfig.replay_buffer_on_exploit={policy!r}", *extra]
    params += member_params(workspace, idx, 2, seed=idx + 1)
    return make_trainer(os.path.join(str(workspace), f"{idx:03d}"), *params, conf=SAC_PBT_CONF)


def publish_source(workspace, policy: str) -> dict:
    """Member 1 trained 4 iterations (32 env steps), published again with objective 1000;
    returns what it published."""
    source = sac_member(workspace, 1, policy, "TrainerConfig.num_iterations=4")
    source.train()
    state = ex.published_state(source.algorithm, policy)
    Workspace(str(workspace)).publish(1, 32, 4, 1000.0, SOURCE_VALUES, state)
    return {k: (v if k == "replay_buffer" else tensors(v)) for k, v in state.items()}


def member_lineage(workspace, idx: int = 0) -> list[dict]:
    return [r for r in Workspace(str(workspace)).read_lineage() if r["member"] == idx]


def own_buffer_digest(tmp_path) -> str:
    """The digest of member 0's buffer after 4 iterations when it has no peer to copy."""
    alone = sac_member(tmp_path / "alone", 0, "keep", "TrainerConfig.num_iterations=4")
    alone.train()
    (record,) = member_lineage(tmp_path / "alone")
    assert record["kind"] == "continue"
    return ex.buffer_digest(alone.algorithm.replay_buffer.state_dict())


def expected_copy_digest(buffer: ReplayBuffer, source_state: dict) -> str:
    """The source's buffer with each env's newest step a time-limit LAST."""
    expected = ReplayBuffer(
        buffer.data_spec, num_environments=buffer.num_environments, max_length=buffer.max_length
    )
    expected.load_state_dict(source_state)
    expected.set_newest("time_step.step_type", StepType.LAST)
    return ex.buffer_digest(expected.state_dict())


@pytest.mark.parametrize("policy", ["keep", "reset", "copy"])
def test_an_exploiting_sac_member_takes_the_buffer_its_policy_names(tmp_path, policy):
    ws = tmp_path / "ws"
    source = publish_source(ws, policy)
    member = sac_member(ws, 0, policy, "TrainerConfig.num_iterations=4")
    member.train()  # its check at 32 env steps ends the last iteration: it copies member 1

    (record,) = member_lineage(ws)
    assert (record["kind"], record["source"], record["env_steps"]) == ("exploit", 1, 32)
    after = tensors(member.algorithm.state_dict())
    assert all(torch.equal(after[k], source["algorithm"][k]) for k in source["algorithm"])
    buffer = member.algorithm.replay_buffer
    digest = ex.buffer_digest(buffer.state_dict())
    steps = [0, 0] if policy == "reset" else [16, 16]
    assert record["replay_buffer"] == {"policy": policy, "steps": steps}
    assert buffer.current_size().tolist() == steps
    learner = member.algorithm.learner
    assert learner.initial_collect_pending() == (policy == "reset")
    own = own_buffer_digest(tmp_path)
    if policy == "keep":
        assert digest == own
    elif policy == "reset":
        assert digest != own and digest == ex.buffer_digest(_emptied(buffer.state_dict()))
    else:
        assert digest == expected_copy_digest(buffer, source["replay_buffer"]) != own
    # the published checkpoints hold a buffer only when members may copy one
    workspace = Workspace(str(ws))
    published = workspace.load_checkpoint(workspace.newest_entry(0))
    assert ("replay_buffer" in published) == (policy == "copy")

    # it trains on after the exploit (on the kept, emptied or copied buffer)
    resumed = sac_member(ws, 0, policy, "TrainerConfig.num_iterations=8")
    resumed.train()
    assert resumed.env_steps == 64
    # at 64 env steps it copies member 1 again: 16 more steps of its own, none, the source's
    again = member_lineage(ws)[-1]
    assert (again["kind"], again["env_steps"]) == ("exploit", 64)
    assert again["replay_buffer"]["steps"] == {"keep": [32, 32], "reset": [0, 0]}.get(
        policy, [16, 16]
    )


def _emptied(state: dict) -> dict:
    """A buffer state with nothing readable (every env cleared at its current position)."""
    return dict(state, clear_pos=state["current_pos"].clone())


def test_copying_a_source_that_published_no_buffer_changes_nothing(tmp_path):
    publish_source(tmp_path, "keep")  # a source that does not publish its buffer
    member = sac_member(tmp_path, 0, "copy", "TrainerConfig.num_iterations=4")
    member.train()
    (record,) = member_lineage(tmp_path)
    assert record["kind"] == "continue" and record["changes"] == {}
    assert record["message"] == (
        "member 0: not copying member 1: its checkpoint holds no replay buffer "
        "(replay_buffer_on_exploit='copy')"
    )
    assert member.algorithm.replay_buffer.current_size().tolist() == [16, 16]


def test_a_bad_replay_buffer_policy_is_one_error_line(tmp_path):
    alf.reset_configs()
    common.parse_conf_file(
        SAC_PBT_CONF,
        [
            f"PBTConfig.workspace={str(tmp_path)!r}",
            "PBTConfig.replay_buffer_on_exploit='share'",
        ],
    )
    with pytest.raises(ValueError) as e:
        PBTConfig()
    message = str(e.value)
    assert "\n" not in message
    assert message == (
        "PBTConfig.replay_buffer_on_exploit must be one of 'keep', 'reset', 'copy', got 'share'"
    )
