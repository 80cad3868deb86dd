"""The command line and run loop the benchmarks share: seeds, a scratch directory, the results
file (saved after every job) and its generated block of RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable

from benchmarks.harness import report, runner


def parser(doc: str, name: str, seeds=(0, 1, 2)) -> argparse.ArgumentParser:
    """The options every benchmark has; ``name`` names its scratch directory."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    parser.add_argument("--work_dir", default=f"/tmp/{name}_bench")
    parser.add_argument("--results_json", "--json_path", help=f"default: results/{name}.json")
    parser.add_argument("--report_only", action="store_true", help="RESULTS.md from the JSON")
    parser.add_argument("--no_write", action="store_true", help="leave RESULTS.md alone")
    return parser


def run(args, name: str, render: Callable, jobs: Iterable[Callable], block=True, **header):
    """Run ``jobs`` (each returns a list of runs) into ``results/<name>.json`` (or
    ``--results_json``, whose name is the block's), then print ``render(runs)`` and write it
    into its block of RESULTS.md (unless ``--no_write`` or ``block`` is False).
    ``--report_only`` renders the saved runs instead."""
    path = args.results_json or os.path.join(report.RESULTS_DIR, f"{name}.json")
    block = block and not args.no_write and os.path.splitext(os.path.basename(path))[0]
    if args.report_only:
        record = report.read_json(path)
    else:
        os.makedirs(args.work_dir, exist_ok=True)
        module = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        command = " ".join([f"python -m benchmarks.{module}", *sys.argv[1:]])
        record = dict(command=command, machine=runner.machine_info(), **header, runs=[])
    for job in [] if args.report_only else jobs:
        new = job()
        record["runs"] += new
        record.update(end=runner.now(), load_end=runner.load_average())
        report.write_json(path, record)
        print(json.dumps([{k: v for k, v in r.items() if k != "evals"} for r in new]), flush=True)
        if block:
            report.write_block(block, render(record["runs"]))
    if block and args.report_only:
        report.write_block(block, render(record["runs"]))
    print(render(record["runs"]))
