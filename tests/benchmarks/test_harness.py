"""The benchmark harness: tensorboard reader, tables, results records and RESULTS.md blocks,
A/B arithmetic, functions in fresh processes and the shared run loop."""

import argparse
import json
import os
import sys

import pytest

from benchmarks import alf_ab, vs_sb3
from benchmarks.harness import cli, interleave, report, runner, steady

_AB_RUNS = [
    dict(checkout="base", repeat=0, cpu_s=2.0, wall_s=2.1, env_steps=1000),  # 2000 µs
    dict(checkout="current", repeat=0, cpu_s=1.0, wall_s=1.1, env_steps=1000),  # 1000
    dict(checkout="base", repeat=1, cpu_s=3.0, wall_s=3.0, env_steps=1000),  # 3000
    dict(checkout="current", repeat=1, cpu_s=2.0, wall_s=2.0, env_steps=1000),  # 2000
    dict(checkout="base", repeat=2, cpu_s=1.0, wall_s=1.0, env_steps=500),  # 2000
    dict(checkout="current", repeat=2, cpu_s=0.8, wall_s=0.8, env_steps=500),  # 1600
]


def test_scalars_reads_back_what_was_written(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step, value in [(10, 1.5), (20, -2.25), (30, 4.0)]:
        writer.add_scalar("Metrics/AverageReturn", value, step, walltime=1000.0 + step)
    writer.add_scalar("other", 7.0, 5)
    writer.close()
    assert vs_sb3._scalars(str(tmp_path), "Metrics/AverageReturn") == [
        (10, 1010.0, 1.5),
        (20, 1020.0, -2.25),
        (30, 1030.0, 4.0),
    ]
    assert vs_sb3._scalars(str(tmp_path), "missing") == []


def test_fmt_median_ratio_and_table():
    assert report.fmt(None) == "-"
    assert report.fmt(None, none="—") == "—"
    assert report.fmt(100096) == "100,096"
    assert report.fmt(1234.56) == "1,234.6"
    assert report.fmt(1234.56, whole_from=1000) == "1,235"
    assert report.fmt(587.64, whole_from=1000) == "587.6"
    assert report.fmt(0.01749, 4) == "0.0175"
    assert report.median([3, None, 1, 2]) == 2
    assert report.median([None]) is None
    assert report.ratio(3.0, 2.0) == 1.5
    assert report.ratio(3.0, 0) is None
    expected = "| a | b |\n|---|---|\n| 1 | x |\n| 2.5 | y |"
    assert report.table(["a", "b"], [[1, "x"], [2.5, "y"]]) == expected


def test_write_block_replaces_only_its_block(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# R\n\nprose 1\n<!-- a -->\nold\nlines\n<!-- /a -->\nprose 2\n")
    report.write_block("a", "\nnew\n", str(path))
    assert path.read_text() == "# R\n\nprose 1\n<!-- a -->\nnew\n<!-- /a -->\nprose 2\n"
    report.write_block("b", "table", str(path))
    assert path.read_text().endswith("prose 2\n\n<!-- b -->\ntable\n<!-- /b -->\n")
    report.write_block("a", "newer", str(path))  # idempotent and independent blocks
    assert path.read_text().count("newer") == 1 and "table" in path.read_text()


def test_write_json_rounds_and_round_trips(tmp_path):
    path = str(tmp_path / "r.json")
    report.write_json(path, {"x": 1.2345674, "runs": [{"y": (2.0, 3.0000491)}], "n": 7})
    assert report.read_json(path) == {"x": 1.234567, "runs": [{"y": [2.0, 3.000049]}], "n": 7}
    with open(path) as f:  # compact: one line per top-level key, no indentation
        assert f.read() == '{\n"x":1.234567,\n"runs":[{"y":[2.0,3.000049]}],\n"n":7\n}\n'
    assert report.read_json(str(tmp_path / "absent.json")) == {}
    report.write_record(path, "n", {"a": 1})  # replaces its key, keeps the others
    report.write_record(path, "z", {"b": 2.0})
    assert report.read_json(path) == {"x": 1.234567, "runs": [{"y": [2.0, 3.000049]}],
                                      "n": {"a": 1}, "z": {"b": 2.0}}  # fmt: skip


def test_measured_line_leaves_out_the_housekeeping_options():
    record = dict(machine=dict(date="2026-11-26", cpu="Xeon", nproc=2, alf="abc1234"))
    record["command"] = "python -m b.x --seeds 0 --work_dir /tmp/w --no_write --results_json r.json"
    assert (
        report.measured(record)
        == "2026-11-26, Xeon (2 cores), alf abc1234: `python -m b.x --seeds 0`"
    )


def test_ab_summary_arithmetic():
    summary = alf_ab.summarize(_AB_RUNS)
    assert summary["cpu_us_per_step"] == pytest.approx({"base": 2000.0, "current": 1600.0})
    assert summary["speed_ratio"] == pytest.approx(1.25)
    # paired: 2.0, 1.5, 1.25 -> median 1.5; fastest: base 2000, current 1000
    assert summary["paired_speed_ratio"] == pytest.approx(1.5)
    assert summary["fastest_speed_ratio"] == pytest.approx(2.0)
    assert summary["geomean_speed_ratio"] == pytest.approx((2.0 * 1.5 * 1.25) ** (1 / 3))
    low, high = summary["paired_ci95"]  # medians of resamples of [2.0, 1.5, 1.25]
    assert low == pytest.approx(1.25) and high == pytest.approx(2.0)


def test_time_calls_counts_env_steps():
    calls = []

    def step():
        calls.append(1)
        return 8

    result = steady.time_calls(step, warmup=3, iterations=5)
    assert len(calls) == 8
    assert result["iterations"] == 5 and result["env_steps"] == 40
    assert result["cpu_s"] >= 0 and result["wall_s"] >= 0


def test_steady_worker_runs_the_given_checkout_and_its_result_is_parsed():
    cmd, root_dir = steady.worker("/ck", "alf/examples/c.py", 3, 2, 5, ["A.b=1"])
    try:
        assert cmd[:2] == ["env", "PYTHONPATH=/ck"] and cmd[3] == os.path.abspath(steady.__file__)
        args = dict(conf="/ck/alf/examples/c.py", seed=3, root_dir=root_dir, params=["A.b=1"])
        assert json.loads(cmd[-1]) == dict(args, warmup=2, iterations=5)
        assert os.path.isdir(root_dir) and not os.listdir(root_dir)
    finally:
        os.rmdir(root_dir)
    output = 'loading conf\nRESULT {"env_steps": 40, "cpu_s": 0.5}\nbye\n'
    assert steady.result(output) == {"env_steps": 40, "cpu_s": 0.5}


def test_call_runs_a_function_in_a_fresh_process(tmp_path):
    result = runner.call("benchmarks.alf_ab:summarize", str(tmp_path / "out.json"), runs=_AB_RUNS)
    assert result["cpu_us_per_step"] == {"base": 2000.0, "current": 1600.0}
    assert result["speed_ratio"] == 1.25 and result["paired_speed_ratio"] == 1.5
    assert result["fastest_speed_ratio"] == 2.0


@pytest.mark.parametrize("turn_s", [0.0, 0.2])
def test_runs_record_the_peak_memory_of_each_process_tree(tmp_path, turn_s):
    """A process holding 300 MB in a child of its own, and one holding 50 MB itself, run one
    after the other or in turns: each record has its own tree's peak."""
    hold = "import numpy, time; a = numpy.ones({} * 2**20, numpy.uint8); time.sleep(1.0)"
    child = hold.format(300)
    in_child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    cmds = [[sys.executable, "-c", in_child], [sys.executable, "-c", hold.format(50)]]
    logs = [str(tmp_path / f"{i}.log") for i in range(2)]
    big, small = runner.run_jobs(cmds, logs, turn_s)
    assert 300 < big.peak_rss_mb < 300 + 120  # the array, two interpreters and numpy
    assert 50 < small.peak_rss_mb < 50 + 60  # not the harness's own size (torch imported)
    assert interleave.tree_rss_mb(os.getpid()) > 50 + 60
    assert interleave.tree_rss_mb(2**22 + 12345) == 0.0  # no such process
    assert big.cpu_s > 0 and small.cpu_s > 0


def _args(tmp_path, **changes):
    args = dict(results_json=None, work_dir=str(tmp_path / "work"), record=None, quick=False)
    return argparse.Namespace(**dict(args, report_only=False, no_write=False, **changes))


def _render(record):
    return f"total {sum(r['x'] for r in record['runs']):g}"


def test_run_saves_every_job_and_report_only_renders_the_saved_runs(tmp_path, capsys):
    path = str(tmp_path / "r.json")
    args = _args(tmp_path, results_json=path)
    jobs = [lambda: [dict(x=1.5)], lambda: [dict(x=2.25), dict(x=0.25)]]
    cli.run(args, "unused", _render, jobs, "learning", answer=42)
    record = report.read_json(path)["learning"]
    assert [r["x"] for r in record["runs"]] == [1.5, 2.25, 0.25] and record["answer"] == 42
    assert record["command"].startswith("python -m benchmarks.") and "machine" in record
    assert capsys.readouterr().out.splitlines()[-1] == "total 4"
    args.report_only = True
    cli.run(args, "unused", _render, [lambda: pytest.fail("report_only runs no job")], "learning")
    assert capsys.readouterr().out == "total 4\n"
    args.record = "missing"
    with pytest.raises(SystemExit) as exit_info:
        cli.run(args, "unused", _render, [], "learning")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"unused: no record 'missing' in {path}\n"


def test_run_writes_the_default_file_and_its_block_quick_runs_neither(tmp_path, monkeypatch):
    results_md = tmp_path / "RESULTS.md"
    results_md.write_text("# R\n<!-- bench:steady -->\nold\n<!-- /bench:steady -->\nprose\n")
    monkeypatch.setattr(report, "RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setattr(report, "RESULTS_MD", str(results_md))
    cli.run(_args(tmp_path), "bench", _render, [lambda: [dict(x=3.0)]], "learning")
    cli.run(_args(tmp_path, record="steady"), "bench", _render, [lambda: [dict(x=1.0)]], "x")
    saved = report.read_json(str(tmp_path / "results" / "bench.json"))
    assert sorted(saved) == ["learning", "steady"]
    text = results_md.read_text()
    assert "<!-- bench:steady -->\ntotal 1\n<!-- /bench:steady -->\nprose\n" in text
    assert text.endswith("<!-- bench:learning -->\ntotal 3\n<!-- /bench:learning -->\n")
    cli.run(_args(tmp_path, quick=True), "bench", _render, [lambda: [dict(x=7.0)]], "learning")
    assert report.read_json(str(tmp_path / "work" / "quick.json"))["learning"]["runs"] == [
        dict(x=7.0)
    ]
    assert results_md.read_text() == text
    assert report.read_json(str(tmp_path / "results" / "bench.json")) == saved
