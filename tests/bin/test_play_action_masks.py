"""``alf.bin.train`` then ``alf.bin.play`` of ``alf/examples/ppo_masked_choice_conf.py`` as a
user runs them: the played policy takes only legal actions (an illegal one would end its
episode early with -10) and plays the optimum, 10 per 10-step episode."""

import os

from tests.bin.test_train_play import EPISODE_RE, run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(REPO, "alf", "examples", "ppo_masked_choice_conf.py")


def test_train_then_play_masked_choice(tmp_path):
    root_dir = tmp_path / "run"
    code, _, stderr = run(
        "alf.bin.train",
        "--conf",
        CONF,
        "--root_dir",
        root_dir,
        "--conf_param",
        "TrainerConfig.random_seed=0",
        "--conf_param",
        "TrainerConfig.num_iterations=20",
    )
    assert code == 0, stderr[-3000:]
    code, stdout, stderr = run("alf.bin.play", "--root_dir", root_dir, "--num_episodes", 20)
    assert code == 0, stderr[-3000:]
    episodes = [(float(r), int(n)) for _, r, n in EPISODE_RE.findall(stdout)]
    assert len(episodes) == 20
    assert all(length == 10 for _, length in episodes)  # no illegal action ended one early
    assert sum(r for r, _ in episodes) / 20 >= 9.8  # the optimum is 10
