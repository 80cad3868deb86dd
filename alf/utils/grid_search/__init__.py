"""Moved to ``alf.tuning.grid_search``; this path keeps older imports working."""
