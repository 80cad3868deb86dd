"""Short seeded runs of three example confs reproduce a committed reference bit for bit.

``reference_runs.json`` holds, for PPO CartPole, SAC Pendulum and DQN CartPole run
through ``alf.bin.train`` with the overrides below, every ``Metrics/AverageReturn``
value written to ``train/`` and ``eval/`` (as exact float hex) and the sha256 of
every tensor of the final checkpoint's algorithm state (parameters, buffers,
optimizer state). A refactoring that changes none of the maths leaves all of them
unchanged; any change in what is computed, or in which random numbers are drawn in
which order, shows up here.

Floating-point results depend on the kernels that run, and torch, MKL, numpy and glibc's
libm each pick theirs by the CPU (AVX2, AVX-512, FMA): a run on another x86-64 CPU differs
in the last bits. The runs are therefore made with the kernels every x86-64 CPU has
(``PORTABLE_ENV``: torch's and numpy's baseline code paths, MKL's compatible mode, glibc
without its AVX and FMA variants, one thread), which makes them the same on any of them.
The reference records the torch, numpy and gymnasium versions and the architecture it was
made with, and the test is skipped under others. To record it again after an intended
change of behaviour::

    python tests/regression/test_example_reference.py --record
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys

import pytest
import torch

REFERENCE = os.path.join(os.path.dirname(__file__), "reference_runs.json")
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "alf", "examples")


def _numpy_dispatch_targets() -> str:
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__
    return " ".join(__cpu_dispatch__)


PORTABLE_ENV = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "NPY_DISABLE_CPU_FEATURES": _numpy_dispatch_targets(),
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX,-AVX2,-FMA,-FMA4,-AVX512F",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def _platform() -> dict:
    import gymnasium
    import numpy

    return {
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "gymnasium": gymnasium.__version__,
        "machine": platform.machine(),
    }


CASES = {
    "ppo_cart_pole": (
        "ppo_cart_pole_conf.py",
        [
            "TrainerConfig.num_env_steps=3072",
            "TrainerConfig.summary_interval=1",
            "TrainerConfig.eval_interval=4",
            "TrainerConfig.num_eval_episodes=4",
            "TrainerConfig.num_eval_environments=2",
        ],
    ),
    "sac_pendulum": (
        "sac_pendulum_conf.py",
        [
            "TrainerConfig.num_env_steps=1000",
            "TrainerConfig.summary_interval=100",
            "TrainerConfig.eval_interval=500",
            "TrainerConfig.num_eval_episodes=2",
            "TrainerConfig.num_eval_environments=2",
        ],
    ),
    "dqn_cart_pole": (
        "dqn_cart_pole_conf.py",
        [
            "TrainerConfig.num_env_steps=2048",
            "TrainerConfig.summary_interval=1",
            "TrainerConfig.eval_interval=2",
            "TrainerConfig.num_eval_episodes=4",
        ],
    ),
}


def run_case(name: str, root_dir: str) -> dict:
    """Train case ``name`` in ``root_dir``; return its return curves and parameter hashes."""
    conf, params = CASES[name]
    args = [
        sys.executable,
        "-m",
        "alf.bin.train",
        "--conf",
        os.path.join(EXAMPLES, conf),
        "--root_dir",
        root_dir,
        "--nostore_snapshot",
        "--random_seed",
        "0",
        "--num_threads",
        "1",
    ]
    for param in params:
        args += ["--conf_param", param]
    env = dict(os.environ, PYTHONWARNINGS="ignore", **PORTABLE_ENV)
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return {
        "train_return": _return_curve(os.path.join(root_dir, "train")),
        "eval_return": _return_curve(os.path.join(root_dir, "eval")),
        "final_state_sha256": _state_hashes(os.path.join(root_dir, "train", "algorithm")),
    }


def _return_curve(event_dir: str) -> list:
    """``[[step, float.hex(value)], ...]`` of ``Metrics/AverageReturn`` in ``event_dir``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(event_dir, size_guidance={"scalars": 0}).Reload()
    return [[e.step, float(e.value).hex()] for e in acc.Scalars("Metrics/AverageReturn")]


def _state_hashes(ckpt_dir: str) -> dict:
    """sha256 of every tensor in the newest checkpoint's algorithm state, by key path."""
    steps = [int(n[5:-3]) for n in os.listdir(ckpt_dir) if n[5:-3].isdigit()]
    path = os.path.join(ckpt_dir, f"ckpt-{max(steps)}.pt")
    state = torch.load(path, map_location="cpu", weights_only=True)["algorithm"]
    hashes = {}
    _hash_tree(state, "", hashes)
    return hashes


def _hash_tree(value, prefix: str, out: dict) -> None:
    if isinstance(value, torch.Tensor):
        data = value.detach().contiguous().cpu().reshape(-1)
        out[prefix] = hashlib.sha256(data.view(torch.uint8).numpy().tobytes()).hexdigest()
    elif isinstance(value, dict):
        for key, item in value.items():
            _hash_tree(item, f"{prefix}/{key}" if prefix else str(key), out)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _hash_tree(item, f"{prefix}/{i}", out)
    else:
        out[prefix] = repr(value)


def _load_reference() -> dict:
    with open(REFERENCE, encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_run_matches_reference(name, tmp_path):
    reference = _load_reference()
    if reference["platform"] != _platform():
        pytest.skip(f"reference recorded on {reference['platform']}, not {_platform()}")
    got = run_case(name, str(tmp_path / name))
    expected = reference["runs"][name]
    assert got["train_return"] == expected["train_return"]
    assert got["eval_return"] == expected["eval_return"]
    assert len(expected["train_return"]) >= 3 and len(expected["eval_return"]) >= 2
    changed = sorted(
        key
        for key in set(expected["final_state_sha256"]) | set(got["final_state_sha256"])
        if expected["final_state_sha256"].get(key) != got["final_state_sha256"].get(key)
    )
    assert not changed, f"final state differs from the reference in {changed}"


def _record() -> None:
    import tempfile

    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(CASES):
            runs[name] = run_case(name, os.path.join(tmp, name))
            print(
                f"{name}: {len(runs[name]['train_return'])} train and "
                f"{len(runs[name]['eval_return'])} eval returns"
            )
    with open(REFERENCE, "w", encoding="utf-8") as f:
        json.dump({"platform": _platform(), "runs": runs}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/regression/test_example_reference.py --record")
    _record()
