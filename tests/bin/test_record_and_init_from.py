"""``alf.bin.train --from_record`` and ``--init_from`` as a user runs them.

One 6-iteration tiny PPO run (with a ``--conf_param``, a ``--gin_param`` and
``--num_threads``) is the source. It is recreated from its record (from its
root_dir, and from a copy of ``run.json`` alone, with overrides) and used as the
``--init_from`` source of a new run; the source's files are hashed before and after
all of that. Bad inputs exit 2 with one error line and write nothing.
"""

import json
import os
import re
import shutil

import pytest
import torch

from tests.bin.test_train_play import (
    TINY_CONF,
    assert_same_tensors,
    finish,
    load_ckpt,
    one_error_line,
    scalars,
    start,
    tree_hashes,
)

SOURCE_ARGS = [
    "--nostore_snapshot",
    "--conf_param",
    "TrainerConfig.num_iterations=6",
    "--gin_param",
    "PPOLoss.td_lambda = 0.9",
    "--num_threads",
    "1",
]


def train(root_dir, *args, conf=TINY_CONF):
    conf_args = ("--conf", conf) if conf else ()
    return start("alf.bin.train", *conf_args, "--root_dir", root_dir, *args)


def succeeded(proc):
    code, _, stderr = finish(proc)
    assert code == 0, stderr
    return stderr


def run_json(root_dir):
    with open(os.path.join(root_dir, "config_files", "run.json")) as f:
        return json.load(f)


def config_body(root_dir):
    """``alf_config.py`` without its run-record header, root_dir and object addresses."""
    with open(os.path.join(root_dir, "alf_config.py")) as f:
        text = f.read()
    body = text[text.index("# Operative configuration") :]
    body = body.replace(str(root_dir), "ROOT_DIR")
    return re.sub(r" at 0x[0-9a-f]+", " at 0x", body)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``{name: (root_dir, stderr)}`` of the source run and the runs made from it, plus the
    hashes of the source's files before and after those runs."""
    base = tmp_path_factory.mktemp("record")
    source = base / "source"
    succeeded(train(source, *SOURCE_ARGS))
    before = tree_hashes(source)
    record_copy = base / "elsewhere" / "record.json"
    record_copy.parent.mkdir()
    shutil.copy(source / "config_files" / "run.json", record_copy)
    procs = {
        "from_dir": train(
            base / "from_dir", "--from_record", source, "--nostore_snapshot", conf=None
        ),
        "from_json": train(
            base / "from_json",
            "--from_record",
            record_copy,
            "--nostore_snapshot",
            "--random_seed",
            7,
            "--conf_param",
            "TrainerConfig.num_iterations=3",
            conf=None,
        ),
        "init": train(
            base / "init",
            "--nostore_snapshot",
            "--init_from",
            source,
            "--conf_param",
            "TrainerConfig.num_iterations=2",
        ),
    }
    results = {"source": (source, "")}
    for name, proc in procs.items():
        results[name] = (base / name, succeeded(proc))
    results["hashes"] = (before, tree_hashes(source))
    return results


def test_record_holds_everything_used(runs):
    source, _ = runs["source"]
    record = run_json(source)
    assert record["format"] == 2
    assert record["conf_file"] == "tiny_ppo_conf.py"
    assert record["original_conf_file"] == os.path.realpath(TINY_CONF)
    assert sorted(record["conf_files"]) == ["ppo_cart_pole_conf.py", "tiny_ppo_conf.py"]
    with open(TINY_CONF) as f:
        assert record["conf_files"]["tiny_ppo_conf.py"] == f.read()
    assert record["conf_params"] == ["TrainerConfig.num_iterations=6"]
    assert record["gin_params"] == ["PPOLoss.td_lambda = 0.9"]
    assert record["random_seed"] == 1  # from the conf file
    assert record["flags"] == {
        "random_seed": None,
        "num_threads": 1,
        "init_from": None,
        "store_snapshot": False,
        "wandb": None,
    }
    assert record["command_line"][1:4] == ["-m", "alf.bin.train", "--conf"]
    assert record["versions"]["torch"] == torch.__version__
    assert set(record["versions"]) >= {"alf", "alf_git_commit", "python", "gymnasium"}
    with open(os.path.join(source, "alf_config.py")) as f:
        text = f.read()
    for line in [
        "# conf_param: TrainerConfig.num_iterations=6",
        "# gin_param: PPOLoss.td_lambda = 0.9",
        "# random_seed: 1",
        "# flag num_threads: 1",
        f"# conf_file: {os.path.realpath(TINY_CONF)}",
        "td_lambda=0.9",
        "num_threads=1",
    ]:
        assert line in text, line
    compile(text, "alf_config.py", "exec")


def test_recreated_run_has_the_same_config_curves_and_parameters(runs):
    source, _ = runs["source"]
    recreated, _ = runs["from_dir"]
    assert config_body(recreated) == config_body(source)
    record = run_json(recreated)
    assert record["recreated_from"] == os.path.join(source, "config_files", "run.json")
    assert record["original_conf_file"] == os.path.realpath(TINY_CONF)
    assert record["conf_params"] == run_json(source)["conf_params"]
    assert record["gin_params"] == run_json(source)["gin_params"]
    for which in ("train", "eval"):
        reference = scalars(source / which, "Metrics/AverageReturn")
        assert len(reference) == (6 if which == "train" else 2)
        assert scalars(recreated / which, "Metrics/AverageReturn") == reference
    assert_same_tensors(load_ckpt(recreated, 6)["algorithm"], load_ckpt(source, 6)["algorithm"])


def test_recreated_from_a_json_alone_with_overrides(runs):
    source, _ = runs["source"]
    recreated, _ = runs["from_json"]
    record = run_json(recreated)
    assert record["random_seed"] == 7
    assert record["conf_params"] == ["TrainerConfig.num_iterations=3"]
    assert record["gin_params"] == ["PPOLoss.td_lambda = 0.9"]
    assert load_ckpt(recreated, 3)["iteration"] == 3
    assert load_ckpt(recreated, 3)["random_seed"] == 7
    body = config_body(recreated)
    assert "random_seed=7" in body and "td_lambda=0.9" in body
    assert body.replace("random_seed=7", "random_seed=1").replace(
        "num_iterations=3", "num_iterations=6"
    ) == config_body(source)
    assert sorted(os.listdir(recreated / "config_files")) == [
        "ppo_cart_pole_conf.py",
        "run.json",
        "tiny_ppo_conf.py",
    ]


def test_init_from_starts_from_the_source_and_leaves_it_untouched(runs):
    source, _ = runs["source"]
    root_dir, stderr = runs["init"]
    ckpt = os.path.join(source, "train", "algorithm", "ckpt-6.pt")
    assert f"Initialized the algorithm from {ckpt}" in stderr
    record = run_json(root_dir)
    assert record["init_from_checkpoint"] == ckpt
    assert record["flags"]["init_from"] == str(source)
    with open(os.path.join(root_dir, "alf_config.py")) as f:
        assert f"init_from={str(source)!r}" in f.read()
    before, after = runs["hashes"]
    assert after == before
    # the run's own checkpoint wins over init_from when it resumes; the record is kept
    code, _, stderr = finish(
        train(root_dir, "--conf_param", "TrainerConfig.num_iterations=4", conf=None)
    )
    assert code == 0, stderr
    assert "ignoring init_from" in stderr and "Resumed from iteration 2" in stderr
    resumed = run_json(root_dir)
    assert [r["conf_params"] for r in resumed["resumed"]] == [["TrainerConfig.num_iterations=4"]]
    for key in ("start_time", "random_seed", "init_from_checkpoint", "command_line"):
        assert resumed[key] == record[key], key
    assert tree_hashes(source) == before


def test_bad_record_or_init_from_one_error_line_nothing_written(runs, tmp_path):
    source, _ = runs["source"]
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"conf_file": ')
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps({"conf_file": "x.py", "conf_params": [], "gin_params": []}))
    cases = [
        (["--from_record", tmp_path / "missing"], None, "does not exist"),
        (["--from_record", corrupt], None, "is not valid JSON"),
        (["--from_record", legacy], None, "holds no conf file contents"),
        (["--from_record", source], TINY_CONF, "either --conf or --from_record"),
        (["--init_from", tmp_path / "no_run"], TINY_CONF, "does not exist"),
        (
            ["--init_from", source, "--conf_param", "create_environment.env_name='Acrobot-v1'"],
            TINY_CONF,
            "'_actor_network._encoding_net._fc_layers.0._weight' has shape (64, 4)",
        ),
    ]
    procs = [
        (tmp_path / f"new{i}", train(tmp_path / f"new{i}", *args, conf=conf), expected)
        for i, (args, conf, expected) in enumerate(cases)
    ]
    for root_dir, proc, expected in procs:
        code, _, stderr = finish(proc)
        assert code == 2, stderr
        assert expected in one_error_line(stderr, "train")
        assert not root_dir.exists()
