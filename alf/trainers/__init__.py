"""Trainers that run the training loop."""
