"""Algorithms: the Algorithm base class, RL algorithms and data transformers."""
