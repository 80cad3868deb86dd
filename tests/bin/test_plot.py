"""``alf.bin.plot`` and ``alf.utils.curves``: learning curves of two real tiny runs (PPO
CartPole, seeds 1 and 2) checked against their event files, and synthetic curves for the
grouping and interpolation rules."""

import os

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from alf.utils import curves
from tests.bin.test_train_play import REPO, finish, start

TINY_CONF = os.path.join(REPO, "tests", "confs", "tiny_ppo_conf.py")
TAG = "Metrics/AverageReturn"

try:
    import matplotlib  # noqa: F401

    HAS_MATPLOTLIB = True
except ImportError:
    HAS_MATPLOTLIB = False

needs_matplotlib = pytest.mark.skipif(not HAS_MATPLOTLIB, reason="needs alf[plot]")


def _plot(*args):
    return finish(start("alf.bin.plot", *args), timeout=180)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two 8-iteration runs (seeds 1 and 2, evaluated every 4 iterations): their dirs."""
    parent = tmp_path_factory.mktemp("ppo_cart_pole")
    dirs = [str(parent / f"seed{s}") for s in (1, 2)]
    procs = [
        start(
            "alf.bin.train",
            "--conf",
            TINY_CONF,
            "--root_dir",
            d,
            "--random_seed",
            s,
            "--nostore_snapshot",
            "--conf_param",
            "TrainerConfig.num_iterations=8",
        )
        for s, d in zip((1, 2), dirs)
    ]
    for proc in procs:
        code, _, stderr = finish(proc, timeout=180)
        assert code == 0, stderr[-3000:]
    return dirs


def _scalars(directory, tag):
    acc = EventAccumulator(directory, size_guidance={"scalars": 0})
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars(tag)}


def test_curves_match_the_event_files(runs):
    (curve,) = curves.learning_curves(runs, TAG)  # one group: seed1, seed2
    assert curve.label == os.path.basename(os.path.dirname(runs[0])) and curve.runs == runs
    # eval/ has the tag: iterations 4 and 8 (eval_interval 4); x = env steps (2 envs x 16 steps)
    evals = [_scalars(os.path.join(r, "eval"), TAG) for r in runs]
    assert [sorted(e) for e in evals] == [[4, 8], [4, 8]]
    env_steps = [_scalars(os.path.join(r, "train"), "Metrics/EnvironmentSteps") for r in runs]
    assert env_steps[0][4] == env_steps[1][4] == 4 * 32 and env_steps[0][8] == 8 * 32
    np.testing.assert_array_equal(curve.x, [128.0, 256.0])
    values = np.array([[e[4], e[8]] for e in evals], dtype=np.float64)
    np.testing.assert_allclose(curve.values, values)
    np.testing.assert_allclose(curve.mean, values.mean(axis=0))
    np.testing.assert_allclose(curve.std, values.std(axis=0, ddof=1))
    assert curve.std.max() > 0  # two seeds that differ: the band is not empty


def test_train_source_and_iterations(runs):
    (curve,) = curves.learning_curves(runs, TAG, x="iteration", source="train")
    train = [_scalars(os.path.join(r, "train"), TAG) for r in runs]
    common = sorted(set(train[0]) & set(train[1]))
    assert sorted(train[0]) == sorted(train[1]) and len(common) >= 6
    np.testing.assert_array_equal(curve.x, common)
    expected = np.array([[t[i] for i in common] for t in train], dtype=np.float64)
    np.testing.assert_allclose(curve.mean, expected.mean(axis=0))


def test_the_final_point_is_at_the_last_evaluation_env_steps(tmp_path):
    """Train summaries every 3 iterations (after iterations 1, 4, 7), evaluations after 4
    and 8: the last evaluation is at 8 x 32 env steps, past the last EnvironmentSteps."""
    run = str(tmp_path / "run")
    args = ["--conf", TINY_CONF, "--root_dir", run, "--nostore_snapshot"]
    args += ["--conf_param", "TrainerConfig.num_iterations=8"]
    args += ["--conf_param", "TrainerConfig.summary_interval=3"]
    code, _, stderr = finish(start("alf.bin.train", *args), timeout=180)
    assert code == 0, stderr[-3000:]
    env_steps = _scalars(os.path.join(run, "train"), "Metrics/EnvironmentSteps")
    assert env_steps == {1: 32, 4: 128, 7: 224}
    (curve,) = curves.learning_curves([run], TAG)
    np.testing.assert_array_equal(curve.x, [128.0, 256.0])
    # a tag without a Metrics_vs_EnvironmentSteps twin: extrapolated past iteration 7
    (timing,) = curves.learning_curves([run], "time/eval")
    np.testing.assert_array_equal(timing.x, [128.0, 256.0])


def test_group_pattern_makes_one_curve_per_seed(runs):
    result = curves.learning_curves(runs, TAG, group=r"seed(\d)")
    assert [c.label for c in result] == ["1", "2"]
    assert all(len(c.runs) == 1 and not c.std.any() for c in result)


@needs_matplotlib
def test_cli_writes_a_png(runs, tmp_path):
    output = tmp_path / "curves.png"
    code, stdout, stderr = _plot("--root_dirs", *runs, "--output", output)
    assert code == 0, stderr[-3000:]
    with open(output, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    assert (width, height) == (700, 450)
    label = os.path.basename(os.path.dirname(runs[0]))
    assert f"{label}: 2 run(s), 2 points" in stdout and f"Wrote {output}" in stdout
    # the parent directory holds the two runs: the same curve
    code, stdout2, stderr = _plot("--root_dirs", os.path.dirname(runs[0]), "--output", output)
    assert code == 0, stderr[-3000:]
    assert stdout2.splitlines()[0] == stdout.splitlines()[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--root_dirs", "/nonexistent/run", "--output", "{tmp}/c.png"], "is not a directory"),
        (["--root_dirs", "{run}", "--output", "{tmp}/c.txt"], "--output must end with one of"),
        (["--root_dirs", "{run}", "--output", "/nonexistent/c.png"], "directory of --output"),
        (["--root_dirs", "{run}", "--output", "{tmp}/c.png", "--tag", "No/Such"], "'No/Such'"),
        (["--root_dirs", "{run}", "--output", "{tmp}/c.png", "--group", "("], "not a regular"),
        (["--root_dirs", "{run}", "--output", "{tmp}/c.png", "--group", "zzz"], "does not match"),
        (["--root_dirs", "{tmp}", "--output", "{tmp}/c.png"], "holds no training run"),
        (["--root_dirs", "{run}", "--output", "{tmp}/c.png", "--x", "time"], "invalid choice"),
    ],
)
@needs_matplotlib
def test_bad_input_is_one_line(runs, tmp_path, args, message):
    args = [a.format(tmp=tmp_path, run=runs[0]) for a in args]
    code, stdout, stderr = _plot(*args)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("alf.bin.plot: error: ") and message in lines[0]
    assert not os.path.exists(tmp_path / "c.png")


# -- synthetic curves -------------------------------------------------------------------


def test_default_groups_strip_seed_suffixes():
    runs = ["/e/ppo/seed1", "/e/ppo/seed2", "/e/g/lr=0.1-r0", "/e/g/lr=0.1-r1", "/e/sac/3"]
    runs += ["/e/g/lr=0.2", "/e/g/unroll_length=16", "/e/x/a_seed_2"]
    assert curves.group_runs(runs) == {
        "ppo": ["/e/ppo/seed1", "/e/ppo/seed2"],
        "lr=0.1": ["/e/g/lr=0.1-r0", "/e/g/lr=0.1-r1"],
        "sac": ["/e/sac/3"],
        "lr=0.2": ["/e/g/lr=0.2"],
        "unroll_length=16": ["/e/g/unroll_length=16"],
        "a": ["/e/x/a_seed_2"],
    }


def test_aggregate_interpolates_runs_with_other_x():
    a = curves.Curve("a", "eval", np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0]))
    b = curves.Curve("b", "eval", np.array([5.0, 15.0, 30.0]), np.array([1.0, 1.0, 4.0]))
    result = curves.aggregate("ab", [a, b], num_points=3)
    np.testing.assert_allclose(result.x, [5.0, 12.5, 20.0])  # the range both cover
    np.testing.assert_allclose(result.values, [[5.0, 12.5, 20.0], [1.0, 1.0, 2.0]])
    np.testing.assert_allclose(result.mean, [3.0, 6.75, 11.0])
    np.testing.assert_allclose(result.std, np.std(result.values, axis=0, ddof=1))
    c = curves.Curve("c", "eval", np.array([40.0, 50.0]), np.array([1.0, 2.0]))
    with pytest.raises(curves.CurveError, match="no common range"):
        curves.aggregate("ac", [a, c])
