"""The same run on any layout: one process, remote samplers and data-parallel ranks.

A PPO CartPole run (``tests/confs/tiny_ppo_conf.py`` on 8 envs, pieces of 4 steps in
minibatches of 16, 2 epochs) and the same with an LSTM policy
(``alf/examples/ppo_rnn_memory_conf.py``, pieces of 5 steps) are trained 8 iterations in
one process; ``alf.bin.train --verify_record`` then re-runs them with 2 local-inference
samplers, 2 server-inference samplers, 2 Ray samplers, on 2 learner ranks
(``--num_processes 2``) and on 2 ranks each with 2 server-inference samplers, keeping each
re-run's root_dir:

- with samplers, every iteration's unroll hash (time steps, actions, the policy's outputs
  and states) and the final parameters and optimizer state are bit-identical;
- on 2 ranks, the trajectories (time steps and actions) of all 8 iterations are
  bit-identical, and so is the first unroll; after it the ranks sum their gradients in
  another order than one process, so the parameters differ in the last bits: after 8
  iterations by at most ``RANK_TOLERANCE`` (measured: 6e-8 for the MLP, 1.2e-7 for the LSTM).

Each actor steps at least 4 envs (a batch of 1 to 3 rows takes other matrix kernels,
``docs/design.md`` section 5).
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from tests.bin.test_train_play import REPO, load_ckpt, run, train

#: the largest parameter difference allowed after 8 iterations on 2 ranks
RANK_TOLERANCE = 1e-5
ITERATIONS = 8
COMMON = [
    "TrainerConfig.evaluate=False",
    f"TrainerConfig.num_iterations={ITERATIONS}",
    "TrainerConfig.num_checkpoints=1",
    "TrainerConfig.random_seed=3",
    "create_environment.num_parallel_environments=8",
    "TrainerConfig.num_updates_per_train_iter=2",
]
POLICIES = {
    "mlp": (
        os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py"),
        ["TrainerConfig.mini_batch_length=4", "TrainerConfig.mini_batch_size=16"],
    ),
    "lstm": (
        os.path.join(REPO, "alf", "examples", "ppo_rnn_memory_conf.py"),
        [
            "TrainerConfig.trajectory_mini_batches=False",
            "TrainerConfig.unroll_length=10",
            "TrainerConfig.mini_batch_length=5",
            "TrainerConfig.mini_batch_size=8",
            "TrainerConfig.num_env_steps=0",
        ],
    ),
}
SAMPLERS = "SamplerConfig.num_samplers=2 SamplerConfig.batch_timeout=30.0"
LAYOUTS = {
    "local": [*SAMPLERS.split(), "SamplerConfig.inference='local'"],
    "server": [*SAMPLERS.split(), "SamplerConfig.inference='server'"],
    "ray": [*SAMPLERS.split(), "SamplerConfig.backend='ray'", "SamplerConfig.inference='server'"],
    "ranks": [],
    # each rank's inference server steps its 4 envs, in 2 samplers of 2, as one batch
    "ranks_server": [*SAMPLERS.split(), "SamplerConfig.inference='server'"],
}
#: (policy, layout) run in CI; the others are slow
FAST = {
    ("mlp", "local"),
    ("mlp", "server"),
    ("mlp", "ranks"),
    ("mlp", "ranks_server"),
    ("lstm", "server"),
    ("lstm", "ranks"),
}


def _params(values):
    return [arg for value in values for arg in ("--conf_param", value)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    runs = {}
    for name, (conf, extra) in POLICIES.items():
        root = tmp_path_factory.mktemp("layouts") / name
        code, _, stderr = train(root, "--nostore_snapshot", *_params(COMMON + extra), conf=conf)
        assert code == 0, stderr[-3000:]
        runs[name] = root
    return runs


def _hashes(root):
    with open(os.path.join(root, "train", "unroll_hashes.jsonl")) as f:
        return [json.loads(line) for line in f]


def _cases():
    for policy in POLICIES:
        for layout in LAYOUTS:
            marks = [] if (policy, layout) in FAST else [pytest.mark.slow]
            yield pytest.param(policy, layout, marks=marks, id=f"{policy}-{layout}")


@pytest.mark.parametrize("policy, layout", list(_cases()))
def test_every_layout_acts_as_one_process(recorded, tmp_path, policy, layout):
    if layout == "ray":
        pytest.importorskip("ray")
    reference = recorded[policy]
    rerun = tmp_path / "rerun"
    args = ["--verify_record", reference, "--verify_iterations", ITERATIONS]
    args += ["--root_dir", rerun, "--nostore_snapshot", *_params(LAYOUTS[layout])]
    if layout.startswith("ranks"):
        args += ["--num_processes", "2"]
    code, stdout, stderr = run("alf.bin.train", *args)
    assert code == 0, (stdout + stderr)[-3000:]
    expected, got = _hashes(reference), _hashes(rerun)
    assert [e["trajectory_sha256"] for e in got] == [e["trajectory_sha256"] for e in expected]
    assert got[0]["unroll_sha256"] == expected[0]["unroll_sha256"]
    state = _tensors(load_ckpt(rerun, ITERATIONS)["algorithm"])
    expected_state = _tensors(load_ckpt(reference, ITERATIONS)["algorithm"])
    assert state.keys() == expected_state.keys() and len(state) > 10
    if not layout.startswith("ranks"):
        assert [e["unroll_sha256"] for e in got] == [e["unroll_sha256"] for e in expected]
        for name, value in expected_state.items():
            assert torch.equal(value, state[name]), name
        return
    assert got[-1]["learner_ranks"] == 2
    largest = max(
        float((value - state[name]).abs().max())
        for name, value in expected_state.items()
        if value.is_floating_point()
    )
    assert 0 < largest <= RANK_TOLERANCE


def _tensors(value, path="") -> dict:
    """The tensors of a nest of dicts and lists, by path."""
    if torch.is_tensor(value):
        return {path: value}
    if not isinstance(value, (dict, list, tuple)):
        return {}
    items = value.items() if isinstance(value, dict) else enumerate(value)
    found = {}
    for key, item in items:
        found.update(_tensors(item, f"{path}/{key}"))
    return found
