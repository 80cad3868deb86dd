"""A PBT member whose acting runs in two remote samplers (local inference, one unroll acted
ahead: ``max_policy_lag`` 1) exploits a peer: the unroll it trains on next is acted with
the copied weights and observation-normalizer statistics, sent to both samplers right
after the load (the unrolls they had acted ahead with the old weights are dropped)."""

from __future__ import annotations

import os

import torch

from alf.pbt import exploit as ex
from alf.pbt.workspace import Workspace
from tests.pbt.conftest import REPO, make_trainer, member_params

SAMPLERS_CONF = os.path.join(REPO, "tests", "confs", "tiny_sac_pbt_samplers_conf.py")


def record_sent_weights(pool) -> dict:
    """``{version: weights}`` of every ``unroll`` request that carried weights."""
    sent = {}
    send = pool.send

    def recording_send(index, command, payload=None):
        if command == "unroll" and payload.get("weights") is not None:
            weights = {k: v.clone() for k, v in payload["weights"].items()}  # as sent
            sent.setdefault(payload["version"], []).append(weights)
        send(index, command, payload)

    pool.send = recording_send
    return sent


def record_versions(algorithm) -> list:
    versions = []
    train = algorithm.learner.train

    def recording_train(unroll):
        versions.append(unroll.policy_version)
        train(unroll)

    algorithm.learner.train = recording_train
    return versions


def publish_source(workspace) -> dict:
    """Member 1 (in-process envs) trained 4 iterations, its normalizer mean moved by 1 so
    its statistics are its own, published with objective 1000; returns its module state."""
    root = os.path.join(str(workspace), "001")
    params = ["SamplerConfig.num_samplers=0", "TrainerConfig.num_iterations=4"]
    source = make_trainer(root, *params, *member_params(workspace, 1, 2, 2), conf=SAMPLERS_CONF)
    source.train()
    state = ex.published_state(source.algorithm, "keep")
    means = [k for k in state["algorithm"] if k.endswith("_normalizer._stats.0.mean")]
    assert means, sorted(state["algorithm"])
    for key in means:
        state["algorithm"][key] = state["algorithm"][key] + 1.0
    Workspace(str(workspace)).publish(1, 32, 4, 1000.0, {"Adam.lr": 5e-4}, state)
    source.algorithm.load_state_dict(state["algorithm"])
    return {k: v.clone() for k, v in torch.nn.Module.state_dict(source.algorithm).items()}


def test_after_an_exploit_the_samplers_act_with_the_copied_weights_and_statistics(tmp_path):
    source = publish_source(tmp_path)
    params = ["TrainerConfig.num_iterations=5", *member_params(tmp_path, 0, 2, 1)]
    member = make_trainer(tmp_path / "000", *params, conf=SAMPLERS_CONF)
    unroller = member.algorithm.unroller
    sent = record_sent_weights(unroller.pool)
    versions = record_versions(member.algorithm)
    member.train()  # the check at 32 env steps ends iteration 4: it copies member 1

    (record,) = [r for r in Workspace(str(tmp_path)).read_lineage() if r["member"] == 0]
    assert (record["kind"], record["source"], record["env_steps"]) == ("exploit", 1, 32)
    # iterations 2-4 trained on unrolls acted one version behind; iteration 5 on one acted
    # after the exploit with the new weights (version 4), not on the one acted ahead
    assert versions == [0, 0, 1, 2, 4]
    assert len(sent[4]) == 2  # to both samplers
    for weights in sent[4]:
        assert weights.keys() == source.keys()
        assert [k for k in source if not torch.equal(weights[k], source[k])] == []
    means = [k for k in source if k.endswith("_normalizer._stats.0.mean")]
    assert means and not any(torch.equal(sent[3][0][k], source[k]) for k in means)
