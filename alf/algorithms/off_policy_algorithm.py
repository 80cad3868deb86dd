"""``OffPolicyAlgorithm``: trains from a replay buffer of raw experience.

Its learner is the ``ReplayLearner`` (``alf/algorithms/learners.py``), which keeps
the replay buffer and runs ALF's off-policy iteration: raw steps stored, nothing
trained before ``initial_collect_steps``, then whole-buffer epochs or sampled
minibatches (optionally prioritized), replayed through the data transformers.
"""

from __future__ import annotations

from alf.algorithms.replay_learner import ReplayLearner
from alf.algorithms.rl_algorithm import RLAlgorithm


class OffPolicyAlgorithm(RLAlgorithm):
    """An RL algorithm trained on experience replayed from a buffer."""

    learner_class = ReplayLearner

    def initial_collect_pending(self) -> bool:
        """Whether training still waits for ``initial_collect_steps`` steps per env in the
        replay buffer: the window in which algorithms with ``random_initial_collect`` act
        uniformly at random (Stable-Baselines3's ``learning_starts``). False without a
        ``TrainerConfig``."""
        return self._learner is not None and self._learner.initial_collect_pending()
