"""What the benchmarks share: the command line and run loop (``cli``), subprocesses (``runner``,
``interleave``), steady-state timing (``steady``), the phase split (``phases``),
SB3's side (``sb3``), and results files and RESULTS.md blocks (``report``)."""
