"""alf's benchmarks: run them from the repository root as ``python -m benchmarks.<name>``."""
