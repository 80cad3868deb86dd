"""The parts of ``python -m alf.bin.grid_search`` below its command line.

- ``spec``: reading a search config (ALF's JSON format) and expanding it into runs, with
  their names and ``--conf_param`` values (standard library only, no torch).
- ``record``: ``root_dir/grid_search.json``, what a resumed search skips, and the
  failed runs' output tails.
- ``runner``: the training subprocesses, at most ``max_worker_num`` at once, and the
  forwarding of SIGTERM / SIGINT to them.
- ``summary``: each finished run's objective from its event files, and the table of
  ``summary.md``.
"""
