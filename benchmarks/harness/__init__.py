"""What the benchmarks share: the command line and run loop (``cli``), subprocesses
(``runner``, ``interleave``), steady-state timing (``steady``), tensorboard summaries (``tb``),
results files and RESULTS.md blocks (``report``), and the drivers of the alf-vs-SB3
(``vs_sb3``, ``sb3``) and conf-variant (``variants``) benchmarks."""
