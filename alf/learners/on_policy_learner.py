"""On-policy learners: training on the unroll just collected, then discarding it.

The unroll comes transformed (the data transformers ran once, at rollout) and on the
training device, with its bootstrap row; it is stacked into one ``[T + 1, B]`` nest and
never stored. Two regimes:

* ``OnPolicyLearner`` (``OnPolicyAlgorithm``, e.g. actor-critic / A2C): one update on
  all ``T + 1`` rows, the bootstrap row masked out;
* ``EpochLearner`` (``PPOAlgorithm``): ``num_updates_per_train_iter`` epochs of
  shuffled minibatches of the ``T`` unrolled steps.

**Bootstrap row.** The last unrolled step's successor is the environment's current
time step. The actor appends it as ``Unroll.bootstrap`` (its action not taken), so
returns and advantages of step ``T-1`` bootstrap from it; it is never trained on. (ALF
instead leaves the last step of each unroll with a zero advantage, wasting 1/T of the
data.)

**Statistics.** Nothing is replayed, so a normalizer's ``'replay'`` statistics are
counted from the rollout's steps as in ``'rollout'`` mode (``DataTransformer.
train_on_rollout``): the unroll is normalized with the statistics it was acted with,
and its steps update them when the iteration ends. Transformers that need a replay
buffer (``HindsightExperienceTransformer``) are refused.
"""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.data_structures import Experience
from alf.learners.learner import Learner, mini_batch_epochs
from alf.learners.unroller import Unroll


class OnPolicyLearner(Learner):
    """One update on the latest unroll ``[T, B]`` and its bootstrap row, then discarded.

    ``preprocess_experience`` sees all ``T + 1`` rows, ``train_step`` recomputes the
    outputs with gradient over all of them (at once, or step by step for recurrent
    models), and one ``update_with_gradient`` is made with the bootstrap row and LAST
    steps masked out. ``TrainerConfig.whole_replay_buffer_training`` and
    ``clear_replay_buffer`` need not be set; set to False they are an error.
    """

    #: how it uses each unroll, for the error about replay settings
    regime = "once"

    def __init__(self, algorithm, config):
        _refuse_replay_settings(algorithm, config, self.regime)
        super().__init__(algorithm, config)

    def prepare_data_transformer(self, transformer) -> None:
        """Nothing is replayed: 'replay' statistics count the rollout's steps
        (``DataTransformer.train_on_rollout``); a transformer that needs replayed
        experience is refused."""
        transformer.train_on_rollout()
        needs_replay = transformer.needs_replay()
        if needs_replay:
            raise ValueError(
                f"{self._algorithm.name} trains on the transformed experience of its rollout "
                f"and never replays it, but data transformers {needs_replay} only act on "
                f"replayed experience (HindsightExperienceTransformer needs an off-policy "
                f"algorithm)"
            )

    def needs_bootstrap_row(self) -> bool:
        return True

    def train(self, unroll: Unroll) -> None:
        alg = self._algorithm
        experience = nest.stack_nests([*unroll.experiences, unroll.bootstrap])
        experience = alg.preprocess_experience(experience)
        alg.after_train_iter(self._update(experience))

    def _update(self, experience: Experience) -> Experience:
        """Train on the preprocessed ``[T + 1, B]`` rows; returns what ``after_train_iter``
        gets."""
        num_rows, batch_size = experience.time_step.step_type.shape[:2]
        valid = torch.ones(
            num_rows, batch_size, dtype=torch.bool, device=experience.time_step.step_type.device
        )
        valid[-1] = False
        self._algorithm.update_from_experience(experience, valid)
        return experience


class EpochLearner(OnPolicyLearner):
    """PPO's regime: epochs of minibatches over the latest unroll, then discard it.

    The ``T + 1`` rows are preprocessed together (PPO's advantages bootstrap from the
    last one), the bootstrap row is dropped, and the ``T`` steps are trained on for
    ``num_updates_per_train_iter`` epochs of ``mini_batch_size`` sequences of
    ``mini_batch_length`` steps (or of whole episode segments with
    ``trajectory_mini_batches``), each epoch a new permutation. The algorithm may end
    the epochs early (``stop_training_epochs``, PPO's ``target_kl``).
    """

    regime = "for several epochs"

    def _update(self, experience: Experience) -> Experience:
        alg = self._algorithm
        experience = nest.map_structure(lambda x: x[:-1], experience)
        epochs = mini_batch_epochs(experience, self._config, self._mini_batch_size, self._shuffle)
        for epoch in epochs:
            for mini_batch in epoch:
                alg.update_from_experience(mini_batch)
                if alg.stop_training_epochs():
                    return experience
        return experience


def _refuse_replay_settings(algorithm, config, how: str) -> None:
    """An algorithm that trains on each unroll ``how`` and then discards it cannot honour
    ``whole_replay_buffer_training`` or ``clear_replay_buffer`` set to False: an error naming
    them (unset or True, they describe what it does anyway)."""
    contradicting = [
        name
        for name in ("whole_replay_buffer_training", "clear_replay_buffer")
        if getattr(config, name) is False
    ]
    if contradicting:
        raise ValueError(
            f"{algorithm.name} trains on each unroll {how} and then discards it: "
            f"TrainerConfig.{' and '.join(contradicting)} cannot be False for it (leave them "
            f"unset)"
        )
