"""Neural networks used by algorithms."""
