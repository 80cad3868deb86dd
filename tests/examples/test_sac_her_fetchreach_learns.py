"""SAC + HER learns FetchReach (``alf/examples/sac_her_fetchreach_conf.py``): the evaluation's
success rate goes from 0 to at least 0.8 within 8,000 env steps (seed 0 reached 1.0 at 7,000;
about 8 minutes on a loaded 2-core machine, so marked slow: ``pytest -m slow``)."""

import importlib.util
import os
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

CONF = os.path.join(
    os.path.dirname(__file__), "..", "..", "alf", "examples", "sac_her_fetchreach_conf.py"
)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.skipif(
    importlib.util.find_spec("gymnasium_robotics") is None,
    reason="gymnasium-robotics is not installed (pip install -e '.[robotics]')",
)
def test_success_rate_goes_up(tmp_path):
    root_dir = str(tmp_path / "run")
    args = [sys.executable, "-m", "alf.bin.train", "--conf", CONF, "--root_dir", root_dir]
    args += ["--nostore_snapshot", "--random_seed", "0"]
    for param in ("num_env_steps=8000", "eval_interval=250", "num_eval_episodes=20"):
        args += ["--conf_param", f"TrainerConfig.{param}"]
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    train = subprocess.run(args, capture_output=True, text=True, timeout=1700, env=env)
    assert train.returncode == 0, train.stderr[-3000:]
    events = EventAccumulator(os.path.join(root_dir, "eval")).Reload()
    success = [e.value for e in events.Scalars("Metrics/AverageEnvInfo/success")]
    assert success[0] == 0.0 and max(success[-2:]) >= 0.8, success
