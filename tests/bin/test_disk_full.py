"""A full disk while training: one line naming the checkpoint, the checkpoints written
before kept and loadable, no temporary file left (a small tmpfs; needs root)."""

import os
import subprocess

import pytest
import torch

from tests.bin.test_train_play import ckpt_steps, train


@pytest.fixture
def small_disk(tmp_path):
    """A 350 kB tmpfs: room for the tiny run's first checkpoint and its best one only."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=350k", "tmpfs", str(mount_point)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def test_a_full_disk_stops_training_with_one_line_and_keeps_the_checkpoints(small_disk):
    root_dir = small_disk / "run"
    code, _, stderr = train(root_dir, "--nostore_snapshot")
    assert code == 1, stderr
    line = stderr.strip().splitlines()[-1]  # after the training log
    assert "Traceback" not in stderr
    ckpt_dir = root_dir / "train" / "algorithm"
    assert line.startswith(f"alf.bin.train: error: cannot write checkpoint {ckpt_dir}/ckpt-")
    assert line.endswith(f"No space left on device; the checkpoints already in {ckpt_dir} are kept")
    assert ckpt_steps(ckpt_dir) == [4]
    state = torch.load(ckpt_dir / "ckpt-4.pt", weights_only=True)
    assert state["iteration"] == 4
    assert not [n for n in os.listdir(ckpt_dir) if n.startswith(".tmp")]
