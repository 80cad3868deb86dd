"""Hyperparameter tuning launchers: grid search (``grid_search``) and the launcher side of
population-based training (``pbt``); each runs training runs as processes."""
