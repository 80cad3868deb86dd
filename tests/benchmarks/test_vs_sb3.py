"""The alf-vs-SB3 driver: a run's numbers from its evaluations, and RESULTS.md blocks that
regenerate exactly from the committed results files."""

import importlib

import pytest

from benchmarks.harness import report, vs_sb3
from benchmarks.harness.interleave import Turns


def _block(name: str) -> str:
    with open(report.RESULTS_MD) as f:
        text = f.read()
    return text.split(f"<!-- {name} -->\n")[1].split(f"\n<!-- /{name} -->")[0]


def test_result_uses_running_time_and_threshold():
    task = importlib.import_module("benchmarks.sac_pendulum").TASK  # learning_starts 100
    turns = Turns(start=0.0, stops=[[5.0, 7.0]], end=20.0, cpu_s=10.0)
    evals = [[100, -500.0, 2.0, 3.0], [200, -150.0, 8.0, 9.0], [300, -100.0, 12.0, 13.0]]
    run = vs_sb3.result(task, "sb3", 0, turns, dict(env_steps=300, updates=201, evals=evals))
    # Running time to each eval end: 3, 9 - 2 = 7, 13 - 2 = 11; minus evals so far: 1, 2, 3.
    assert run["evals"] == [[100, -500.0, 2.0], [200, -150.0, 5.0], [300, -100.0, 8.0]]
    assert run["wall_s"] == 18.0 and run["eval_s"] == 3.0 and run["train_s"] == 15.0
    assert run["updates_per_sec"] == pytest.approx(201 / 15)
    assert run["steady_updates_per_sec"] == pytest.approx(100 / 3)  # both intervals: 100 / 3 s
    assert run["updates_per_cpu_sec"] == pytest.approx(20.1)
    assert (run["steps_to_threshold"], run["time_to_threshold_s"]) == (200, 5.0)
    assert (run["final_return"], run["best_return"]) == (-100.0, -100.0)


@pytest.mark.parametrize(
    "module, name",
    [
        ("ppo_cart_pole", "ppo_cart_pole"),
        ("ppo_cart_pole", "ppo_cart_pole_steady"),
        ("ppo_cart_pole", "ppo_cart_pole_after_startup"),
        ("ppo_halfcheetah", "ppo_halfcheetah"),
        ("ppo_halfcheetah", "ppo_halfcheetah_steady"),
        ("ppo_halfcheetah_zoo", "ppo_halfcheetah_zoo"),
        ("ppo_halfcheetah_zoo", "ppo_halfcheetah_zoo_seeds5_7"),
        ("ppo_halfcheetah_zoo", "ppo_halfcheetah_zoo_seeds8_9"),
        ("sac_pendulum", "sac_pendulum"),
        ("sac_pendulum", "sac_pendulum_steady"),
        ("sac_halfcheetah", "sac_halfcheetah"),
        ("sac_halfcheetah", "sac_halfcheetah_steady"),
    ],
)
def test_results_blocks_regenerate_from_json(module, name):
    task = importlib.import_module(f"benchmarks.{module}").TASK
    runs = report.read_json(f"{report.RESULTS_DIR}/{name}.json")["runs"]
    render = vs_sb3.steady_markdown if name.endswith("_steady") else vs_sb3.markdown
    assert render(task, runs) == _block(name)


def test_dqn_and_mirror_blocks_regenerate_from_json():
    dqn = importlib.import_module("benchmarks.dqn_cart_pole")
    mirror = importlib.import_module("benchmarks.mirror_walker")
    for name in ("dqn_cart_pole", "dqn_cart_pole_he_init"):
        runs = report.read_json(f"{report.RESULTS_DIR}/{name}.json")["runs"]
        assert dqn.tables(runs) == _block(name)
    record = report.read_json(f"{report.RESULTS_DIR}/mirror_walker.json")
    assert mirror.markdown(record["runs"]) == _block("mirror_walker")


def test_zoo_summary_block_regenerates_from_json():
    pytest.importorskip("scipy")
    zoo = importlib.import_module("benchmarks.ppo_halfcheetah_zoo")
    assert zoo.summary() == _block("ppo_halfcheetah_zoo_summary")


@pytest.mark.parametrize(
    "name",
    [
        "floor_ppo_cart_pole_before",
        "floor_sac_pendulum_before",
        "floor_ppo_cart_pole_with_sb3",
        "floor_sac_pendulum_with_sb3",
    ],
)
def test_floor_blocks_regenerate_from_json(name):
    floor_compare = importlib.import_module("benchmarks.floor_compare")
    runs = report.read_json(f"{report.RESULTS_DIR}/{name}.json")["runs"]
    assert floor_compare.markdown(runs) == _block(name)
