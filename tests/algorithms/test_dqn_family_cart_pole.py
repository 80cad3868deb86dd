"""Slow: QR-DQN, dueling DQN and noisy DQN learn CartPole-v1 through the CLI, on the confs
of rl-baselines3-zoo's QR-DQN and DQN settings (50,000 env steps; minutes on one core):
an evaluation return of at least 195 (10 episodes) by the end."""

import os
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "alf", "examples")


def _eval_returns(conf, root_dir, *params):
    args = [sys.executable, "-m", "alf.bin.train", "--conf", os.path.join(EXAMPLES, conf)]
    args += ["--root_dir", str(root_dir), "--nostore_snapshot", "--random_seed", "0"]
    for param in params:
        args += ["--conf_param", param]
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=ROOT)
    result = subprocess.run(args, capture_output=True, text=True, timeout=3600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    events = EventAccumulator(str(root_dir / "eval"), size_guidance={"scalars": 0}).Reload()
    return [(e.step, e.value) for e in events.Scalars("Metrics/AverageReturn")]


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize(
    "conf, params",
    [
        ("qrdqn_cart_pole_conf.py", ()),
        ("dqn_cart_pole_conf.py", ("QNetwork.dueling=True",)),
        (
            "dqn_cart_pole_conf.py",
            ("QNetwork.noisy=True", "DqnAlgorithm.rollout_epsilon_greedy=0.0"),
        ),
    ],
    ids=["qrdqn", "dueling_dqn", "noisy_dqn"],
)
def test_learns_cart_pole(conf, params, tmp_path):
    returns = _eval_returns(conf, tmp_path / "run", *params)
    print("eval returns:", returns)
    assert returns[-1][1] >= 195.0
