"""Environments: gymnasium adapters, wrappers and batched (thread / process) environments."""
