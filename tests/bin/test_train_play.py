"""``alf.bin.train`` and ``alf.bin.play`` as a user runs them: real subprocesses, real runs.

One 16-iteration tiny PPO CartPole run (``tests/confs/tiny_ppo_conf.py``, seed 1,
a checkpoint and an evaluation every 4 iterations) is shared by most tests;
processes that do not depend on each other run concurrently (2 cores).
"""

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import alf.nest as nest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_CONF = os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py")
METRICS = ["AverageReturn", "AverageEpisodeLength", "EnvironmentSteps", "NumberOfEpisodes"]
EPISODE_RE = re.compile(r"^Episode (\d+): return (-?[\d.]+), length (\d+)$", re.M)
CKPT_RE = re.compile(r"^ckpt-(\d+)\.pt$")
LOG_LINE_RE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.]+\.py:\d+\] ")
TIMEOUT = 120


def start(module, *args):
    """Start ``python -m module args`` in the repo, capturing text output, with SIGINT
    handled as in a terminal (the suite itself may run with SIGINT ignored, in the
    background of a non-interactive shell or under nohup, and children inherit that)."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def finish(proc, timeout=TIMEOUT):
    """``(returncode, stdout, stderr)`` of a started process (``timeout``: a bound
    against hangs)."""
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def run(module, *args):
    return finish(start(module, *args))


def train(root_dir, *args, conf=TINY_CONF):
    conf_args = ("--conf", conf) if conf else ()
    return run("alf.bin.train", *conf_args, "--root_dir", root_dir, *args)


def scalars(path, tag):
    """``[(step, value)]`` of ``tag`` in the event file(s) at ``path`` (a dir or a file)."""
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def scalar_tags(path):
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
    acc.Reload()
    return set(acc.Tags()["scalars"])


def event_files(directory):
    return sorted(
        (os.path.join(directory, n) for n in os.listdir(directory) if n.startswith("events.")),
        key=os.path.getmtime,
    )


def tree_hashes(root_dir):
    """``{relative path: sha256}`` of every file under ``root_dir``."""
    hashes = {}
    for directory, _, names in os.walk(root_dir):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                hashes[os.path.relpath(path, root_dir)] = hashlib.sha256(f.read()).hexdigest()
    return hashes


def load_ckpt(root_dir, step):
    path = os.path.join(root_dir, "train", "algorithm", f"ckpt-{step}.pt")
    return torch.load(path, map_location="cpu", weights_only=True)


def ckpt_steps(ckpt_dir):
    """Steps of the ``ckpt-<step>.pt`` files in ``ckpt_dir`` (none if it does not exist)."""
    if not os.path.isdir(ckpt_dir):
        return []
    return [int(m.group(1)) for m in map(CKPT_RE.match, os.listdir(ckpt_dir)) if m]


def assert_same_tensors(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            assert_same_tensors(a[key], b[key])
        elif isinstance(a[key], torch.Tensor):
            assert torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def one_error_line(stderr, program):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"alf.bin.{program}: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


class Runs:
    """Training processes started together (they share the 2 cores); ``root_dir(name)``
    waits for one and checks that it succeeded."""

    def __init__(self, base_dir):
        self._base_dir = base_dir
        self._procs = {}
        self._results = {}

    def start(self, name, *args, conf=TINY_CONF):
        root_dir = self._base_dir / name
        conf_args = ("--conf", conf) if conf else ()
        self._procs[name] = start("alf.bin.train", *conf_args, "--root_dir", root_dir, *args)

    def close(self):
        """Stop the processes nobody waited for (a test failed or was deselected)."""
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()

    def root_dir(self, name):
        if name not in self._results:
            self._results[name] = finish(self._procs[name])
        code, _, stderr = self._results[name]
        assert code == 0, stderr
        return self._base_dir / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The independent training runs of this module, all started at once."""
    runs = Runs(tmp_path_factory.mktemp("runs"))
    runs.start("reference")  # 16 iterations, seed 1 (from the conf), with the alf snapshot
    runs.start("same_seed", "--nostore_snapshot")
    runs.start("other_seed", "--nostore_snapshot", "--random_seed", 2)
    runs.start("first_half", "--nostore_snapshot", "--conf_param", "TrainerConfig.num_iterations=8")
    readme_conf = os.path.join(REPO, "alf", "examples", "ppo_cart_pole_conf.py")
    runs.start(
        "readme",
        "--nostore_snapshot",
        "--conf_param",
        "TrainerConfig.num_env_steps=512",
        conf=readme_conf,
    )
    yield runs
    runs.close()


@pytest.fixture(scope="module")
def trained_run(runs):
    """``root_dir`` of the reference run."""
    return str(runs.root_dir("reference"))


# -- train ---------------------------------------------------------------------------


def test_train_writes_the_root_dir_layout(trained_run):
    for name in [
        "alf_config.py",
        "config_files/run.json",
        "config_files/tiny_ppo_conf.py",
        "config_files/ppo_cart_pole_conf.py",
        "alf/__init__.py",
        "alf/bin/play.py",
    ]:
        assert os.path.isfile(os.path.join(trained_run, name)), name
    with open(os.path.join(trained_run, "alf_config.py")) as f:
        assert "TrainerConfig" in f.read()
    ckpts = sorted(os.listdir(os.path.join(trained_run, "train", "algorithm")))
    assert ckpts == ["ckpt-12.pt", "ckpt-16.pt", "ckpt-8.pt", "ckpt-best.pt"]
    for which in ("train", "eval"):
        tags = scalar_tags(os.path.join(trained_run, which))
        for metric in METRICS:
            assert f"Metrics/{metric}" in tags, (which, metric)
            assert f"Metrics_vs_EnvironmentSteps/{metric}" in tags, (which, metric)
    train_dir = os.path.join(trained_run, "train")
    steps = scalars(train_dir, "Metrics/EnvironmentSteps")
    assert steps == [(i, 32.0 * i) for i in range(1, 17)]  # 2 envs x 16 steps per iteration
    eval_returns = scalars(os.path.join(trained_run, "eval"), "Metrics/AverageReturn")
    assert [s for s, _ in eval_returns] == [4, 8, 12, 16]
    by_env_steps = scalars(train_dir, "Metrics_vs_EnvironmentSteps/AverageReturn")
    assert [s for s, _ in by_env_steps] == [32 * i for i in range(1, 17)]


def test_readme_main_job(runs):
    """The README's job, ``alf/examples/ppo_cart_pole_conf.py``, with fewer env steps."""
    root_dir = runs.root_dir("readme")
    assert load_ckpt(root_dir, 2)["env_steps"] == 512  # 8 envs x 32 steps per iteration
    assert scalars(root_dir / "eval", "Metrics/NumberOfEpisodes")[-1][1] >= 10


def test_same_seed_same_curves_different_seed_different(runs, trained_run):
    for which in ("train", "eval"):
        reference = scalars(os.path.join(trained_run, which), "Metrics/AverageReturn")
        assert len(reference) == (16 if which == "train" else 4)
        assert scalars(runs.root_dir("same_seed") / which, "Metrics/AverageReturn") == reference
    reference = scalars(os.path.join(trained_run, "train"), "Metrics/AverageReturn")
    assert scalars(runs.root_dir("other_seed") / "train", "Metrics/AverageReturn") != reference


def test_resume_in_a_new_process_matches_the_uninterrupted_run(runs, trained_run):
    root_dir = runs.root_dir("first_half")
    assert max(ckpt_steps(root_dir / "train" / "algorithm")) == 8
    # resumed from the run record alone; the new --conf_param wins over the recorded one
    code, _, stderr = train(root_dir, "--conf_param", "TrainerConfig.num_iterations=16", conf=None)
    assert code == 0, stderr
    assert "Resumed from iteration 8 (256 env steps)" in stderr
    first, second = event_files(root_dir / "train")
    assert [s for s, _ in scalars(first, "Metrics/AverageReturn")] == list(range(1, 9))
    assert [s for s, _ in scalars(second, "Metrics/AverageReturn")] == list(range(9, 17))
    for which in ("train", "eval"):
        reference = scalars(os.path.join(trained_run, which), "Metrics/AverageReturn")
        assert scalars(root_dir / which, "Metrics/AverageReturn") == reference
    resumed, full = load_ckpt(root_dir, 16), load_ckpt(trained_run, 16)
    assert_same_tensors(resumed["algorithm"], full["algorithm"])
    assert (resumed["iteration"], resumed["env_steps"]) == (16, 512)
    run_json = (root_dir / "config_files" / "run.json").read_text()
    assert "TrainerConfig.num_iterations=16" in run_json


def test_sigterm_and_sigint_checkpoint_and_exit_zero(tmp_path):
    procs = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            root_dir = tmp_path / sig.name
            args = ["--conf", TINY_CONF, "--root_dir", root_dir, "--nostore_snapshot"]
            args += ["--conf_param", "TrainerConfig.num_iterations=100000"]
            procs[sig] = (root_dir, start("alf.bin.train", *args))
        for sig, (root_dir, proc) in procs.items():
            check_stops_on_signal(sig, root_dir, proc)
    finally:
        for _, proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def check_stops_on_signal(sig, root_dir, proc):
    """Once training has written a checkpoint, ``sig`` makes it checkpoint and exit 0."""
    ckpt_dir = root_dir / "train" / "algorithm"
    deadline = time.time() + TIMEOUT
    while not ckpt_steps(ckpt_dir) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, finish(proc)
    proc.send_signal(sig)
    signalled = time.time()
    code, _, stderr = finish(proc)
    assert code == 0, stderr
    assert time.time() - signalled < TIMEOUT  # a bound against hangs (about 1 s when idle)
    assert f"Received {sig.name}: saving a checkpoint and stopping" in stderr
    assert "Traceback" not in stderr
    last = max(ckpt_steps(ckpt_dir))
    assert last >= 4
    assert load_ckpt(root_dir, last)["iteration"] == last
    # the newest checkpoint holds the last iteration trained (a summary every iteration),
    # whether the signal came in the middle of an iteration or right after a checkpoint
    trained = max(step for step, _ in scalars(root_dir / "train", "Metrics/EnvironmentSteps"))
    assert trained == last


# -- bad input -----------------------------------------------------------------------

BAD_TRAIN_INPUTS = {
    "missing_conf": (["--conf", "tests/confs/no_such_conf.py"], "no_such_conf.py"),
    "unknown_configurable": (["--conf_param", "NoSuchThing.x=1"], "NoSuchThing"),
    "typo_argument": (["--conf_param", "TrainerConfig.unroll_lenght=3"], "unroll_length"),
    "malformed_conf_param": (["--conf_param", "TrainerConfig.unroll_length"], "'='"),
    "unknown_env": (["--conf_param", "create_environment.env_name='CartPoel-v1'"], "CartPole-v1"),
    "float_for_int": (
        ["--conf_param", "TrainerConfig.unroll_length=8.5"],
        "TrainerConfig.unroll_length=8.5: expected an int, got float",
    ),
    "str_for_int": (
        ["--conf_param", "TrainerConfig.unroll_length='eight'"],
        "TrainerConfig.unroll_length='eight': expected an int, got str",
    ),
    "no_optimizer": (
        ["--conf_param", "PPOAlgorithm.optimizer=None"],
        "PPOAlgorithm: the parameters of _actor_network (ActorDistributionNetwork), "
        "_value_network (ValueNetwork) have no optimizer",
    ),
    "conf_param_the_conf_overrides": (  # the conf calls Adam(lr=...): lr is explicit there
        ["--conf_param", "Adam.lr=1e30"],
        "the command-line value Adam.lr=1e+30 was not applied: every call of Adam passed 'lr'",
    ),
    "changed_network": (  # resuming the CartPole run with a conf that builds other shapes
        ["--conf_param", "create_environment.env_name='Acrobot-v1'"],
        "does not fit the algorithm the conf builds (4 shapes differ: "
        "_actor_network._encoding_net._fc_layers.0._weight (checkpoint [64, 4], built [64, 6])",
    ),
}


@pytest.fixture(scope="module")
def bad_train_results(trained_run, tmp_path_factory):
    """Each bad input run concurrently on its own copy of the reference run:
    ``{case: (returncode, stderr, hashes before, hashes after)}``."""
    before = tree_hashes(trained_run)
    started = {}
    for case, (args, _) in BAD_TRAIN_INPUTS.items():
        root_dir = tmp_path_factory.mktemp(case) / "run"
        shutil.copytree(trained_run, root_dir)
        conf_args = [] if "--conf" in args else ["--conf", TINY_CONF]
        started[case] = (
            root_dir,
            start("alf.bin.train", *conf_args, "--root_dir", root_dir, *args),
        )
    results = {}
    for case, (root_dir, proc) in started.items():
        code, _, stderr = finish(proc)
        results[case] = (code, stderr, before, tree_hashes(root_dir))
    return results


@pytest.mark.parametrize("case", sorted(BAD_TRAIN_INPUTS))
def test_train_bad_input_one_error_line_exit_2_nothing_written(case, bad_train_results):
    code, stderr, before, after = bad_train_results[case]
    assert code == 2, stderr
    assert BAD_TRAIN_INPUTS[case][1] in one_error_line(stderr, "train")
    assert after == before


def test_train_on_a_root_dir_whose_checkpoints_are_all_truncated_is_one_line(trained_run, tmp_path):
    root_dir = tmp_path / "truncated"
    shutil.copytree(trained_run, root_dir)
    ckpt_dir = root_dir / "train" / "algorithm"
    for step in ckpt_steps(ckpt_dir):
        path = ckpt_dir / f"ckpt-{step}.pt"
        path.write_bytes(path.read_bytes()[:100])
    before = tree_hashes(root_dir)
    code, _, stderr = train(root_dir)
    assert code == 2, stderr
    line = one_error_line(stderr, "train")
    assert line.startswith(f"alf.bin.train: error: None of the checkpoints in {ckpt_dir} can be")
    assert tree_hashes(root_dir) == before


# -- play ----------------------------------------------------------------------------


def played_episodes(stdout):
    episodes = [(int(i), float(r), int(n)) for i, r, n in EPISODE_RE.findall(stdout)]
    assert [i for i, _, _ in episodes] == list(range(1, len(episodes) + 1)), stdout
    return episodes


def test_play_prints_episodes_and_records_a_gif(trained_run, tmp_path, monkeypatch):
    pil_image = pytest.importorskip("PIL.Image")
    for name in ("XDG_RUNTIME_DIR", "SDL_VIDEODRIVER", "SDL_AUDIODRIVER"):
        monkeypatch.delenv(name, raising=False)  # no desktop session, as on a server
    gif = tmp_path / "play.gif"
    code, stdout, stderr = run(
        "alf.bin.play",
        "--root_dir",
        trained_run,
        "--num_episodes",
        3,
        "--record_file",
        gif,
        "--conf_param",
        "suite_gym.load.max_episode_steps=20",
    )
    assert code == 0, stderr
    # nothing but alf's log lines: no "error: XDG_RUNTIME_DIR is invalid" from SDL
    assert not [line for line in stderr.splitlines() if not LOG_LINE_RE.match(line)], stderr
    episodes = played_episodes(stdout)
    assert len(episodes) == 3
    for _, episode_return, length in episodes:
        assert 1 <= length <= 20
        assert episode_return == length  # CartPole: reward 1 per step
    mean = sum(n for _, _, n in episodes) / 3
    assert f"Mean over 3 episodes: return {mean:.3f}, length {mean:.1f}" in stdout
    # one frame after the reset and after every step, for each episode
    num_frames = sum(n + 1 for _, _, n in episodes)
    assert f"Video of {num_frames} frames written to {gif}" in stdout
    with pil_image.open(gif) as video:  # (pillow merges identical consecutive frames)
        assert video.size == (600, 400) and 1 < video.n_frames <= num_frames


def test_play_refuses_a_checkpoint_with_non_finite_weights(trained_run, tmp_path):
    root_dir = tmp_path / "poisoned"
    shutil.copytree(trained_run, root_dir)
    path = root_dir / "train" / "algorithm" / "ckpt-16.pt"
    state = torch.load(path, weights_only=True)
    name = next(  # the first float tensor of the state, in nest order
        p for p, v in nest.flatten_with_path(state["algorithm"]) if v.is_floating_point()
    )
    state["algorithm"][name] = torch.full_like(state["algorithm"][name], float("nan"))
    torch.save(state, path)
    before = tree_hashes(root_dir)
    code, _, stderr = run("alf.bin.play", "--root_dir", root_dir, "--num_episodes", 1)
    assert code == 2
    assert stderr.strip() == (
        f"alf.bin.play: error: the checkpoint {path} holds non-finite weights: "
        f"algorithm.{name} (nan)"
    )
    assert tree_hashes(root_dir) == before


def test_play_mp4_needs_the_ffmpeg_plugin(trained_run, tmp_path):
    mp4 = tmp_path / "play.mp4"
    code, stdout, stderr = run(
        "alf.bin.play",
        "--root_dir",
        trained_run,
        "--num_episodes",
        1,
        "--record_file",
        mp4,
        "--conf_param",
        "suite_gym.load.max_episode_steps=10",
    )
    try:
        import imageio  # noqa: F401
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        assert code == 2
        assert "pip install imageio imageio-ffmpeg" in one_error_line(stderr, "play")
        assert not mp4.exists()
    else:
        assert code == 0, stderr
        assert mp4.stat().st_size > 0
        assert len(played_episodes(stdout)) == 1


def test_play_use_alf_snapshot_runs_the_snapshot_code(trained_run, tmp_path):
    root_dir = tmp_path / "run"
    shutil.copytree(trained_run, root_dir)
    snapshot_play = root_dir / "alf" / "bin" / "play.py"
    source = snapshot_play.read_text()
    marker = "print('SNAPSHOT-PLAY-MARKER', flush=True)\n"
    snapshot_play.write_text(
        source.replace("\nimport functools\n", f"\n{marker}import functools\n")
    )
    common = ["--root_dir", root_dir, "--num_episodes", 2, "--best"]
    installed = start("alf.bin.play", *common)
    snapshot = start("alf.bin.play", *common, "--use_alf_snapshot")
    bad_step = start(
        "alf.bin.play", "--root_dir", root_dir, "--use_alf_snapshot", "--checkpoint_step", 5
    )
    code, stdout, stderr = finish(installed)
    assert code == 0, stderr
    assert "SNAPSHOT-PLAY-MARKER" not in stdout
    assert "alf snapshot" not in stderr
    installed_episodes = played_episodes(stdout)
    code, stdout, stderr = finish(snapshot)
    assert code == 0, stderr
    assert stdout.startswith("SNAPSHOT-PLAY-MARKER\n")
    used = f"] Using the alf snapshot {os.path.realpath(root_dir / 'alf')} (alf imported from it)"
    assert len([line for line in stderr.splitlines() if line.endswith(used)]) == 1, stderr
    assert played_episodes(stdout) == installed_episodes
    code, stdout, stderr = finish(bad_step)  # the exit status of the snapshot process
    assert code == 2
    assert "available steps: [8, 12, 16]" in one_error_line(stderr, "play")


def test_play_bad_input(trained_run, tmp_path):
    no_snapshot = tmp_path / "no_snapshot"
    shutil.copytree(trained_run, no_snapshot, ignore=shutil.ignore_patterns("alf"))
    no_ckpt = tmp_path / "no_ckpt"
    shutil.copytree(trained_run, no_ckpt, ignore=shutil.ignore_patterns("train"))
    ckpt = os.path.join(
        trained_run,
        "train",
        "algorithm",
        f"ckpt-{max(ckpt_steps(os.path.join(trained_run, 'train', 'algorithm')))}.pt",
    )
    stray = tmp_path / "stray.pt"
    shutil.copy(ckpt, stray)
    garbage = no_snapshot / "garbage.pt"  # in a copy of the run: the shared one stays as is
    with open(garbage, "wb") as f:
        f.write(b"not a checkpoint")
    cases = [
        (["--root_dir", tmp_path / "missing"], "does not exist"),
        (["--root_dir", tmp_path], "no training run"),
        (["--root_dir", no_snapshot, "--use_alf_snapshot"], "--nostore_snapshot"),
        (["--root_dir", no_ckpt], "has no checkpoint"),
        (["--root_dir", trained_run, "--checkpoint_step", 3], "ckpt-3.pt does not exist"),
        (["--root_dir", trained_run, "--record_file", tmp_path / "x.avi"], ".mp4"),
        (["--checkpoint", tmp_path / "none.pt"], "none.pt is not a file"),
        (["--checkpoint", ckpt, "--best"], "give --checkpoint alone"),
        (["--checkpoint", stray], "no training run (config_files/run.json) above"),
        (["--checkpoint", garbage], "garbage.pt cannot be loaded safely"),
    ]
    procs = [(start("alf.bin.play", *args), expected) for args, expected in cases]
    for proc, expected in procs:
        code, _, stderr = finish(proc)
        assert code == 2, stderr
        assert expected in one_error_line(stderr, "play")
