"""``OffPolicyAlgorithm``: trains from a replay buffer of raw experience.

Its learner is the ``ReplayLearner`` (``alf/learners/__init__.py``), which keeps
the replay buffer and runs ALF's off-policy iteration: raw steps stored, nothing
trained before ``initial_collect_steps``, then whole-buffer epochs or sampled
minibatches (optionally prioritized), replayed through the data transformers.
"""

from __future__ import annotations

from alf.algorithms.rl_algorithm import RLAlgorithm
from alf.learners.replay_learner import ReplayLearner


class OffPolicyAlgorithm(RLAlgorithm):
    """An RL algorithm trained on experience replayed from a buffer."""

    learner_class = ReplayLearner

    #: the learner's ``initial_collect_pending`` as a policy copy was told it
    #: (``set_actor_context``); None: ask this algorithm's own learner
    _told_initial_collect_pending: bool | None = None

    def initial_collect_pending(self) -> bool:
        """Whether training still waits for ``initial_collect_steps`` steps per env in the
        replay buffer: the window in which algorithms with ``random_initial_collect`` act
        uniformly at random (Stable-Baselines3's ``learning_starts``). False without a
        ``TrainerConfig``. A policy copy acting for a learner elsewhere answers what the
        learner said (``set_actor_context``): its own replay buffer stays empty."""
        if self._told_initial_collect_pending is not None:
            return self._told_initial_collect_pending
        return self._learner is not None and self._learner.initial_collect_pending()

    def actor_context(self) -> dict:
        """``initial_collect_pending``: constant over an unroll, as in-process."""
        return {"initial_collect_pending": bool(self.initial_collect_pending())}

    def set_actor_context(self, context: dict) -> None:
        self._told_initial_collect_pending = bool(context["initial_collect_pending"])
