"""Experiment tracking of ``alf.bin.train``: the HParams summary in root_dir, and
``--wandb`` in wandb's offline mode (no network): the offline run holds the same scalars
as the tensorboard files, the configuration, and a resumed run continues the same wandb
run id. wandb's own tests are skipped when it is not installed; a missing or failing
wandb is tested with a stand-in module."""

import glob
import json
import os
import struct
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from alf.summary import hparams

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_CONF = os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py")

try:
    import wandb  # noqa: F401

    HAS_WANDB = True
except ImportError:
    HAS_WANDB = False


def _train(root_dir, *args, pythonpath=(), extra_env=None, conf=TINY_CONF):
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([*pythonpath, REPO]),
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        **(extra_env or {}),
    )
    env.pop("WANDB_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "-m", "alf.bin.train", "--root_dir", root_dir, "--nostore_snapshot"]
        + (["--conf", conf] if conf else [])
        + list(map(str, args)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    return result.returncode, result.stdout, result.stderr


def _events(directory):
    """``{tag: {step: value}}`` of the scalars in ``directory``'s event files."""
    acc = EventAccumulator(directory, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


# -- wandb's offline files ----------------------------------------------------------------


def _records(path):
    """The protobuf records of a ``run-<id>.wandb`` file (a LevelDB-style log: a 7-byte
    header, then 32 KiB blocks of chunks with a 7-byte header: crc, length, type)."""
    from wandb.proto import wandb_internal_pb2

    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b":W&B"
    pos, block, pending = 7, 32768, b""
    while pos + 7 <= len(data):
        room = block - pos % block
        if room < 7:  # a block's tail too short for a header is padding
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL, LAST
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def _offline_run(run_dir):
    """``(history rows, config)`` of an offline run directory."""
    (path,) = glob.glob(os.path.join(run_dir, "run-*.wandb"))
    rows, config = [], {}
    for record in _records(path):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            rows.append(
                {
                    i.key or "/".join(i.nested_key): json.loads(i.value_json)
                    for i in record.history.item
                }
            )
        elif kind == "run":
            config.update({u.key: json.loads(u.value_json) for u in record.run.config.update})
    return rows, config


def _check_same_scalars(root_dir, rows, iterations):
    """Every scalar of the train and eval event files at ``iterations`` is in the row of
    the iteration that wrote it: the trainer's own (``Metrics/*``, ``time/*``) are at the
    step of the iteration count after it (``Metrics_vs_EnvironmentSteps/*``: its env
    steps), the algorithm's (``loss/*`` ...) at the global counter during it, one less."""
    by_iteration = {r["iteration"]: r for r in rows}
    by_env_steps = {r["env_steps"]: r for r in rows}
    checked = 0
    for prefix in ("train", "eval"):
        for tag, values in _events(os.path.join(root_dir, prefix)).items():
            vs_env_steps = tag.startswith("Metrics_vs_EnvironmentSteps/")
            offset = 0 if tag.split("/")[0] in ("Metrics", "time") else 1
            for step, value in values.items():
                if vs_env_steps:
                    row = by_env_steps.get(step)
                else:
                    row = by_iteration.get(step + offset)
                if row is None or row["iteration"] not in iterations:
                    continue
                assert row[f"{prefix}/{tag}"] == pytest.approx(value, rel=1e-6, abs=1e-6), tag
                checked += 1
    return checked


@pytest.mark.skipif(not HAS_WANDB, reason="needs alf[wandb]")
def test_wandb_offline_run_holds_the_scalars_and_resumes(tmp_path):
    root_dir = str(tmp_path / "ppo_project" / "seed1")
    code, _, stderr = _train(root_dir, "--wandb", "--conf_param", "TrainerConfig.num_iterations=8")
    assert code == 0, stderr[-3000:]
    with open(os.path.join(root_dir, "wandb_run.json")) as f:
        stored = json.load(f)
    assert stored["project"] == "ppo_project" and stored["name"] == "seed1"
    (first,) = glob.glob(os.path.join(root_dir, "wandb", f"offline-run-*-{stored['id']}"))
    rows, config = _offline_run(first)
    assert [r["iteration"] for r in rows] == list(range(1, 9))
    assert [r["env_steps"] for r in rows] == [32 * i for i in range(1, 9)]
    assert _check_same_scalars(root_dir, rows, range(1, 9)) > 8 * 10
    assert {"train/Metrics/AverageReturn", "eval/Metrics/AverageReturn"} <= set(rows[3])
    assert "eval/Metrics/AverageReturn" not in rows[2]  # evaluated every 4 iterations
    assert config["TrainerConfig.unroll_length"] == 16 and config["random_seed"] == 1
    assert config["PPOLoss.gamma"] == 0.98
    assert config["TrainerConfig.num_iterations"] == 8
    with open(os.path.join(root_dir, "config_files", "run.json")) as f:
        assert json.load(f)["flags"]["wandb"] is True

    # resumed from the record (its --wandb is kept): the same wandb run id, iterations 9..12
    code, _, stderr = _train(root_dir, "--conf_param", "TrainerConfig.num_iterations=12", conf=None)
    assert code == 0, stderr[-3000:]
    with open(os.path.join(root_dir, "wandb_run.json")) as f:
        assert json.load(f) == stored
    runs = sorted(glob.glob(os.path.join(root_dir, "wandb", "offline-run-*")))
    assert len(runs) == 2 and all(r.endswith(stored["id"]) for r in runs)
    (second,) = [r for r in runs if r != first]
    rows, _ = _offline_run(second)
    assert [r["iteration"] for r in rows] == list(range(9, 13))
    assert _check_same_scalars(root_dir, rows, range(9, 13)) > 4 * 10


def test_hparams_of_a_training_run(tmp_path):
    root_dir = str(tmp_path / "run")
    code, _, stderr = _train(root_dir, "--conf_param", "TrainerConfig.num_iterations=2")
    assert code == 0, stderr[-3000:]
    values = hparams.read_hparams(root_dir)
    assert values["TrainerConfig.unroll_length"] == 16.0
    assert values["TrainerConfig.num_iterations"] == 2.0
    assert values["PPOLoss.importance_ratio_clipping"] == 0.2
    assert values["random_seed"] == 1.0
    assert values["create_environment.env_name"] == "CartPole-v1"
    assert values["TrainerConfig.algorithm_ctor"] == "alf.algorithms.ppo_algorithm.PPOAlgorithm"
    assert not os.path.exists(os.path.join(root_dir, "wandb"))


def _stand_in(tmp_path, source):
    package = tmp_path / "fake" / "wandb"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    return str(tmp_path / "fake")


def test_wandb_missing_is_one_line_and_writes_nothing(tmp_path):
    fake = _stand_in(tmp_path, "raise ImportError(\"No module named 'wandb'\")\n")
    root_dir = str(tmp_path / "run")
    code, _, stderr = _train(root_dir, "--wandb", pythonpath=[fake])
    assert code == 2
    assert stderr.strip().splitlines() == [
        "alf.bin.train: error: TrainerConfig.use_wandb (--wandb) needs the wandb package: "
        "pip install 'alf[wandb]'"
    ]
    assert not os.path.exists(root_dir)


def test_wandb_init_failure_is_one_line(tmp_path):
    fake = _stand_in(
        tmp_path,
        "class Settings:\n"
        "    def __init__(self, **kwargs):\n"
        "        pass\n"
        "def init(**kwargs):\n"
        "    raise RuntimeError('api_key not configured (no-tty)\\nmore details')\n",
    )
    root_dir = str(tmp_path / "exp" / "run")
    code, _, stderr = _train(root_dir, "--wandb", pythonpath=[fake])
    assert code == 1
    assert stderr.strip().splitlines()[-1] == (
        "alf.bin.train: error: wandb.init failed for project 'exp', run 'run': api_key not "
        "configured (no-tty) (WANDB_MODE=offline logs without an account or network)"
    )
    assert not glob.glob(os.path.join(root_dir, "train", "algorithm", "ckpt-*"))
