"""The command line and run loop the benchmarks share: seeds, a scratch directory, the record
(saved after every job into its results file) and its generated block of RESULTS.md."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable

from benchmarks.harness import report, runner


class Parser(argparse.ArgumentParser):
    def error(self, message):  # bad input: one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser(doc: str, name: str, seeds=(0, 1, 2)) -> argparse.ArgumentParser:
    """The options every benchmark has; ``name`` names its scratch directory (``seeds`` None:
    no ``--seeds``)."""
    parser = Parser(description=doc.splitlines()[0])
    if seeds is not None:
        parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    parser.add_argument("--work_dir", default=f"/tmp/{name}_bench")
    parser.add_argument("--results_json", help=f"default: results/{name}.json")
    parser.add_argument("--record", help="the record's key in the results file")
    parser.add_argument("--report_only", action="store_true", help="the block from the JSON")
    parser.add_argument("--no_write", action="store_true", help="leave RESULTS.md alone")
    parser.add_argument("--quick", action="store_true", help="a tiny budget; nothing kept")
    return parser


def run(args, name: str, render: Callable, jobs: Iterable[Callable], key: str, **header) -> dict:
    """Run ``jobs`` (each returns a list of runs) into the record ``key`` (or ``--record``) of
    ``results/<name>.json`` (or ``--results_json``; ``--quick``: the work dir), then print
    ``render(record)`` and, for the default results file, write it into the ``name:key`` block
    of RESULTS.md (unless ``--no_write``). ``--report_only`` renders the saved record instead."""
    default = os.path.join(report.RESULTS_DIR, f"{name}.json")
    quick = os.path.join(args.work_dir, "quick.json") if args.quick else None
    path, key = args.results_json or quick or default, args.record or key
    block = path == default and not args.no_write and f"{name}:{key}"
    if args.report_only:
        record = report.read_json(path).get(key)
        if record is None:
            print(f"{name}: no record {key!r} in {path}", file=sys.stderr)
            sys.exit(2)
    else:
        os.makedirs(args.work_dir, exist_ok=True)
        module = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        command = " ".join([f"python -m benchmarks.{module}", *sys.argv[1:]])
        record = dict(command=command, machine=runner.machine_info(), **header, runs=[])
    for job in [] if args.report_only else jobs:
        new = job()
        record["runs"] += new
        record.update(end=runner.now(), load_end=runner.load_average())
        report.write_record(path, key, record)
        print(json.dumps(new), flush=True)
    text = render(record)
    if block:
        report.write_block(block, text, report.RESULTS_MD)
    print(text)
    return record
