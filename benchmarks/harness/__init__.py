"""What every benchmark shares: running trainings in subprocesses (``runner``, ``interleave``),
timing the steady state (``steady``), reading tensorboard summaries (``tb``) and writing
result tables into ``benchmarks/RESULTS.md`` (``report``)."""
