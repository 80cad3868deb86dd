"""Confs written the way ALF users write them (``tests/confs/alf_style/``: ALF's names and
import paths, a base conf from ``alf.examples``, ``Agent``, gin scopes) train through
``python -m alf.bin.train`` (``--conf`` or ALF's ``--gin_file``) and play back; the PPO one
solves CartPole-v0, the same way for the same seed."""

import os
import subprocess
import sys

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

CONFS = os.path.join(os.path.dirname(__file__), "..", "confs", "alf_style")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args, timeout=300):
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _train(conf, root_dir, *params, flag="--conf", seed=0, timeout=300):
    args = ["alf.bin.train", flag, os.path.join(CONFS, conf), "--root_dir", str(root_dir)]
    args += ["--nostore_snapshot", "--random_seed", str(seed)]
    for param in params:
        args += ["--conf_param", param]
    return _run(*args, timeout=timeout)


def _scalars(path, tag):
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def _checkpoints(root_dir):
    return sorted(os.listdir(os.path.join(root_dir, "train", "algorithm")))


def _algorithm_state(root_dir, name):
    path = os.path.join(root_dir, "train", "algorithm", name)
    return torch.load(path, map_location="cpu", weights_only=True)["algorithm"]


def test_ppo_conf_with_base_conf_from_alf_examples(tmp_path):
    root = tmp_path / "ppo"
    result = _train(
        "ppo_cart_pole_conf.py",
        root,
        "TrainerConfig.num_iterations=3",
        "create_environment.num_parallel_environments=2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-3.pt" in _checkpoints(root)
    # num_evals=4 over 3 iterations: an evaluation every iteration (num_iterations // 4 -> 1)
    assert [s for s, _ in _scalars(root / "eval", "Metrics/AverageReturn")] == [1, 2, 3]
    assert "summarize_gradient_noise_scale=True has no effect in alf" in result.stderr
    config = (root / "alf_config.py").read_text()
    assert "algorithm_ctor=alf.algorithms.agent.Agent" in config
    assert "optimizer=alf.optimizers.adam_tf.AdamTF(lr=0.001" in config
    assert "td_error_loss_fn=alf.utils.losses.element_wise_huber_loss" in config
    play = _run("alf.bin.play", "--root_dir", str(root), "--num_episodes", "1")
    assert play.returncode == 0, play.stderr[-3000:]


def test_a2c_trac_gin_conf_with_scopes_through_gin_file(tmp_path):
    root = tmp_path / "ac"
    result = _train("ac_cart_pole.gin", root, flag="--gin_file")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-6.pt" in _checkpoints(root)
    state = _algorithm_state(root, "ckpt-6.pt")
    # the scopes gave the actor 32 and the value network 48 hidden units
    assert tuple(state["_actor_network._encoding_net._fc_layers.0._weight"].shape) == (32, 4)
    assert tuple(state["_value_network._fc_layers.0._weight"].shape) == (48, 4)
    steps = _scalars(root / "train", "trac/adjust_steps")
    assert len(steps) == 6 and all(v >= 0 for _, v in steps)
    config = (root / "alf_config.py").read_text()
    assert "#   ac/alf.optimizers.optimizers.Adam.lr = 0.002" in config
    assert "#   actor/alf.networks.actor_distribution_networks.ActorDistributionNetwork" in config


def test_gin_file_and_conf_together_is_an_error(tmp_path):
    conf = os.path.join(CONFS, "ac_cart_pole.gin")
    result = _run(
        "alf.bin.train", "--conf", conf, "--gin_file", conf, "--root_dir", str(tmp_path / "x")
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "alf.bin.train: error: give either --conf or --gin_file"
    )


def test_sac_gin_conf_including_sac_gin(tmp_path):
    root = tmp_path / "sac_gin"
    result = _train("sac_pendulum.gin", root, flag="--gin_file")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-30.pt" in _checkpoints(root)
    assert "gym environment id 'Pendulum-v0' is not available in gymnasium; using " in (
        result.stderr
    )
    state = _algorithm_state(root, "ckpt-30.pt")
    assert tuple(state["_actor_network._encoding_net._fc_layers.1._weight"].shape) == (32, 32)
    optimizers = [v for k, v in state.items() if k.startswith("_optimizers.")]
    lrs = sorted(o["param_groups"][0]["lr"] for o in optimizers)
    assert lrs == [5e-4, 6e-4, 7e-4]  # actor/, critic/ and alpha/Adam.lr
    path = os.path.join(root, "train", "algorithm", "ckpt-30.pt")
    assert "replay_buffer" in torch.load(path, map_location="cpu", weights_only=True)


def test_sac_python_conf_with_import_config(tmp_path):
    root = tmp_path / "sac_py"
    result = _train("sac_cart_pole_conf.py", root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-30.pt" in _checkpoints(root)
    assert [s for s, _ in _scalars(root / "eval", "Metrics/AverageReturn")] == [15, 30]
    config = (root / "alf_config.py").read_text()
    assert "q_network_ctor=alf.networks.q_networks.QNetwork" in config


def test_dqn_conf_with_the_arguments_of_alf_dqn_breakout_conf(tmp_path):
    root = tmp_path / "dqn"
    result = _train("dqn_cart_pole_conf.py", root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-30.pt" in _checkpoints(root)
    assert [s for s, _ in _scalars(root / "eval", "Metrics/AverageReturn")] == [15, 30]
    config = (root / "alf_config.py").read_text()
    assert "critic_loss_ctor=functools.partial(alf.algorithms.td_loss.TDLoss, td_lambda=0.95)" in (
        config
    )
    assert "q_network_ctor=functools.partial(alf.networks.q_networks.QNetwork" in config
    state = _algorithm_state(root, "ckpt-30.pt")
    assert tuple(state["_q_network._fc_layers.0._weight"].shape) == (32, 4)
    optimizers = [v for k, v in state.items() if k.startswith("_optimizers.")]
    assert [o["param_groups"][0]["lr"] for o in optimizers] == [5e-4]  # q_optimizer's


def test_ddpg_python_conf(tmp_path):
    root = tmp_path / "ddpg"
    result = _train("ddpg_pendulum_conf.py", root)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-30.pt" in _checkpoints(root)
    assert "summarize_gradient_noise_scale=True has no effect in alf" in result.stderr
    assert len(_scalars(root / "eval", "Metrics/AverageReturn")) == 2
    assert "Configured values not used" not in result.stderr
    config = (root / "alf_config.py").read_text()
    assert "td_error_loss_fn=alf.utils.losses.element_wise_huber_loss" in config
    assert "target_update_tau=0.05" in config  # ALF's default, from alf.examples.ddpg_conf
    play = _run("alf.bin.play", "--root_dir", str(root), "--num_episodes", "1")
    assert play.returncode == 0, play.stderr[-3000:]


@pytest.mark.slow
def test_alf_style_ppo_solves_cart_pole_the_same_way_for_its_seed(tmp_path):
    """The full conf (200 iterations, 51,200 env steps) twice with seed 0: the last eval
    return is >= 195 (CartPole-v0's "solved"), and both runs evaluate the same."""
    returns = []
    for name in ("a", "b"):
        result = _train("ppo_cart_pole_conf.py", tmp_path / name, timeout=1800)
        assert result.returncode == 0, result.stderr[-3000:]
        returns.append(_scalars(tmp_path / name / "eval", "Metrics/AverageReturn"))
    print("eval returns:", returns[0])
    assert [s for s, _ in returns[0]] == [50, 100, 150, 200]
    assert returns[0][-1][1] >= 195.0
    assert returns[0] == returns[1]


def test_ppg_conf_with_the_settings_and_imports_of_alf_ppg_cart_pole_conf(tmp_path):
    """ALF's PPG conf as written (``alf.examples.ppg_conf``, ``PPGAuxOptions``,
    ``compute_advantages_internally``) for 8 iterations: the auxiliary phase runs once, at
    iteration 8, with 3 epochs of 64 unrolls in minibatches of 8: 24 updates."""
    root = tmp_path / "ppg"
    result = _train(
        "ppg_cart_pole_conf.py",
        root,
        "TrainerConfig.num_iterations=8",
        "TrainerConfig.summary_interval=1",
        "TrainerConfig.eval_interval=4",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-8.pt" in _checkpoints(root)
    assert [s for s, _ in _scalars(root / "eval", "Metrics/AverageReturn")] == [4, 8]
    # (a training summary's step counts the iterations before its own)
    assert _scalars(root / "train", "ppg_aux/num_updates") == [(7, 24.0)]
    assert "compute_advantages_internally=True has no effect in alf" in result.stderr
    state = _algorithm_state(root, "ckpt-8.pt")
    assert tuple(state["_network._actor_encoder._fc_layers.0._weight"].shape) == (100, 4)
    assert "_aux_optimizers.0" in state
    config = (root / "alf_config.py").read_text()
    assert "rl_algorithm_cls=alf.algorithms.ppg_algorithm.PPGAlgorithm" in config
    play = _run("alf.bin.play", "--root_dir", str(root), "--num_episodes", "1")
    assert play.returncode == 0, play.stderr[-3000:]
