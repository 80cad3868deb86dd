"""Setup errors a user meets in one line naming the culprit (file and line, or the file),
exit status 2, and nothing written."""

import os

import pytest

from tests.bin.test_train_play import (
    REPO,
    TINY_CONF,
    finish,
    one_error_line,
    run,
    start,
    train,
    tree_hashes,
)

GIN_CONF = os.path.join(REPO, "alf", "examples", "ppo_cart_pole.gin")

BROKEN_CONFS = {
    "syntax": (
        'import alf\nalf.config("TrainerConfig", unroll_length=8\n',
        "SyntaxError: '(' was never closed",
    ),
    "name": (
        'import alf\n\nalf.config("TrainerConfig", unroll_length=undefined_name)\n',
        "NameError: name 'undefined_name' is not defined",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN_CONFS))
def test_a_broken_conf_file_is_one_line_with_its_file_and_line(tmp_path, case):
    source, message = BROKEN_CONFS[case]
    conf = tmp_path / f"broken_{case}_conf.py"
    conf.write_text(source)
    code, _, stderr = train(tmp_path / "run", conf=str(conf))
    assert code == 2
    line = {"syntax": 2, "name": 3}[case]
    assert (
        one_error_line(stderr, "train") == f"alf.bin.train: error: {conf}, line {line}: {message}"
    )
    assert not (tmp_path / "run").exists()


def test_a_corrupt_run_record_is_named(tmp_path):
    record = tmp_path / "run" / "config_files" / "run.json"
    record.parent.mkdir(parents=True)
    record.write_text("{not json")
    before = tree_hashes(tmp_path)
    expected = f"run record {record} is not valid JSON: Expecting property name enclosed in "
    code, _, stderr = train(tmp_path / "run", conf=None)
    assert code == 2 and one_error_line(stderr, "train").startswith(
        f"alf.bin.train: error: {expected}"
    )
    assert tree_hashes(tmp_path) == before


def _typed_conf_cases(tmp_path):
    """``{case: (conf, extra args, root_dir, expected line)}``: a wrong value given on the
    command line, in a Python conf and in a gin conf (the last two into a root_dir that
    exists already, and named with their file and line)."""
    py_conf = tmp_path / "four_envs_conf.py"
    py_conf.write_text(
        f"import alf\nalf.import_config({TINY_CONF!r})\n"
        'alf.config("create_environment", num_parallel_environments="four")\n'
    )
    gin_conf = tmp_path / "zero_lr.gin"
    gin_conf.write_text(f"include '{GIN_CONF}'\nAdam.lr = 0.0\n")
    return {
        "conf_param": (
            TINY_CONF,
            ["--conf_param", "PPOLoss.gamma='high'"],
            tmp_path / "new_run",
            "PPOLoss.gamma='high': expected a float, got str",
        ),
        "python_conf": (
            py_conf,
            [],
            tmp_path / "existing_run",
            f"{py_conf}, line 3: "
            "create_environment.num_parallel_environments='four': expected an int, got str",
        ),
        "gin_conf": (
            gin_conf,
            [],
            tmp_path / "existing_run_gin",
            f"{gin_conf}, line 2: Adam.lr=0.0: expected a float > 0 or a schedule",
        ),
    }


def test_a_configured_value_of_the_wrong_kind_is_one_line_and_nothing_is_written(tmp_path):
    cases = _typed_conf_cases(tmp_path)
    for _, _, root_dir, _ in cases.values():
        if root_dir.name.startswith("existing"):
            (root_dir / "train").mkdir(parents=True)
            (root_dir / "train" / "notes.txt").write_text("kept as it is")
    before = tree_hashes(tmp_path), sorted(tmp_path.rglob("*"))
    started = {
        case: start("alf.bin.train", "--conf", conf, "--root_dir", root_dir, *args)
        for case, (conf, args, root_dir, _) in cases.items()
    }
    for case, proc in started.items():
        code, _, stderr = finish(proc)
        assert code == 2, stderr
        assert one_error_line(stderr, "train") == f"alf.bin.train: error: {cases[case][3]}"
    assert not (tmp_path / "new_run").exists()
    assert (tree_hashes(tmp_path), sorted(tmp_path.rglob("*"))) == before


MODULES = ["train", "play", "export", "grid_search", "pbt_launch"]


@pytest.mark.parametrize("module", MODULES)
def test_an_argument_no_flag_takes_is_one_line_and_nothing_is_written(tmp_path, module):
    """``--conf_param A=1 B=2`` gives ``B=2`` to no flag: refused, never dropped unseen."""
    root = ("--conf", TINY_CONF, "--root_dir", str(tmp_path / "run")) if module == "train" else ()
    code, _, stderr = run(f"alf.bin.{module}", *root, "--conf_param", "A=1", "B=2")
    assert code == 2
    assert one_error_line(stderr, module) == (
        f"alf.bin.{module}: error: unexpected argument 'B=2': no flag takes it (each value "
        "needs a flag of its own: --conf_param A=1 --conf_param B=2)"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("module", MODULES)
def test_an_unknown_or_malformed_flag_is_one_line(module):
    code, _, stderr = run(f"alf.bin.{module}", "--no_such_flag=1")
    assert code == 2
    assert one_error_line(stderr, module) == (
        f"alf.bin.{module}: error: Unknown command line flag 'no_such_flag'"
    )
