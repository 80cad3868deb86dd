"""Stop signals and failing environments, as a user meets them with ``alf.bin.train``.

* SIGTERM while an in-process env hangs (sleeping, or spinning in Python), in training or
  in evaluation: a checkpoint of the last completed iteration and exit 0 within 10 s; a
  second signal exits at once; SIGTERM during start-up exits 0 and writes nothing.
* ``create_environment.step_timeout`` on in-process envs, and a crash loop beyond
  ``restart_on_crash``'s budget: one error line, exit 1, and a checkpoint of the last
  completed iteration first.
* ``--verbose`` adds the traceback above the one error line.
"""

import os
import re
import signal
import time

import pytest

from tests.bin.test_train_play import (
    REPO,
    TIMEOUT,
    ckpt_steps,
    finish,
    load_ckpt,
    one_error_line,
    start,
    train,
    tree_hashes,
)

FAULTY_CONF = os.path.join(REPO, "tests", "confs", "tiny_ppo_faulty_env_conf.py")
FAULTY_ENVS = os.path.join(REPO, "tests", "environments", "faulty_envs.py")
ABANDONED_RE = re.compile(r"Iteration (\d+) is abandoned; the checkpoint holds iteration (\d+)")


def _start(root_dir, fault, where="train", step=150, *args):
    marker = root_dir.parent / f"{root_dir.name}.marker"
    params = [f"fault={fault!r}", f"fault_where={where!r}", f"fault_step={step}"]
    params.append(f"fault_marker={str(marker)!r}")
    argv = ["--conf", FAULTY_CONF, "--root_dir", root_dir, "--nostore_snapshot", *args]
    for param in params:
        argv += ["--conf_param", param]
    return start("alf.bin.train", *argv), marker


def _wait_for(marker, proc):
    deadline = time.time() + TIMEOUT
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, finish(proc)
    assert marker.exists()
    time.sleep(0.5)  # well inside the hang


def _signal_and_finish(proc, *signals):
    signalled = time.time()
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.3)
    code, stdout, stderr = finish(proc)
    return code, stdout, stderr, time.time() - signalled


def _last_checkpoint(root_dir):
    steps = ckpt_steps(root_dir / "train" / "algorithm")
    last = max(steps)
    assert load_ckpt(root_dir, last)["iteration"] == last
    return last, steps


@pytest.mark.parametrize("fault", ["hang", "spin"])
def test_sigterm_while_a_training_env_hangs_checkpoints_the_last_iteration(tmp_path, fault):
    root_dir = tmp_path / fault
    proc, marker = _start(root_dir, fault)
    try:
        _wait_for(marker, proc)
        code, _, stderr, took = _signal_and_finish(proc, signal.SIGTERM)
    finally:
        proc.kill()
    assert code == 0, stderr
    assert took < 10, stderr
    assert "Traceback" not in stderr
    assert f"(stuck in step at {FAULTY_ENVS}:" in stderr
    abandoned, held = map(int, ABANDONED_RE.search(stderr).groups())
    last, steps = _last_checkpoint(root_dir)
    # each env hangs on its 150th step: 16 steps per iteration, after iteration 8's checkpoint
    assert abandoned == held + 1 and held == last and last > 8
    assert sorted(steps) == [4, 8, last]


def test_sigterm_while_the_eval_env_hangs_stops_the_evaluation(tmp_path):
    root_dir = tmp_path / "eval"
    proc, marker = _start(root_dir, "hang", "eval", 5)  # in the first evaluation
    try:
        _wait_for(marker, proc)
        code, _, stderr, took = _signal_and_finish(proc, signal.SIGTERM)
    finally:
        proc.kill()
    assert code == 0, stderr
    assert took < 10, stderr
    assert "Evaluation at iteration 4 stopped by a signal" in stderr
    assert "Received SIGTERM: saving a checkpoint and stopping" in stderr
    assert _last_checkpoint(root_dir) == (4, [4])


def test_a_second_signal_exits_at_once_leaving_the_earlier_checkpoints(tmp_path):
    root_dir = tmp_path / "twice"
    proc, marker = _start(root_dir, "spin")
    try:
        _wait_for(marker, proc)
        code, _, stderr, took = _signal_and_finish(proc, signal.SIGTERM, signal.SIGINT)
    finally:
        proc.kill()
    assert code == 128 + signal.SIGINT, stderr
    assert took < 2.5, stderr  # before the first signal's 3 s grace period ends
    assert stderr.rstrip().endswith("Received SIGINT again: exiting now, without a checkpoint")
    assert sorted(ckpt_steps(root_dir / "train" / "algorithm")) == [4, 8]
    assert [load_ckpt(root_dir, step)["iteration"] for step in (4, 8)] == [4, 8]
    assert sorted(os.listdir(root_dir / "train" / "algorithm")) == ["ckpt-4.pt", "ckpt-8.pt"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_start_up_exits_zero_and_writes_nothing(tmp_path, sig):
    root_dir = tmp_path / sig.name
    root_dir.mkdir()
    (root_dir / "notes.txt").write_text("the user's own file\n")
    before = tree_hashes(root_dir)
    proc, marker = _start(root_dir, "slow_start")
    try:
        _wait_for(marker, proc)
        code, stdout, stderr, took = _signal_and_finish(proc, sig)
    finally:
        proc.kill()
    assert code == 0, stderr
    assert took < 10
    assert stdout == f"alf.bin.train: stopped by {sig.name} during start-up; nothing was written\n"
    assert "Traceback" not in stderr
    assert tree_hashes(root_dir) == before


def test_an_in_process_step_timeout_stops_the_run_after_a_checkpoint(tmp_path):
    root_dir = tmp_path / "timeout"
    proc, _ = _start(
        root_dir, "hang", "train", 150, "--conf_param", "create_environment.step_timeout=2"
    )
    code, _, stderr = finish(proc)
    assert code == 1, stderr
    last_line = stderr.strip().splitlines()[-1]
    assert last_line.startswith("alf.bin.train: error: 2 in-process envs ("), stderr
    assert last_line.endswith(
        "a step took longer than step_timeout=2 s (stuck in step at "
        f"{FAULTY_ENVS}:{_line_of('time.sleep(3600)')})"
    )
    last, steps = _last_checkpoint(root_dir)
    assert f"An environment failed: saving iteration {last} first" in stderr
    assert sorted(steps) == [4, 8, last] and last > 8


def test_a_crash_loop_beyond_the_restart_budget_stops_the_run_after_a_checkpoint(tmp_path):
    root_dir = tmp_path / "crash_loop"
    proc, _ = _start(root_dir, "die", "train", 100)
    code, _, stderr = finish(proc)
    assert code == 1, stderr
    last_line = stderr.strip().splitlines()[-1]
    assert last_line.startswith("alf.bin.train: error: Environment worker env_id="), stderr
    assert "died with exit code 3" in last_line
    assert "more than restart_on_crash allows (max_restarts=1 per restart_window)" in last_line
    last, _ = _last_checkpoint(root_dir)
    assert f"An environment failed: saving iteration {last} first" in stderr
    assert last > 4  # the first crash (each worker's 100th step) came after iteration 4


def test_verbose_prints_the_traceback_above_the_one_error_line(tmp_path):
    conf = tmp_path / "bad_conf.py"
    conf.write_text("import alf\n\nalf.config('TrainerConfig', unroll_length=undefined_name)\n")
    plain = train(tmp_path / "plain", conf=conf)
    verbose = train(tmp_path / "verbose", "--verbose", conf=conf)
    assert plain[0] == verbose[0] == 2
    line = one_error_line(plain[2], "train")
    assert (
        line
        == f"alf.bin.train: error: {conf}, line 3: NameError: name 'undefined_name' is not defined"
    )
    assert "Traceback (most recent call last)" in verbose[2]
    assert f'File "{conf}", line 3' in verbose[2]
    assert verbose[2].rstrip().splitlines()[-1] == line
    assert not (tmp_path / "plain").exists() and not (tmp_path / "verbose").exists()


def _line_of(text):
    with open(FAULTY_ENVS) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)
