"""One trainer per root_dir, as a user meets it: a second ``alf.bin.train`` on a live
root_dir is refused with one line and changes nothing; a SIGKILLed trainer blocks nothing."""

import os
import signal
import time

from tests.bin.test_train_play import TIMEOUT, TINY_CONF, finish, start, train, tree_hashes


def _wait_for_training(root_dir, proc):
    """Wait until ``proc`` holds the root_dir's lock (its pid is in the lock file) and has
    written its record and started training (the ``train`` summary directory exists)."""
    lock_file = root_dir / ".lock"
    deadline = time.time() + TIMEOUT
    while time.time() < deadline and proc.poll() is None:
        locked = lock_file.exists() and lock_file.read_text().strip() == str(proc.pid)
        if locked and (root_dir / "train").is_dir():
            return
        time.sleep(0.05)
    raise AssertionError(f"the trainer did not lock {root_dir}: {finish(proc)}")


def test_second_trainer_is_refused_and_a_killed_one_blocks_nothing(tmp_path):
    root_dir = tmp_path / "run"
    long_run = ["--conf_param", "TrainerConfig.num_iterations=100000", "--nostore_snapshot"]
    first = start("alf.bin.train", "--conf", TINY_CONF, "--root_dir", root_dir, *long_run)
    try:
        _wait_for_training(root_dir, first)
        record = (root_dir / "config_files" / "run.json").read_bytes()
        code, _, stderr = train(root_dir, "--random_seed", 7, "--nostore_snapshot")
        assert code == 2, stderr
        assert stderr.strip() == (
            f"alf.bin.train: error: root_dir {root_dir} is in use by another trainer "
            f"(pid {first.pid}); wait for it to finish or stop it (SIGTERM saves a "
            f"checkpoint) first"
        )
        assert (root_dir / "config_files" / "run.json").read_bytes() == record
        assert first.poll() is None  # the first trainer runs on
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    code, _, stderr = train(root_dir, "--nostore_snapshot")
    assert code == 0, stderr
    assert "in use" not in stderr


def test_root_dir_under_a_regular_file_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    before = tree_hashes(tmp_path)
    code, _, stderr = train(blocker / "run")
    assert code == 2
    assert stderr.strip() == (
        f"alf.bin.train: error: cannot use root_dir {blocker / 'run'}: Not a directory"
    )
    assert tree_hashes(tmp_path) == before
    assert os.listdir(tmp_path) == ["file"]
