"""The alf-vs-SB3 driver: a run's numbers from its evaluations, the tables, the quick budgets;
and RESULTS.md: every block regenerates exactly from its committed record, and every results
file is pointed to and exists."""

import dataclasses
import os
import re

import pytest

from benchmarks import alf_ab, alf_confs, gpu_throughput, vs_sb3
from benchmarks.harness import report
from benchmarks.harness.interleave import Turns
from benchmarks.tasks import TASKS

BLOCK = re.compile(r"<!-- (\w+):(\w+) -->\n(.*?)\n<!-- /\1:\2 -->", re.S)
MACHINE = dict(date="2026-11-27", cpu="Xeon", nproc=2)


def test_result_uses_running_time_and_threshold():
    task = TASKS["sac_pendulum"]  # learning_starts 100, threshold -200
    turns = Turns(start=0.0, stops=[[5.0, 7.0]], end=20.0, cpu_s=10.0, peak_rss_mb=300.0)
    evals = [[100, -500.0, 2.0, 3.0], [200, -150.0, 8.0, 9.0], [300, -100.0, 12.0, 13.0]]
    run = vs_sb3.result(task, "sb3", 0, turns, dict(env_steps=300, updates=201, evals=evals))
    # Running time to each eval end: 3, 9 - 2 = 7, 13 - 2 = 11; minus evals so far: 2, 5, 8.
    assert run["wall_s"] == 18.0 and run["eval_s"] == 3.0 and run["train_s"] == 15.0
    assert run["updates_per_sec"] == pytest.approx(201 / 15)
    assert run["steady_updates_per_sec"] == pytest.approx(100 / 3)  # both intervals: 100 / 3 s
    assert run["updates_per_cpu_sec"] == pytest.approx(20.1) and run["peak_rss_mb"] == 300.0
    assert (run["steps_to_threshold"], run["time_to_threshold_s"]) == (200, 5.0)
    assert (run["final_return"], run["best_return"]) == (-100.0, -100.0)
    assert "startup_s" not in run  # PPO only
    evals = [[5120, 100.0, 4.0, 5.0], [10240, 480.0, 8.0, 9.0], [15360, 500.0, 12.0, 13.0]]
    ppo = vs_sb3.result(
        TASKS["ppo_cart_pole"], "alf", 0, turns, dict(env_steps=15360, evals=evals, updates=0)
    )
    # training time at each eval's end: 4, 5, 8 s; rates 5,120 / 1 s and 5,120 / 3 s
    assert ppo["steady_steps_per_sec"] == pytest.approx((5120 + 5120 / 3) / 2)
    assert ppo["startup_s"] == pytest.approx(4.0 - 5120 / ppo["steady_steps_per_sec"])
    assert ppo["steps_per_sec"] == pytest.approx(15360 / 15) and ppo["steps_to_threshold"] == 10240


def _learning_run(framework, seed, steps_to_threshold, rate, final):
    return dict(
        framework=framework, seed=seed, steps_per_sec=rate, steady_steps_per_sec=rate * 1.1,
        steps_to_threshold=steps_to_threshold, final_return=final,
    )  # fmt: skip


def test_learning_table_medians_infinite_steps_and_one_framework():
    runs = [
        _learning_run("alf", 0, 1000, 200.0, 500.0),
        _learning_run("sb3", 0, None, 100.0, 300.0),
        _learning_run("alf", 1, None, 300.0, 400.0),
        _learning_run("sb3", 1, None, 150.0, 200.0),
        _learning_run("alf", 2, 3000, 100.0, 490.0),
        _learning_run("sb3", 2, 2000, 200.0, 480.0),
    ]
    record = dict(command="c", machine=MACHINE, runs=runs)
    text = vs_sb3.markdown(TASKS["ppo_cart_pole"], record)
    assert text.startswith("2026-11-27, Xeon (2 cores): `c`")
    # alf: 1000, 3000, never -> 3000; SB3: 2000, never, never -> never
    assert "| env steps to eval ≥ 475 (never: ∞) | 3,000 | ∞ | - |" in text
    assert "| steps/s (wall − eval) | 200.0 | 150.0 | 1.33 |" in text
    assert "| seeds reaching ≥ 475 | 2/3 | 1/3 |  |" in text
    assert "| wall s |" not in text  # no run has it
    # paired rates 2.0, 2.0, 0.5; alf's steady rate higher in 2 of 3
    assert text.endswith(
        "(3 seeds): steps/s (wall − eval) 2.00, steady 2.00 (alf faster in 2 of 3)."
    )
    alone = vs_sb3.markdown(TASKS["ppo_cart_pole"], dict(record, runs=runs[::2]))
    assert "| median | alf |\n" in alone and "sb3" not in alone and "paired" not in alone
    returns = vs_sb3.markdown(TASKS["ppo_cart_pole"], dict(record, returns_only=True))
    assert "steps/s" not in returns and "| final eval return | 490.0 | 300.0 | 1.63 |" in returns


def test_steady_table_ratios_to_each_sb3():
    runs = []
    for i in range(3):  # alf 5, 6, 7 s; SB3 10 s; SB3 + FTZ 8 s
        for fw, t in (("alf", 5.0 + i), ("sb3", 10.0), ("sb3_ftz", 8.0)):
            runs.append(dict(framework=fw, seed=i, env_steps=1000, wall_s=t, cpu_s=t))
    text = vs_sb3.steady_markdown(
        TASKS["sac_pendulum"], dict(command="c", machine=MACHINE, runs=runs)
    )
    # medians: alf 1000 / 6 s = 166.7 updates/s, SB3 100, SB3 + FTZ 125
    assert "| updates per CPU s | 166.7 | 100.0 | 125.0 | **1.67** | **1.33** |" in text
    assert text.startswith("2026-11-27, Xeon (2 cores): `c` (3 repeats of 1,000 timed updates)")


def test_quick_budgets_keep_every_part():
    ppo = TASKS["ppo_halfcheetah"].quick()
    assert (ppo.env_steps, ppo.eval_every) == (2048, 1024)  # 4 iterations of 512, eval every 2
    assert ppo.conf_params == ("TrainerConfig.eval_interval=2",)  # replaces the task's 40
    dqn = TASKS["dqn_cart_pole"].quick()
    assert (dqn.env_steps, dqn.eval_every) == (1024, 512)  # iterations of 256 steps
    qrdqn = TASKS["qrdqn_cart_pole"]
    assert qrdqn.sb3 == dict(dqn.sb3, policy_kwargs=dict(net_arch=[256, 256], n_quantiles=10))
    assert (qrdqn.quick().env_steps, qrdqn.algorithm) == (1024, "dqn")
    sac = TASKS["sac_halfcheetah"].quick()
    assert (sac.env_steps, sac.learning_starts, sac.sb3["learning_starts"]) == (600, 100, 100)
    assert TASKS["sac_halfcheetah"].sb3["learning_starts"] == 10_000  # the task is unchanged


def test_crossq_tasks_build_sb3_contribs_crossq():
    """CrossQ runs as SAC does, with sb3-contrib's class at its defaults."""
    import dataclasses

    from benchmarks.harness import sb3

    task = TASKS["crossq_pendulum"].quick()
    assert task.unit == "updates" and task.sb3["policy_delay"] == 3
    model = sb3.model(dataclasses.asdict(task), seed=0)
    assert type(model).__name__ == "CrossQ" and model.policy_delay == 3
    assert model.critic.qf0[1].out_features == 1024 and model.learning_rate == 1e-3


def test_tqc_task_builds_sb3_contribs_tqc_with_the_confs_settings():
    pytest.importorskip("sb3_contrib")
    pytest.importorskip("mujoco")
    from benchmarks.harness import sb3

    task = TASKS["tqc_halfcheetah"].quick()
    assert task.sb3_class == "sb3_contrib:TQC" and task.sb3["learning_starts"] == 100
    model = sb3.model(dataclasses.asdict(task), seed=0)
    assert type(model).__name__ == "TQC" and model.top_quantiles_to_drop_per_net == 2
    assert (model.critic.n_critics, model.critic.n_quantiles) == (2, 25)
    assert (model.batch_size, model.learning_rate, model.tau) == (256, 3e-4, 0.005)


def _render(name: str, key: str, record: dict) -> str:
    if name == "alf_ab":
        return alf_ab.markdown(record)
    if name == "alf_confs":
        return alf_confs.markdown(record)
    if name == "gpu_check":
        return gpu_throughput.markdown(record)
    render = vs_sb3.steady_markdown if key.startswith("steady") else vs_sb3.markdown
    return render(TASKS[name], record)


def _results_md() -> str:
    with open(report.RESULTS_MD) as f:
        return f.read()


def test_results_blocks_regenerate_from_json():
    blocks = BLOCK.findall(_results_md())
    assert len(blocks) >= 14
    for name, key, body in blocks:
        record = report.read_json(f"{report.RESULTS_DIR}/{name}.json")[key]
        assert _render(name, key, record) == body, f"{name}:{key}"


def test_every_results_file_is_pointed_to_and_every_record_shown():
    text = _results_md()
    pointed = set(re.findall(r"results/(\w+)\.json", text))
    files = {f.removesuffix(".json") for f in os.listdir(report.RESULTS_DIR)}
    assert pointed == files
    blocks = {(name, key) for name, key, _ in BLOCK.findall(text)}
    for name in files:
        for key in report.read_json(f"{report.RESULTS_DIR}/{name}.json"):
            assert (name, key) in blocks, f"{name}:{key} has no block"
