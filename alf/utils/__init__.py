"""Utilities shared across alf."""
