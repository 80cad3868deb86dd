"""Example conf files."""
