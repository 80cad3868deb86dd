"""``RootDirLock``: exclusive between processes, released by the kernel when its holder dies."""

import os
import signal
import subprocess
import sys

import pytest

from alf.utils.run_lock import LOCK_FILE, RootDirInUse, RootDirLock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOLDER = """
import sys, time
from alf.utils.run_lock import RootDirLock
RootDirLock(sys.argv[1]).acquire()
print("LOCKED", flush=True)
time.sleep(600)
"""


def _start_holder(root_dir):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root_dir)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert holder.stdout.readline().strip() == "LOCKED"
    return holder


def test_a_second_holder_is_refused_with_the_pid_until_the_first_is_killed(tmp_path):
    holder = _start_holder(tmp_path)
    try:
        with pytest.raises(RootDirInUse) as refused:
            RootDirLock(str(tmp_path)).acquire()
        message = str(refused.value)
        assert f"root_dir {tmp_path} is in use" in message and f"pid {holder.pid}" in message
        assert (tmp_path / LOCK_FILE).read_text() == f"{holder.pid}\n"  # left as it was
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with RootDirLock(str(tmp_path)) as lock:  # the kernel released the killed holder's lock
        assert lock.held and (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    assert not lock.held
    lock.acquire()  # released: can be taken again
    lock.release()
    lock.release()  # idempotent


def test_two_locks_in_one_process_exclude_each_other(tmp_path):
    with RootDirLock(str(tmp_path)), pytest.raises(RootDirInUse, match=f"pid {os.getpid()}"):
        RootDirLock(str(tmp_path)).acquire()
