"""Every example conf trains for a couple of iterations and plays back, through the CLI."""

import glob
import importlib.util
import os
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "alf", "examples")
#: ALF-style base confs: they set no environment (DDPG's would fail on the default
#: CartPole); the confs of tests/confs/alf_style build on them (test_alf_style_confs.py).
BASE_CONFS = {"ppo_conf.py", "ppg_conf.py", "sac_conf.py", "ddpg_conf.py", "ppo.gin", "sac.gin"}
CONFS = sorted(
    os.path.basename(p)
    for p in glob.glob(os.path.join(EXAMPLES, "*_conf.py"))
    + glob.glob(os.path.join(EXAMPLES, "*.gin"))
    if os.path.basename(p) not in BASE_CONFS
)
_SHRINK = [
    "TrainerConfig.num_iterations=2",
    "TrainerConfig.num_env_steps=0",
    "TrainerConfig.unroll_length=8",
    "TrainerConfig.replay_buffer_length=8",
    "TrainerConfig.eval_interval=1",
    "TrainerConfig.num_eval_episodes=1",
    "TrainerConfig.num_eval_environments=1",
    "TrainerConfig.mini_batch_size=4",
    "TrainerConfig.initial_collect_steps=0",
]


def _needs_mujoco(conf: str) -> bool:
    with open(os.path.join(EXAMPLES, conf), encoding="utf-8") as f:
        return "mujoco" in f.read().lower()


def _needs_ale(conf: str) -> bool:
    with open(os.path.join(EXAMPLES, conf), encoding="utf-8") as f:
        return "suite_atari" in f.read()


def _needs(conf: str, suite: str) -> bool:
    with open(os.path.join(EXAMPLES, conf), encoding="utf-8") as f:
        return suite in f.read()


#: env suites whose package an example conf may need: (suite module, package, pip extra)
_SUITES = (
    ("suite_dmc", "dm_control", "dmc"),
    ("suite_robotics", "gymnasium_robotics", "robotics"),
    ("suite_minigrid", "minigrid", "minigrid"),
)


def _run(args, timeout=240):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def test_examples_exist():
    assert "ppo_cart_pole_conf.py" in CONFS and "ppo_cart_pole.gin" in CONFS
    assert "sac_sb3_conf.py" in CONFS
    assert all(os.path.isfile(os.path.join(EXAMPLES, name)) for name in BASE_CONFS)
    assert {"ac_cart_pole_conf.py", "ppo_pendulum_conf.py", "ppo_mujoco_conf.py"} <= set(CONFS)
    assert {"ppo_breakout_conf.py", "dqn_breakout_conf.py"} <= set(CONFS)
    assert {"dqn_cart_pole_conf.py", "qrdqn_cart_pole_conf.py"} <= set(CONFS)
    assert {"qrsac_halfcheetah_conf.py", "tqc_halfcheetah_conf.py"} <= set(CONFS)
    assert "redq_halfcheetah_conf.py" in CONFS


@pytest.mark.parametrize("conf", CONFS)
def test_example_trains_and_plays(conf, tmp_path):
    if _needs_mujoco(conf) and importlib.util.find_spec("mujoco") is None:
        pytest.skip("mujoco is not installed (pip install -e '.[mujoco]')")
    if _needs_ale(conf) and importlib.util.find_spec("ale_py") is None:
        pytest.skip("ale-py is not installed (pip install -e '.[atari]')")
    for suite, package, extra in _SUITES:
        if _needs(conf, suite) and importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed (pip install -e '.[{extra}]')")
    root_dir = str(tmp_path / "run")
    args = [
        "alf.bin.train",
        "--conf",
        os.path.join(EXAMPLES, conf),
        "--root_dir",
        root_dir,
        "--nostore_snapshot",
        "--random_seed",
        "0",
    ]
    for param in _SHRINK:
        args += ["--conf_param", param]
    train = _run(args)
    assert train.returncode == 0, train.stderr[-3000:]
    ckpts = os.listdir(os.path.join(root_dir, "train", "algorithm"))
    assert "ckpt-2.pt" in ckpts, ckpts
    assert any(n.startswith("events.") for n in os.listdir(os.path.join(root_dir, "eval")))
    success = {"sac_her_goal_conf.py": "is_success", "sac_her_fetchreach_conf.py": "success"}
    if conf in success:  # env_info's success at LAST: the success rate
        tags = EventAccumulator(os.path.join(root_dir, "eval")).Reload().Tags()["scalars"]
        assert f"Metrics/AverageEnvInfo/{success[conf]}" in tags, tags
    play = _run(["alf.bin.play", "--root_dir", root_dir, "--num_episodes", "1"])
    assert play.returncode == 0, play.stderr[-3000:]
    assert "return" in play.stdout.lower(), play.stdout
