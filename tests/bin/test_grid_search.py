"""``python -m alf.bin.grid_search``: the pure parts (search configs, expansion, run names,
values as ``--conf_param`` literals, the summary table) in-process, then real searches of
the tiny PPO conf in subprocesses (completion and summary, a failing run, resume, a stop
signal, refused input)."""

import json
import os
import shlex
import signal
import statistics
import time

import pytest

from alf.configuration.loader import parse_conf_param
from alf.tuning.grid_search import record as rec
from alf.tuning.grid_search import spec as grid_spec
from alf.tuning.grid_search import summary
from tests.bin.test_train_play import (
    TIMEOUT,
    TINY_CONF,
    finish,
    one_error_line,
    run,
    scalars,
    start,
    tree_hashes,
)

SHORT = ["--conf_param", "TrainerConfig.num_iterations=2", "--nostore_snapshot"]

# --------------------------------------------------------------------------- pure parts


def _spec(raw, path="search.json"):
    return grid_spec.parse_search_config(raw, path)


def test_a_2x2_grid_with_a_joined_key_expands_to_the_expected_runs():
    spec = _spec(
        {
            "desc": "d",
            "parameters": {
                "PPOLoss.gamma": [0.98, 0.99],
                "create_environment.env_name, TrainerConfig.unroll_length": [
                    ["CartPole-v1", 8],
                    ["Acrobot-v1", 16],
                ],
            },
            "repeats": 2,
        }
    )
    runs = grid_spec.expand(spec, seed_base=5)
    points = [
        "gamma=0.98-env_name=CartPole-v1-unroll_length=8",
        "gamma=0.98-env_name=Acrobot-v1-unroll_length=16",
        "gamma=0.99-env_name=CartPole-v1-unroll_length=8",
        "gamma=0.99-env_name=Acrobot-v1-unroll_length=16",
    ]
    assert [r.name for r in runs] == [f"{p}-r{r}" for r in (0, 1) for p in points]
    assert [r.random_seed for r in runs] == [5] * 4 + [6] * 4
    assert runs[5].parameters == {
        "PPOLoss.gamma": 0.98,
        "create_environment.env_name": "Acrobot-v1",
        "TrainerConfig.unroll_length": 16,
    }
    assert runs[5].conf_params == [
        "PPOLoss.gamma=0.98",
        "create_environment.env_name='Acrobot-v1'",
        "TrainerConfig.unroll_length=16",
        "TrainerConfig.random_seed=6",
    ]
    # no seed base: no seed; no parameters: the repeats alone
    assert grid_spec.expand(spec)[0].conf_params[-1] == "TrainerConfig.unroll_length=8"
    assert [r.name for r in grid_spec.expand(_spec({"repeats": 2}))] == ["r0", "r1"]


@pytest.mark.parametrize(
    "value",
    [
        0.001,
        1e-05,
        3,
        -2,
        True,
        None,
        "CartPole-v1",
        'it\'s "quoted"',
        "é",
        [64, 64],
        {"a": [1, 2.5]},
    ],
)
def test_a_json_value_becomes_a_conf_param_literal_that_reads_back_equal(value):
    name, parsed = parse_conf_param(grid_spec.conf_param("Name.arg", value))
    assert (name, parsed, type(parsed)) == ("Name.arg", value, type(value))


@pytest.mark.parametrize(
    "parameters, shown",
    [
        ({"A.x": "range(3)"}, '"range(3)"'),
        ({"A.x": "[1, 2]"}, '"[1, 2]"'),
        ({"A.x": ["0.001", "relu"]}, '"0.001"'),
        ({"A.x": ["(64, 64)"]}, '"(64, 64)"'),
        ({"A.x": ["True"]}, '"True"'),
        ({"A.x,B.y": [["1e-3", "a"]]}, '"1e-3"'),
    ],
)
def test_strings_alf_would_evaluate_are_refused(parameters, shown):
    with pytest.raises(grid_spec.SearchConfigError) as error:
        _spec({"parameters": parameters})
    key = next(iter(parameters))
    assert str(error.value).startswith(f"search config search.json: parameter {key!r}: ")
    assert f"the string {shown} is a Python expression ALF would evaluate" in str(error.value)
    assert "write the list in JSON" in str(error.value) or "write the value in JSON" in str(
        error.value
    )


def test_plain_strings_stay_strings():
    spec = _spec({"parameters": {"A.x": ["relu", "", "CartPole-v1", "0.1.2"]}})
    assert [r.conf_params[0] for r in grid_spec.expand(spec)] == [
        "A.x='relu'",
        "A.x=''",
        "A.x='CartPole-v1'",
        "A.x='0.1.2'",
    ]


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"parameters": {}, "gpu": 1, "note": 2}, "unknown key(s) 'gpu', 'note'"),
        ({"parameters": {"A.x": []}}, "parameter 'A.x' must be a non-empty JSON list"),
        ({"parameters": {"A.x": 3}}, "parameter 'A.x' must be a non-empty JSON list of values"),
        ({"parameters": {"a/A.x": [1]}}, "parameter 'a/A.x': 'a/A.x' is not a config name"),
        ({"parameters": {"A.x,B.y": [[1]]}}, "each value must be a list of 2 values"),
        ({"parameters": {"A.x": [1, 2, 1]}}, "parameter 'A.x' lists the value 1 twice"),
        ({"parameters": {"A.x": [1], "B.y,A.x": [[1, 2]]}}, "parameter 'A.x' is given twice"),
        ({"repeats": 0}, "'repeats' must be a positive integer, got 0"),
        ({"max_worker_num": 1.5}, "'max_worker_num' must be a positive integer, got 1.5"),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_bad_search_configs_name_the_key(raw, message):
    with pytest.raises(grid_spec.SearchConfigError, match="^search config search.json") as error:
        _spec(raw)
    assert message in str(error.value)


def test_alf_gpu_keys_are_accepted_with_a_warning():
    spec = _spec({"parameters": {"A.x": [1]}, "use_gpu": True, "gpus": [0, 1], "comment": "c"})
    assert spec.warnings == [
        "search config search.json: 'use_gpu' is ignored (alf's grid search runs on the CPU)",
        "search config search.json: 'gpus' is ignored (alf's grid search runs on the CPU)",
    ]


def test_run_names_are_filesystem_safe_unique_and_bounded():
    long_value = "x" * 300
    spec = _spec({"parameters": {"Adam.lr": [1], "SGD.lr": ["a/b", "a b", long_value]}})
    names = [r.name for r in grid_spec.expand(spec)]
    assert len(set(names)) == 3
    assert all("/" not in n and " " not in n for n in names)
    assert names[0].startswith("Adam.lr=1-SGD.lr=a_b-") and names[1].startswith(names[0][:20])
    assert names[0] != names[1] and len(names[0]) == len("Adam.lr=1-SGD.lr=a_b-") + 8 + 3
    assert len(names[2]) == grid_spec.MAX_LABEL_LENGTH + 3 and names[2].endswith("-r0")
    assert grid_spec.short_names(["A.b.lr", "C.b.lr", "D.units"]) == {
        "A.b.lr": "A.b.lr",
        "C.b.lr": "C.b.lr",
        "D.units": "units",
    }
    assert grid_spec.name_token([64, 64]) == "64_64"


def test_a_different_grid_is_refused_naming_the_record():
    spec = _spec({"parameters": {"A.x": [1, 2]}})
    entries = [rec.run_entry(r, []) for r in grid_spec.expand(spec, seed_base=0)]
    previous = {"runs": [dict(e) for e in entries]}
    rec.check_same_grid(previous, entries, "dir/grid_search.json")
    cases = [
        (grid_spec.expand(spec, seed_base=1), "run 'x=1-r0' has seed 0 there, 1 here"),
        (grid_spec.expand(spec, seed_base=0)[:1], "2 runs there, 1 here"),
        (grid_spec.expand(spec, seed_base=0)[::-1], "run 0 is 'x=1-r0' there, 'x=2-r0' here"),
    ]
    for other, difference in cases:
        with pytest.raises(ValueError) as error:
            rec.check_same_grid(previous, [rec.run_entry(r, []) for r in other], "d/g.json")
        assert str(error.value).startswith(f"d/g.json records a different grid ({difference}); ")


def test_summary_rows_count_finished_runs_and_average_their_objectives():
    def entry(x, status, objective=None):
        return {"parameters": {"A.x": x}, "status": status, "objective": objective}

    record = {
        "runs": [
            entry(1, rec.FINISHED, 10.0),
            entry(2, rec.FAILED),
            entry(1, rec.FINISHED, 20.0),
            entry(2, rec.FINISHED, 5.0),
        ]
    }
    assert summary.table(record).splitlines() == [
        "| A.x | runs finished | Metrics/AverageReturn (mean ± std) |",
        "|---|---|---|",
        "| 1 | 2/2 | 15 ± 7.07107 |",
        "| 2 | 1/2 | 5 |",
    ]
    assert summary.format_objective([]) == "-"


# --------------------------------------------------------------------------- the CLI


def grid(search, root_dir, *args, conf=TINY_CONF):
    """Run the grid search CLI; ``(returncode, stdout, stderr)``."""
    return run(
        "alf.bin.grid_search",
        "--conf",
        conf,
        "--search_config",
        search,
        "--root_dir",
        root_dir,
        *args,
    )


def write_search(path, parameters, **keys):
    path.write_text(json.dumps({"desc": "test", "parameters": parameters, **keys}))
    return path


def load_record(root_dir):
    return json.loads((root_dir / "grid_search.json").read_text())


def last_return(run_dir):
    return scalars(run_dir / "eval", "Metrics/AverageReturn")[-1][1]


def test_a_search_completes_summarizes_and_resumes_by_skipping_finished_runs(tmp_path):
    search = write_search(tmp_path / "s.json", {"PPOLoss.gamma": [0.98]}, repeats=2)
    root_dir = tmp_path / "grid"
    code, stdout, stderr = grid(search, root_dir, *SHORT)
    assert code == 0, stderr
    record = load_record(root_dir)
    assert [e["name"] for e in record["runs"]] == ["gamma=0.98-r0", "gamma=0.98-r1"]
    values = []
    for repeat, entry in enumerate(record["runs"]):
        assert (entry["status"], entry["exit_code"], entry["random_seed"]) == (
            "finished",
            0,
            1 + repeat,  # the tiny conf's seed, plus the repeat
        )
        assert entry["start_time"] <= entry["end_time"]
        run_dir = root_dir / entry["name"]
        run_json = json.loads((run_dir / "config_files" / "run.json").read_text())
        assert run_json["random_seed"] == 1 + repeat
        values.append(last_return(run_dir))
        assert (entry["objective"], entry["objective_source"]) == (values[-1], "eval")
    expected = f"{statistics.mean(values):.6g} ± {statistics.stdev(values):.6g}"
    summary_md = (root_dir / "summary.md").read_text()
    assert f"| 0.98 | 2/2 | {expected} |" in summary_md.splitlines()
    assert stdout == summary_md

    code, status, _ = run("alf.bin.grid_search", "--root_dir", root_dir, "--status")
    assert code == 0 and status == summary_md

    # Run again: both finished, both skipped (a real re-run is in the next test).
    code, stdout, stderr = grid(search, root_dir, *SHORT, "--dry_run")
    assert code == 0, stderr
    assert stdout.splitlines() == [f"# gamma=0.98-r{r}: finished, skipped" for r in (0, 1)]

    other = write_search(tmp_path / "other.json", {"PPOLoss.gamma": [0.98, 0.99]})
    before = tree_hashes(root_dir)
    code, _, stderr = grid(other, root_dir, *SHORT)
    assert code == 2
    assert one_error_line(stderr, "grid_search").startswith(
        f"alf.bin.grid_search: error: {root_dir / 'grid_search.json'} records a different grid"
    )
    assert tree_hashes(root_dir) == before


def test_a_failing_run_is_reported_the_other_completes_and_a_rerun_retries_it(tmp_path):
    search = write_search(
        tmp_path / "s.json", {"create_environment.env_name": ["CartPole-v1", "NoSuchEnv-v0"]}
    )
    root_dir = tmp_path / "grid"
    code, stdout, stderr = grid(search, root_dir, *SHORT, "--max_worker_num", 2)
    assert code == 1, stderr
    good, bad = load_record(root_dir)["runs"]
    assert (good["name"], good["status"], good["exit_code"]) == (
        "env_name=CartPole-v1-r0",
        "finished",
        0,
    )
    assert (bad["name"], bad["status"], bad["exit_code"]) == (
        "env_name=NoSuchEnv-v0-r0",
        "failed",
        2,
    )
    tail = (root_dir / bad["name"] / "grid_search_stderr.txt").read_text()
    assert "alf.bin.train: error: Unknown gymnasium environment id 'NoSuchEnv-v0'" in tail
    value = last_return(root_dir / good["name"])
    assert f"| 'CartPole-v1' | 1/1 | {value:.6g} |" in stdout.splitlines()
    assert "| 'NoSuchEnv-v0' | 0/1 | - |" in stdout.splitlines()
    assert f"- `{bad['name']}`: exit status 2" in stdout.splitlines()

    code, dry, stderr = grid(search, root_dir, *SHORT, "--dry_run")
    assert code == 0, stderr
    dry = dry.splitlines()
    assert len(dry) == 2 and dry[0] == f"# {good['name']}: finished, skipped"
    assert shlex.split(dry[1])[1:] == [
        *("-m", "alf.bin.train", "--conf", TINY_CONF, "--root_dir", str(root_dir / bad["name"])),
        *("--conf_param", "create_environment.env_name='NoSuchEnv-v0'"),
        *("--conf_param", "TrainerConfig.random_seed=1"),  # the conf's seed, + repeat 0
        *("--conf_param", "TrainerConfig.num_iterations=2", "--nostore_snapshot"),
    ]

    before = tree_hashes(root_dir / good["name"])
    code, _, stderr = grid(search, root_dir, *SHORT)
    assert code == 1, stderr
    assert tree_hashes(root_dir / good["name"]) == before  # skipped
    log = (root_dir / "logs" / f"{bad['name']}.log").read_text()
    assert log.count("alf.bin.grid_search: ") == 2  # tried again


def test_sigterm_stops_the_runs_with_a_checkpoint_and_nothing_hangs(tmp_path):
    search = write_search(tmp_path / "s.json", {"PPOLoss.gamma": [0.98, 0.99]})
    root_dir = tmp_path / "grid"
    long_run = ["--conf_param", "TrainerConfig.num_iterations=100000", "--nostore_snapshot"]
    proc = start(
        "alf.bin.grid_search",
        *("--conf", TINY_CONF, "--search_config", search, "--root_dir", root_dir),
        *long_run,
        *("--max_worker_num", 2, "--stop_timeout", 60),
    )
    deadline = time.time() + TIMEOUT
    names = ["gamma=0.98-r0", "gamma=0.99-r0"]
    while not all((root_dir / n / "train" / "algorithm").is_dir() for n in names):
        assert time.time() < deadline and proc.poll() is None, finish(proc)
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    code, stdout, stderr = finish(proc)
    assert code == 0, stderr
    runs = load_record(root_dir)["runs"]
    assert [(e["status"], e["exit_code"]) for e in runs] == [("interrupted", 0)] * 2
    for entry in runs:
        with pytest.raises(ProcessLookupError):
            os.kill(entry["pid"], 0)
        assert any(
            n.startswith("ckpt-") for n in os.listdir(root_dir / entry["name"] / "train/algorithm")
        )
    assert "2 interrupted" in stdout


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"parameters": {"Adam.lr": "[1e-3, 1e-4]"}}', "parameter 'Adam.lr': the string"),
        ('{"parameters": {"A.x": [1]}, "gpu": 1}', "unknown key(s) 'gpu'"),
        ('{"parameters": {"A.x": [1],}}', "is not valid JSON: Expecting property name"),
        ('{"parameters": {"A.x": [1], "A.x": [2]}}', "key 'A.x' appears more than once"),
    ],
)
def test_refused_search_configs_are_one_line_and_write_nothing(tmp_path, text, message):
    search = tmp_path / "s.json"
    search.write_text(text)
    code, stdout, stderr = grid(search, tmp_path / "grid", *SHORT)
    assert code == 2 and stdout == ""
    line = one_error_line(stderr, "grid_search")
    assert line.startswith(f"alf.bin.grid_search: error: search config {search}")
    assert message in line
    assert not (tmp_path / "grid").exists()


def test_a_conf_param_on_a_searched_name_and_a_bad_conf_are_one_line(tmp_path):
    search = write_search(tmp_path / "s.json", {"PPOLoss.gamma": [0.9]})
    code, _, stderr = grid(search, tmp_path / "grid", "--conf_param", "PPOLoss.gamma=0.5")
    assert code == 2 and "sets PPOLoss.gamma, which" in one_error_line(stderr, "grid_search")
    unknown = write_search(tmp_path / "u.json", {"PPOLoss.no_such_arg": [1]})
    code, _, stderr = grid(unknown, tmp_path / "grid")
    assert code == 2 and "no_such_arg" in one_error_line(stderr, "grid_search")
    assert not (tmp_path / "grid").exists()
