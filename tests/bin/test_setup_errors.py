"""Setup errors a user meets in one line naming the culprit (file and line, or the file),
exit status 2, and nothing written."""

import pytest

from tests.bin.test_train_play import one_error_line, train, tree_hashes

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
