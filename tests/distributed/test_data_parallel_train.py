"""``alf.bin.train --num_processes 2``: two data-parallel learner ranks, as a user runs them.

* rank 0 alone writes summaries, the run's record and checkpoints (one event file per
  summary directory, from rank 0's pid); env steps and episodes count both ranks; a
  checkpoint holds both ranks' RNG states; every socket listens on loopback;
* a run stopped after 8 iterations and resumed to 16 ends with exactly the parameters of
  the uninterrupted 16-iteration run (both ranks resume their own streams);
* SIGKILL of rank 1, or rank 1 hanging (SIGSTOP) past ``--dist_timeout``, ends the job
  with a non-zero status within a bound, keeping the checkpoints already written;
* a global batch setting that does not divide by the number of ranks is one error line;
* PPO CartPole on two ranks learns (and, in a slow test, reaches an evaluation return of
  475 on the median of three seeds);
* torchrun (instead of ``--num_processes``) trains the same parameters, and so do two
  ranks that each act through their own remote sampler (server inference).
"""

import os
import re
import signal
import time

import psutil
import pytest
import torch

from tests.bin.test_train_play import (
    REPO,
    TIMEOUT,
    assert_same_tensors,
    ckpt_steps,
    event_files,
    finish,
    load_ckpt,
    scalars,
    start,
    train,
)

RANK_RE = re.compile(r"Learner rank (\d) of 2 \(pid (\d+),")
#: bound on the time from a rank's death (or the end of its timeout) to the job's exit
EXIT_BOUND = 60


def _ranks(log: str) -> dict:
    return {int(rank): int(pid) for rank, pid in RANK_RE.findall(log)}


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ddp") / "run"
    code, stdout, stderr = train(root, "--num_processes", "2", "--nostore_snapshot")
    assert code == 0, stderr[-3000:]
    return root, stdout + stderr


def test_rank_zero_alone_writes_and_metrics_count_both_ranks(two_rank_run):
    root, log = two_rank_run
    ranks = _ranks(log)
    assert set(ranks) == {0, 1} and ranks[0] != ranks[1]
    for which in ("train", "eval"):
        files = event_files(root / which)
        assert len(files) == 1, files
        assert re.search(rf"\.{ranks[0]}\.\d+$", files[0]), files  # rank 0's pid
    steps = ckpt_steps(root / "train" / "algorithm")
    assert 16 in steps and set(steps) <= {4, 8, 12, 16}
    ckpt = load_ckpt(root, 16)
    # tiny conf: 2 envs in all (1 per rank), 16 steps per unroll, 16 iterations
    assert ckpt["env_steps"] == 16 * 16 * 2
    assert len(ckpt["rng_per_rank"]) == 2
    assert not torch.equal(ckpt["rng_per_rank"][0]["torch"], ckpt["rng_per_rank"][1]["torch"])
    steps = dict(scalars(root / "train", "Metrics/EnvironmentSteps"))
    assert steps and all(value == step * 16 * 2 for step, value in steps.items()), steps
    episodes = dict(scalars(root / "train", "Metrics/NumberOfEpisodes"))
    assert ckpt["metrics"]["num_episodes"] < episodes[16]  # rank 0's own, and both ranks'
    import json

    record = json.loads((root / "config_files" / "run.json").read_text())
    assert record["learner_processes"] == 2
    assert record["rank_seeds"][0] == 1 and record["rank_seeds"][1] != 1


SEED_LINE = re.compile(
    r"Random seed: (\d+) \(no random_seed given: drawn by rank 0\); "
    r"rank (\d) of 2 seeds with rank_seed\(\1, \2\) = (\d+)$",
    re.M,
)


def test_each_rank_logs_the_run_seed_and_its_own_in_one_line(tmp_path):
    root = tmp_path / "run"
    args = ["--num_processes", "2", "--nostore_snapshot"]
    args += ["--conf_param", "TrainerConfig.random_seed=None"]
    code, stdout, stderr = train(root, *args, "--conf_param", "TrainerConfig.num_iterations=2")
    assert code == 0, stderr[-3000:]
    log = stdout + stderr
    assert "No random_seed given" not in log  # rank 0 drew one for the run
    assert log.count("Random seed:") == 2, log
    lines = SEED_LINE.findall(log)
    assert sorted(rank for _, rank, _ in lines) == ["0", "1"], log
    import json

    record = json.loads((root / "config_files" / "run.json").read_text())
    seed = record["random_seed"]
    assert all(int(run_seed) == seed for run_seed, _, _ in lines)
    assert {int(rank): int(own) for _, rank, own in lines} == dict(enumerate(record["rank_seeds"]))
    assert record["rank_seeds"][0] == seed != record["rank_seeds"][1]


def test_resume_on_two_ranks_matches_the_uninterrupted_run(two_rank_run, tmp_path):
    root, _ = two_rank_run
    resumed = tmp_path / "resumed"
    args = ("--num_processes", "2", "--nostore_snapshot")
    code, _, stderr = train(resumed, *args, "--conf_param", "TrainerConfig.num_iterations=8")
    assert code == 0, stderr[-3000:]
    assert max(ckpt_steps(resumed / "train" / "algorithm")) == 8
    code, _, stderr = train(resumed, *args)
    assert code == 0, stderr[-3000:]
    assert "Resumed from iteration 8" in stderr
    assert_same_tensors(load_ckpt(resumed, 16)["algorithm"], load_ckpt(root, 16)["algorithm"])


def _start_long_run(root, *extra):
    proc = start(
        "alf.bin.train",
        "--conf",
        os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py"),
        "--root_dir",
        root,
        "--num_processes",
        "2",
        "--nostore_snapshot",
        "--conf_param",
        "TrainerConfig.num_iterations=100000",
        *extra,
    )
    ckpt_dir = root / "train" / "algorithm"
    deadline = time.time() + TIMEOUT
    while not ckpt_steps(ckpt_dir) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None and ckpt_steps(ckpt_dir), finish(proc)[2][-3000:]
    children = psutil.Process(proc.pid).children()
    by_rank = {int(c.environ()["RANK"]): c for c in children}
    assert set(by_rank) == {0, 1}
    return proc, by_rank


def _loopback_only(pids):
    for pid in pids:
        for conn in psutil.Process(pid).net_connections(kind="inet"):
            if conn.status == psutil.CONN_LISTEN:
                assert conn.laddr.ip in ("127.0.0.1", "::1"), conn


def test_killed_rank_ends_the_job_nonzero_within_the_bound(tmp_path):
    root = tmp_path / "run"
    proc, ranks = _start_long_run(root)
    _loopback_only([ranks[0].pid, ranks[1].pid])
    killed = time.time()
    ranks[1].kill()
    code, _, stderr = finish(proc)
    took = time.time() - killed
    assert code != 0
    assert took < EXIT_BOUND, took
    assert "learner rank 1 exited with status -9" in stderr
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in ranks.values())
    steps = ckpt_steps(root / "train" / "algorithm")
    assert steps and load_ckpt(root, max(steps))["iteration"] == max(steps)


def test_hung_rank_ends_the_job_nonzero_after_the_timeout(tmp_path):
    root = tmp_path / "run"
    proc, ranks = _start_long_run(root, "--dist_timeout", "5")
    stopped = time.time()
    ranks[1].suspend()  # SIGSTOP: alive, holding its connections, never answering
    code, _, stderr = finish(proc)
    took = time.time() - stopped
    assert code != 0
    assert 5 <= took < 5 + EXIT_BOUND, took
    assert "a collective with the other ranks failed" in stderr
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in ranks.values())


def test_sigterm_stops_both_ranks_after_the_same_iteration_with_a_checkpoint(tmp_path):
    root = tmp_path / "run"
    proc, _ = _start_long_run(root)
    proc.send_signal(signal.SIGTERM)
    code, _, stderr = finish(proc)
    assert code == 0, stderr[-3000:]
    newest = max(ckpt_steps(root / "train" / "algorithm"))
    assert newest % 4 != 0 or newest > 4  # written at the stop, not only by the interval
    assert load_ckpt(root, newest)["iteration"] == newest


def test_global_batch_setting_that_does_not_divide_is_an_error(tmp_path):
    code, _, stderr = train(
        tmp_path / "run",
        "--num_processes",
        "2",
        "--conf_param",
        "create_environment.num_parallel_environments=3",
    )
    assert code == 2
    assert (
        "create_environment.num_parallel_environments=3 is the total over the 2 learner "
        "processes and must divide by 2" in stderr
    )
    assert not (tmp_path / "run" / "train").exists()


def _train_two_rank_ppo_cart_pole(root, seed: int, env_steps: int, *params: str) -> None:
    """Train the example PPO CartPole conf on two ranks for ``env_steps`` (its schedules
    decay over them)."""
    args = ["--num_processes", "2", "--nostore_snapshot", "--random_seed", str(seed)]
    for param in (f"TrainerConfig.num_env_steps={env_steps}", *params):
        args += ["--conf_param", param]
    code, _, stderr = train(
        root, *args, conf=os.path.join(REPO, "alf", "examples", "ppo_cart_pole_conf.py")
    )
    assert code == 0, stderr[-3000:]


def test_ppo_cart_pole_on_two_ranks_learns(tmp_path):
    """12,000 steps on two ranks: the training return rises from a random policy's (about
    20) to at least 50. Measured for seeds 0-4 with torch's and MKL's AVX-512 and AVX2
    kernels and with the baseline ones: 70.8-164.8 (seed 0: 70.8 and 101.3)."""
    _train_two_rank_ppo_cart_pole(tmp_path / "run", 0, 12_000)
    returns = [v for _, v in scalars(tmp_path / "run" / "train", "Metrics/AverageReturn")]
    assert returns[0] < 30 and returns[-1] >= 50, returns


def _two_rank_ppo_cart_pole_best_eval(root, seed: int, env_steps: int) -> float:
    """The best evaluation return of ``_train_two_rank_ppo_cart_pole``, evaluated every 5
    iterations."""
    _train_two_rank_ppo_cart_pole(root, seed, env_steps, "TrainerConfig.eval_interval=5")
    return max(v for _, v in scalars(root / "eval", "Metrics/AverageReturn"))


@pytest.mark.slow
def test_ppo_cart_pole_on_two_ranks_reaches_475(tmp_path):
    """The median of three seeds' best evaluation return reaches 475 within 40,000 steps.

    Measured (best return, env steps of the first evaluation >= 475) for seeds 0-4 with
    torch's and MKL's AVX-512, AVX2 and baseline kernels: all 15 runs reach 500, the first
    >= 475 at 12,800-34,560 steps. A single seed is not enough on every CPU: seed 0
    evaluated every 20 iterations peaked at 392 on an AVX2-only AMD EPYC.
    """
    best = [
        _two_rank_ppo_cart_pole_best_eval(tmp_path / f"s{seed}", seed, 40_000) for seed in range(3)
    ]
    assert sorted(best)[1] >= 475, best


def test_torchrun_launch_trains_the_same_parameters(two_rank_run, tmp_path):
    import subprocess
    import sys

    root, _ = two_rank_run
    other = tmp_path / "torchrun"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node=2", "-m", "alf.bin.train", "--conf"]
    command += [os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py")]
    command += ["--root_dir", str(other), "--nostore_snapshot"]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_tensors(load_ckpt(other, 16)["algorithm"], load_ckpt(root, 16)["algorithm"])


def test_each_rank_with_its_own_server_sampler_trains_the_same_parameters(two_rank_run, tmp_path):
    """Two ranks, each acting through one remote sampler with server inference: every
    rank's server batch is its in-process step, so the run equals the plain two-rank run."""
    root, _ = two_rank_run
    other = tmp_path / "samplers"
    code, _, stderr = train(
        other,
        "--num_processes",
        "2",
        "--nostore_snapshot",
        "--conf_param",
        "SamplerConfig.num_samplers=1",
        "--conf_param",
        "SamplerConfig.inference='server'",
    )
    assert code == 0, stderr[-3000:]
    assert "Learner rank 1 of 2" in stderr
    assert_same_tensors(load_ckpt(other, 16)["algorithm"], load_ckpt(root, 16)["algorithm"])
