"""Parallel training across processes: ``collectives``, the process group of data-parallel
learner ranks and the collectives they use."""
