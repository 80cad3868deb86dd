"""``OnPolicyAlgorithm``: each unroll is used for exactly one update, then discarded."""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.algorithms.rl_algorithm import RLAlgorithm


class OnPolicyAlgorithm(RLAlgorithm):
    """An RL algorithm trained on its latest unroll (e.g. actor-critic / A2C).

    The unroll ``[T, B]`` plus the bootstrap row (see ``rl_algorithm``) is
    preprocessed, ``train_step`` recomputes the outputs with gradient over all
    ``T + 1`` rows at once (or step by step for recurrent models), and one
    ``update_with_gradient`` is made with the bootstrap row and LAST steps
    masked out.
    """

    is_on_policy = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        needs_replay = self._data_transformer.needs_replay() if self.is_on_policy else []
        if needs_replay:  # (PPO derives from this class but trains from its replay buffer)
            raise ValueError(
                f"{self._name} trains on the transformed experience of its rollout and never "
                f"replays it, but data transformers {needs_replay} only act on replayed "
                f"experience (use update_mode='rollout' for normalizers; "
                f"HindsightExperienceTransformer needs an off-policy algorithm)"
            )

    def _train_iter_on_policy(self) -> int:
        experiences = self.unroll(self._config.unroll_length)
        experiences.append(self.bootstrap_experience())
        experience = nest.stack_nests(experiences)
        experience = self.preprocess_experience(experience)
        num_rows, batch_size = experience.time_step.step_type.shape[:2]
        valid = torch.ones(
            num_rows, batch_size, dtype=torch.bool, device=experience.time_step.step_type.device
        )
        valid[-1] = False
        self.update_from_experience(experience, valid)
        self.after_train_iter(experience)
        return (num_rows - 1) * batch_size
