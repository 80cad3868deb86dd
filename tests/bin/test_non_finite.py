"""Finite or stop, as a user meets it: an env that returns a NaN reward or an inf observation
stops training with one line naming the field, the env and the step; the checkpoints written
before stay finite and loadable, none is written after. (``play`` refusing non-finite weights:
``test_train_play.py``.)"""

import os

import pytest
import torch

from tests.bin.test_train_play import ckpt_steps, load_ckpt, train

NON_FINITE_CONF = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "confs", "tiny_ppo_non_finite_conf.py"
)
MESSAGE = (
    "alf.bin.train: error: the environment returned a non-finite {field} ({kind}) from env_id "
)


def _finite(state) -> bool:
    return all(
        bool(torch.isfinite(t).all())
        for t in state["algorithm"].values()
        if torch.is_tensor(t) and t.is_floating_point()
    )


@pytest.mark.parametrize("field, kind", [("reward", "nan"), ("observation", "inf")])
def test_a_non_finite_env_value_stops_training_and_keeps_the_good_checkpoints(
    tmp_path, field, kind
):
    root_dir = tmp_path / field
    params = ["--conf_param", f"fault_field={field!r}", "--nostore_snapshot"]
    code, _, stderr = train(root_dir, *params, conf=NON_FINITE_CONF)
    assert code == 1, stderr
    last_line = stderr.strip().splitlines()[-1]
    assert last_line.startswith(MESSAGE.format(field=field, kind=kind)), stderr
    assert "training stops before learning from it" in last_line and "Traceback" not in stderr
    # 2 envs x 16 steps per iteration; the fault comes on an env's 150th step (after ~300
    # env steps, iteration 10): the checkpoints of iterations 4 and 8 were written before.
    assert sorted(ckpt_steps(root_dir / "train" / "algorithm")) == [4, 8]
    assert all(_finite(load_ckpt(root_dir, step)) for step in (4, 8))


def test_a_diverging_loss_stops_training_after_skipping_its_non_finite_updates(tmp_path):
    root_dir = tmp_path / "diverged"
    gin_conf = os.path.join(os.path.dirname(NON_FINITE_CONF), "..", "..", "alf", "examples")
    code, _, stderr = train(
        root_dir,
        "--gin_param",
        "Adam.lr=1e30",
        "--conf_param",
        "TrainerConfig.num_iterations=40",
        "--nostore_snapshot",
        conf=os.path.join(gin_conf, "ppo_cart_pole.gin"),
    )
    assert code == 1, stderr
    assert stderr.count("update skipped, not finite") == 10  # each one logged
    last_line = stderr.strip().splitlines()[-1]
    assert last_line.startswith(
        "alf.bin.train: error: PPOAlgorithm: 10 updates in a row had a non-finite loss or "
        "gradient norm (last: loss nan"
    ), stderr
    assert "TrainerConfig.max_non_finite_updates_in_a_row=10" in last_line
    assert sorted(ckpt_steps(root_dir / "train" / "algorithm")) == []  # nothing diverged saved
