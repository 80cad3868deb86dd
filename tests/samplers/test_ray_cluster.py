"""Which Ray cluster the ``'ray'`` backend uses (``pip install alf[ray]``; skipped without
Ray): the one ``SamplerConfig.ray_address`` names, said in the log, and otherwise its own.

A "foreign" cluster is started as another program would (``ray start --head``, token
authentication, its address in ``ray_current_cluster`` of Ray's default temp dir, which
``RAY_TMPDIR`` points at a private directory for the module). ``alf.bin.train`` runs with
the samplers on Ray, in a child process given the same environment (plus ``RAY_ADDRESS``
in one test), and the foreign cluster's job table tells whether the run joined it: a job
whose driver is the run's process. The foreign cluster is stopped by killing its own
processes (its process group and those naming its temp dir), never with ``ray stop``,
which would stop every Ray process on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from types import SimpleNamespace

import pytest

from tests.samplers.conftest import TINY_PPO, sampler_params

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_RAY_CLI = [sys.executable, "-m", "ray.scripts.scripts"]
_PROBE = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print(json.dumps([job["DriverPid"] for job in ray._private.state.jobs()]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_of(group: int, marker: str) -> list:
    """The processes of process group ``group`` or naming ``marker``, and their children."""
    found = {}
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            in_group = os.getpgid(process.pid) == group
        except OSError:
            continue
        if in_group or marker in " ".join(process.info["cmdline"] or []):
            found[process.pid] = process
            with contextlib.suppress(psutil.Error):
                found.update((child.pid, child) for child in process.children(recursive=True))
    found.pop(os.getpid(), None)
    return list(found.values())


def _stop(group: int, marker: str) -> list:
    """Stop what ``_processes_of`` finds (SIGTERM, then SIGKILL); returns the survivors."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
        processes = _processes_of(group, marker)
        for process in processes:
            with contextlib.suppress(psutil.Error):
                process.send_signal(sig)
        _, alive = psutil.wait_procs(processes, timeout=wait)
        if not alive:
            return []
    return [p.pid for p in _processes_of(group, marker)]


@pytest.fixture(scope="module")
def foreign_cluster():
    """A cluster started by ``ray start --head`` in a private temp dir (short: Ray's socket
    paths must stay under 107 characters); ``env`` is the environment every process of the
    tests gets (Ray's default temp dir and alf's temp dir there, the cluster's token)."""
    base = tempfile.mkdtemp(prefix="alfrc", dir="/tmp")
    port = _free_port()
    env = dict(os.environ, RAY_TMPDIR=base, TMPDIR=base, RAY_AUTH_MODE="token")
    env["RAY_AUTH_TOKEN"] = uuid.uuid4().hex + uuid.uuid4().hex
    env.pop("RAY_ADDRESS", None)
    start = [*_RAY_CLI, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1"]
    start += [f"--temp-dir={base}/ray", "--num-cpus=2", "--include-dashboard=false"]
    start += ["--disable-usage-stats"]
    starter = subprocess.Popen(
        start, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        output, _ = starter.communicate(timeout=180)
        assert starter.returncode == 0, output.decode()[-3000:]
        with open(os.path.join(base, "ray", "ray_current_cluster")) as f:
            address = f.read().strip()
        yield SimpleNamespace(address=address, env=env, base=base)
    finally:
        starter.kill()
        survivors = _stop(starter.pid, base)
        shutil.rmtree(base, ignore_errors=True)
        assert survivors == [], f"foreign Ray processes left: {survivors}"


def _train(env: dict, root_dir, *params: str) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``alf.bin.train`` (2 iterations of tiny PPO, 2 Ray samplers); the result and the
    run's process id."""
    command = [sys.executable, "-m", "alf.bin.train", "--conf", TINY_PPO]
    command += ["--root_dir", str(root_dir), "--nostore_snapshot"]
    run_params = sampler_params(2, "local") + ["SamplerConfig.backend='ray'"]
    run_params += ["TrainerConfig.num_iterations=2", *params]
    for param in run_params:
        command += ["--conf_param", param]
    env = dict(env, PYTHONPATH=os.pathsep.join([REPO, env.get("PYTHONPATH", "")]))
    process = subprocess.Popen(
        command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        stdout, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr), process.pid


def _driver_pids(cluster) -> list[int]:
    """The process ids of the drivers of every job the foreign cluster has seen."""
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, cluster.address],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    return json.loads(probe.stdout.strip().splitlines()[-1])


def _assert_own_cluster_gone(cluster, stderr: str) -> None:
    """The run started its own local cluster in a new ``alf-ray-*`` dir under ``TMPDIR``
    (its log says so), and shut it down and removed the directory."""
    started = [line for line in stderr.splitlines() if "started a local Ray cluster" in line]
    assert len(started) == 1, stderr[-3000:]
    temp_dir = started[0].rsplit("(temp dir ", 1)[1].rstrip(")")
    assert os.path.dirname(temp_dir) == cluster.base
    assert os.path.basename(temp_dir).startswith("alf-ray-")
    assert not os.path.exists(temp_dir)
    processes = psutil.process_iter(["pid", "cmdline"])
    left = [p.info["pid"] for p in processes if temp_dir in " ".join(p.info["cmdline"] or [])]
    assert left == []


def test_does_not_join_a_cluster_started_on_the_machine(foreign_cluster, tmp_path):
    """No ``ray_address``, no ``RAY_ADDRESS``: ``ray.init()`` would join the cluster of the
    last ``ray start`` (``ray_current_cluster``); alf starts its own instead."""
    run, pid = _train(foreign_cluster.env, tmp_path / "run")
    assert run.returncode == 0, run.stderr[-3000:]
    assert pid not in _driver_pids(foreign_cluster)
    _assert_own_cluster_gone(foreign_cluster, run.stderr)


def test_ignores_ray_address_in_the_environment(foreign_cluster, tmp_path):
    """``RAY_ADDRESS`` naming the foreign cluster, no ``ray_address``: not joined, and one
    log line says the variable was ignored."""
    env = dict(foreign_cluster.env, RAY_ADDRESS=foreign_cluster.address)
    run, pid = _train(env, tmp_path / "run")
    assert run.returncode == 0, run.stderr[-3000:]
    assert pid not in _driver_pids(foreign_cluster)
    ignored = [line for line in run.stderr.splitlines() if "RAY_ADDRESS" in line]
    assert len(ignored) == 1 and "ignored" in ignored[0], run.stderr[-3000:]
    assert foreign_cluster.address in ignored[0]
    _assert_own_cluster_gone(foreign_cluster, run.stderr)


def test_joins_the_cluster_of_ray_address_and_says_so(foreign_cluster, tmp_path):
    """``SamplerConfig.ray_address``: the run trains on that cluster (its job is there), one
    log line names the address, and the cluster is still running afterwards; without the
    token's auth mode, the failure is one line."""
    address = foreign_cluster.address
    run, pid = _train(
        foreign_cluster.env, tmp_path / "run", f"SamplerConfig.ray_address={address!r}"
    )
    assert run.returncode == 0, run.stderr[-3000:]
    joined = [line for line in run.stderr.splitlines() if "joined the Ray cluster" in line]
    assert len(joined) == 1 and address in joined[0], run.stderr[-3000:]
    assert pid in _driver_pids(foreign_cluster)  # and the cluster still answers
    env_without_auth = dict(foreign_cluster.env)
    env_without_auth.pop("RAY_AUTH_MODE")
    run, _ = _train(env_without_auth, tmp_path / "other", f"SamplerConfig.ray_address={address!r}")
    assert run.returncode == 2
    assert "RAY_AUTH_MODE=token" in run.stderr.strip().splitlines()[-1]
