"""A root_dir belongs to one algorithm: training (or re-running a record) of another one
into it is one error line, exit status 2, and the root_dir byte-identical; a run recorded
before checkpoints and records named their algorithm still resumes.

A2C (``ActorCriticAlgorithm``) and PPO build the same parameter shapes on CartPole, so
the shape check alone does not tell their checkpoints apart.
"""

import json
import os
import shutil

import pytest
import torch

from tests.bin.test_train_play import (
    REPO,
    TINY_CONF,
    ckpt_steps,
    finish,
    one_error_line,
    start,
    train,
    tree_hashes,
)

AC_CONF = os.path.join(REPO, "alf", "examples", "ac_cart_pole_conf.py")
PPO_CLASS = "alf.algorithms.ppo_algorithm.PPOAlgorithm"
AC_CLASS = "alf.algorithms.actor_critic_algorithm.ActorCriticAlgorithm"
SHORT = ["--nostore_snapshot", "--conf_param", "TrainerConfig.evaluate=False"]
AGENT_CONF = """import alf
from alf.algorithms.agent import Agent
from {module} import {cls}

alf.import_config({base!r})
alf.config("TrainerConfig", algorithm_ctor=Agent)
alf.config("Agent", rl_algorithm_cls={cls})
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``{"ppo": root_dir, "ac": root_dir}``: 4 iterations of tiny PPO, 2 of A2C (both
    checkpointed at their end), trained concurrently."""
    base = tmp_path_factory.mktemp("algorithms")
    args = {
        "ppo": ["--conf", TINY_CONF, "--conf_param", "TrainerConfig.num_iterations=4"],
        "ac": ["--conf", AC_CONF, "--conf_param", "TrainerConfig.num_iterations=2"],
    }
    args["ac"] += ["--conf_param", "create_environment.num_parallel_environments=2"]
    procs = {
        name: start("alf.bin.train", *a, "--root_dir", base / name, *SHORT)
        for name, a in args.items()
    }
    for name, proc in procs.items():
        code, _, stderr = finish(proc)
        assert code == 0, (name, stderr)
    return {name: base / name for name in procs}


def copy_run(root_dir, tmp_path, name="run"):
    shutil.copytree(root_dir, tmp_path / name)
    return tmp_path / name


def refusal(root_dir, holds, builds):
    return (
        f"alf.bin.train: error: root_dir {root_dir} holds a run of {holds}; this conf builds "
        f"{builds}: train into a new --root_dir, or remove {root_dir} to start over"
    )


def ckpt_files(root_dir):
    """The ``ckpt-<step>.pt`` files of ``root_dir``, oldest first."""
    ckpt_dir = root_dir / "train" / "algorithm"
    return [ckpt_dir / f"ckpt-{step}.pt" for step in sorted(ckpt_steps(ckpt_dir))]


def make_old(root_dir):
    """Drop what checkpoints and the record now say about the algorithm (a run trained
    before they did)."""
    for path in ckpt_files(root_dir):
        state = torch.load(path, map_location="cpu", weights_only=True)
        state.pop("algorithm_class", None)
        state.pop("conf_file", None)
        torch.save(state, path)
    record_path = root_dir / "config_files" / "run.json"
    record = json.loads(record_path.read_text())
    record.pop("algorithm_class", None)
    record_path.write_text(json.dumps(record))


def add_replay_buffer(root_dir, stored_steps=0):
    """Give every checkpoint the replay buffer PPO kept before it trained without one: its
    positions, emptied after every iteration (``stored_steps`` 0), or holding steps."""
    for path in ckpt_files(root_dir):
        state = torch.load(path, map_location="cpu", weights_only=True)
        current = torch.full((4,), 32 * int(state["iteration"]), dtype=torch.int64)
        state["replay_buffer"] = {"current_pos": current, "clear_pos": current - stored_steps}
        torch.save(state, path)


def refused(root_dir, *args, conf=None):
    """Run ``train``; check exit status 2, one error line and ``root_dir`` unchanged;
    return the line."""
    before = tree_hashes(root_dir)
    code, _, stderr = train(root_dir, "--nostore_snapshot", *args, conf=conf)
    assert code == 2, stderr
    line = one_error_line(stderr, "train")
    assert tree_hashes(root_dir) == before
    return line


def test_runs_record_their_algorithm_class_in_checkpoint_and_record(runs):
    for name, cls, conf in (
        ("ppo", PPO_CLASS, "tiny_ppo_conf.py"),
        ("ac", AC_CLASS, "ac_cart_pole_conf.py"),
    ):
        for path in ckpt_files(runs[name]):
            state = torch.load(path, map_location="cpu", weights_only=True)
            assert (state["algorithm_class"], state["conf_file"]) == (cls, conf)
        assert state["iteration"] == {"ppo": 4, "ac": 2}[name]
        record = json.loads((runs[name] / "config_files" / "run.json").read_text())
        assert record["algorithm_class"] == cls
        assert f"# algorithm_class: {cls}\n" in (runs[name] / "alf_config.py").read_text()


def test_a2c_into_a_ppo_root_dir_is_refused_before_anything_is_written(runs, tmp_path):
    root_dir = copy_run(runs["ppo"], tmp_path)
    line = refused(root_dir, conf=AC_CONF)
    assert line == refusal(
        root_dir, "PPOAlgorithm (tiny_ppo_conf.py)", "ActorCriticAlgorithm (ac_cart_pole_conf.py)"
    )
    # the record was left alone: resuming from it goes on with PPO
    code, _, stderr = train(
        root_dir, "--nostore_snapshot", "--conf_param", "TrainerConfig.num_iterations=5", conf=None
    )
    assert code == 0, stderr
    assert "Resumed from iteration 4 (128 env steps)" in stderr


def test_ppo_into_an_a2c_root_dir_is_refused(runs, tmp_path):
    """The other way round."""
    root_dir = copy_run(runs["ac"], tmp_path)
    line = refused(root_dir, conf=TINY_CONF)
    assert line == refusal(
        root_dir, "ActorCriticAlgorithm (ac_cart_pole_conf.py)", "PPOAlgorithm (tiny_ppo_conf.py)"
    )


def test_from_record_of_another_algorithm_into_a_root_dir_is_refused(runs, tmp_path):
    root_dir = copy_run(runs["ppo"], tmp_path)
    line = refused(root_dir, "--from_record", runs["ac"])
    assert line == refusal(
        root_dir, "PPOAlgorithm (tiny_ppo_conf.py)", "ActorCriticAlgorithm (ac_cart_pole_conf.py)"
    )


def test_a_record_without_a_checkpoint_still_claims_the_root_dir(runs, tmp_path):
    root_dir = copy_run(runs["ppo"], tmp_path)
    for path in ckpt_files(root_dir):
        os.remove(path)
    line = refused(root_dir, conf=AC_CONF)
    assert line == refusal(
        root_dir, "PPOAlgorithm (tiny_ppo_conf.py)", "ActorCriticAlgorithm (ac_cart_pole_conf.py)"
    )


def test_an_old_run_is_checked_by_its_replay_buffer(runs, tmp_path):
    """A run from before the algorithm was recorded: A2C keeps no replay buffer, so the
    PPO checkpoint (which then held an emptied one) is refused, with the conf given or (the
    record an A2C conf overwrote, as training A2C into it did) taken from the record."""
    root_dir = copy_run(runs["ppo"], tmp_path)
    make_old(root_dir)
    add_replay_buffer(root_dir)
    expected = (
        f"alf.bin.train: error: root_dir {root_dir} holds a run whose checkpoint keeps a "
        "replay buffer; this conf builds ActorCriticAlgorithm (ac_cart_pole_conf.py), which "
        f"keeps none: train into a new --root_dir, or remove {root_dir} to start over"
    )
    assert refused(root_dir, conf=AC_CONF) == expected
    conf_dir = root_dir / "config_files"
    record = json.loads((conf_dir / "run.json").read_text())
    for name in record["conf_files"]:
        os.remove(conf_dir / name)
    shutil.copy(AC_CONF, conf_dir)
    with open(AC_CONF) as f:
        record.update(
            conf_file="ac_cart_pole_conf.py", conf_files={"ac_cart_pole_conf.py": f.read()}
        )
    (conf_dir / "run.json").write_text(json.dumps(record))
    assert refused(root_dir) == expected
    assert refused(root_dir, "--from_record", root_dir) == expected


@pytest.mark.parametrize("stored_steps", [0, 1])
def test_a_ppo_run_with_an_emptied_replay_buffer_resumes(runs, tmp_path, stored_steps):
    """PPO used to keep (and empty) a replay buffer: its checkpoints, which name the class,
    still resume; a buffer that holds steps is refused, since they would be lost."""
    root_dir = copy_run(runs["ppo"], tmp_path)
    add_replay_buffer(root_dir, stored_steps)
    if stored_steps:
        assert "keeps a replay buffer; this conf builds PPOAlgorithm" in refused(root_dir)
        return
    code, _, stderr = train(
        root_dir, "--nostore_snapshot", "--conf_param", "TrainerConfig.num_iterations=5", conf=None
    )
    assert code == 0, stderr
    assert "Resumed from iteration 4 (128 env steps)" in stderr
    state = torch.load(ckpt_files(root_dir)[-1], map_location="cpu", weights_only=True)
    assert state["iteration"] == 5 and "replay_buffer" not in state


def test_an_old_run_still_resumes_and_its_record_learns_the_algorithm(runs, tmp_path):
    root_dir = copy_run(runs["ppo"], tmp_path)
    make_old(root_dir)
    code, _, stderr = train(
        root_dir, "--nostore_snapshot", "--conf_param", "TrainerConfig.num_iterations=6", conf=None
    )
    assert code == 0, stderr
    assert "Resumed from iteration 4 (128 env steps)" in stderr
    record = json.loads((root_dir / "config_files" / "run.json").read_text())
    assert record["algorithm_class"] == PPO_CLASS
    state = torch.load(ckpt_files(root_dir)[-1], map_location="cpu", weights_only=True)
    assert (state["iteration"], state["algorithm_class"]) == (6, PPO_CLASS)


def test_an_agent_conf_is_the_rl_algorithm_it_builds(runs, tmp_path):
    """``Agent(rl_algorithm_cls=PPOAlgorithm)`` resumes the PPO run; with
    ``ActorCriticAlgorithm`` it is refused, naming that class."""
    confs = {}
    for name, module, cls, base in (
        ("agent_ppo", "alf.algorithms.ppo_algorithm", "PPOAlgorithm", TINY_CONF),
        ("agent_ac", "alf.algorithms.actor_critic_algorithm", "ActorCriticAlgorithm", AC_CONF),
    ):
        confs[name] = tmp_path / f"{name}_conf.py"
        confs[name].write_text(AGENT_CONF.format(module=module, cls=cls, base=base))
    root_dir = copy_run(runs["ppo"], tmp_path)
    line = refused(root_dir, "--conf_param", "TrainerConfig.evaluate=False", conf=confs["agent_ac"])
    assert line == refusal(
        root_dir, "PPOAlgorithm (tiny_ppo_conf.py)", "ActorCriticAlgorithm (agent_ac_conf.py)"
    )
    code, _, stderr = train(
        root_dir,
        *SHORT,
        "--conf_param",
        "TrainerConfig.num_iterations=5",
        conf=str(confs["agent_ppo"]),
    )
    assert code == 0, stderr
    assert "Resumed from iteration 4 (128 env steps)" in stderr
    state = torch.load(ckpt_files(root_dir)[-1], map_location="cpu", weights_only=True)
    assert (state["algorithm_class"], state["conf_file"]) == (PPO_CLASS, "agent_ppo_conf.py")
