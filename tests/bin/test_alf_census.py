"""``alf.bin.alf_census`` on a made-up ALF checkout: a conf that runs, one that needs an
algorithm alf lacks, one that needs an env suite, one refused with its first error line, a
helper module that is not a conf; blockers counted; bad input in one line."""

import json
import subprocess
import sys

import pytest

from alf.bin import alf_census
from tests.bin.test_train_play import REPO

FILES = {
    "ppo_tiny_conf.py": """
import alf
from alf.examples import ppo_conf
alf.config("create_environment", env_name="CartPole-v0", num_parallel_environments=2,
           nonparallel=True)
alf.config("Agent", optimizer=alf.optimizers.Adam(lr=1e-3))
alf.config("TrainerConfig", unroll_length=8, mini_batch_length=1, num_updates_per_train_iter=1)
""",
    "muzero_conf.py": """
import alf
from alf.algorithms.muzero_algorithm import MuzeroAlgorithm
alf.config("TrainerConfig", algorithm_ctor=MuzeroAlgorithm)
""",
    "second_muzero_conf.py": """
import alf
from alf.examples import muzero_conf
""",
    "socialbot_conf.py": """
import alf
from alf.environments import suite_socialbot
alf.config("create_environment", env_load_fn=suite_socialbot.load)
""",
    "bad_arg.gin": """
SacAlgorithm.no_such_argument = 1
""",
    "networks/helper.py": """
def encoder(spec):
    return spec
""",
}


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    alf_dir = tmp_path_factory.mktemp("alf_checkout")
    for rel, text in FILES.items():
        path = alf_dir / "alf" / "examples" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out = tmp_path_factory.mktemp("census")
    cmd = [sys.executable, "-m", "alf.bin.alf_census", "--alf_dir", str(alf_dir), "--jobs", "2"]
    cmd += ["--output", str(out / "census.md"), "--json", str(out / "census.json")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "census.json") as f:
        verdicts = {v["file"]: v for v in json.load(f)}
    return done.stdout, (out / "census.md").read_text(), verdicts


def test_each_file_gets_its_verdict(census):
    stdout, _, verdicts = census
    assert {k: v["verdict"] for k, v in verdicts.items()} == {
        "ppo_tiny_conf.py": "runs",
        "muzero_conf.py": "needs an algorithm",
        "second_muzero_conf.py": "needs an algorithm",
        "socialbot_conf.py": "needs an env suite",
        "bad_arg.gin": "refused",
        "networks/helper.py": "not a conf",
    }
    assert verdicts["muzero_conf.py"]["blocker"] == "alf.algorithms.muzero_algorithm"
    assert verdicts["bad_arg.gin"]["blocker"] == "SacAlgorithm.no_such_argument"
    assert "no configurable argument 'no_such_argument'" in verdicts["bad_arg.gin"]["error"]
    assert stdout.startswith("6 files: ")


def test_blockers_are_ranked_by_the_confs_they_block(census):
    _, table, _ = census
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `alf.algorithms.muzero_algorithm` | needs an algorithm | 2 |")


def test_classify_reads_the_first_error_line():
    verdict, blocker, error = alf_census.classify(
        1,
        "W noise\nalf.bin.train: error: x.py, line 3: ImportError: cannot import name "
        "'SGDEntropyTargetAlgorithm' from 'alf.algorithms.entropy_target_algorithm'\n",
    )
    assert verdict == "needs an algorithm"
    assert blocker == "alf.algorithms.entropy_target_algorithm.SGDEntropyTargetAlgorithm"
    assert error.startswith("x.py, line 3: ImportError")
    assert alf_census.classify(None, "")[0] == "timed out"
    assert (
        alf_census.classify(1, "gymnasium.error.DependencyNotInstalled: Box2D is not installed")[0]
        == "needs an env suite"
    )


def test_bad_input_is_one_line(tmp_path):
    cmd = [sys.executable, "-m", "alf.bin.alf_census", "--alf_dir", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"alf_census: error: --alf_dir {tmp_path}: no alf/examples directory in it"
    ]


def test_only_runs_the_selected_confs_with_every_file_staged(tmp_path):
    """``--only`` selects what runs; the other files are still staged, so a selected
    conf that imports one of them finds it (and is blocked by what that one needs)."""
    alf_dir = tmp_path / "alf_checkout"
    for rel in ("muzero_conf.py", "second_muzero_conf.py"):
        path = alf_dir / "alf" / "examples" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FILES[rel])
    out = tmp_path / "census.json"
    cmd = [sys.executable, "-m", "alf.bin.alf_census", "--alf_dir", str(alf_dir)]
    cmd += ["--only", "second_", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out) as f:
        verdicts = json.load(f)
    assert [v["file"] for v in verdicts] == ["second_muzero_conf.py"]
    assert verdicts[0]["verdict"] == "needs an algorithm", verdicts[0]
