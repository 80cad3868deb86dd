"""``Learner``, the base of the training iterations, and the minibatches they cut.

A learner gets an ``Unroll`` (``alf/learners/unroller.py``) and trains its algorithm
on it; it never sees the environment or the policy that collected the unroll. Each
algorithm class names the learner of the data regime it needs
(``RLAlgorithm.learner_class``), so the regime follows from the algorithm and no conf
has to select it. The regimes: ``on_policy_learner`` (``OnPolicyLearner``: one update
on the latest unroll; ``EpochLearner``: PPO's epochs of minibatches over it) and
``replay_learner`` (``ReplayLearner``: a replay buffer).

**Minibatches**: ``split_sequences`` cuts an unroll into equal pieces,
``shuffled_mini_batches`` draws one epoch of minibatches of them, ``mini_batch_epochs``
the iteration's epochs of either kind, and ``sample_weights``
reads the importance weights of prioritized replay. Minibatches of whole episode
segments (recurrent policies) are in ``trajectory_batching``.
"""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.data_structures import BatchInfo, Experience
from alf.learners.trajectory_batching import episode_segments, trajectory_mini_batches
from alf.learners.unroller import Unroll


class Learner:
    """Trains ``algorithm`` (an ``RLAlgorithm``) on the unrolls it is given.

    Args:
        algorithm: the algorithm trained.
        config: the ``TrainerConfig``.

    Attributes:
        raw_experience: the unrolls it wants hold raw time steps (to be replayed
            through the data transformers) instead of the transformed ones.
    """

    raw_experience = False
    #: whether it keeps a replay buffer (whose state a checkpoint then holds)
    keeps_replay_buffer = False
    #: whether it may train on data an older policy collected (remote samplers' policy
    #: lag, ``SamplerConfig.max_policy_lag``)
    trains_off_policy = False

    def __init__(self, algorithm, config):
        self._algorithm = algorithm
        self._config = config
        self._mini_batch_size = config.mini_batch_size
        self._shuffle = None

    def set_shuffle(self, shuffle) -> None:
        """Cut minibatches in the order of ``shuffle`` (an ``EnvStratifiedShuffle``: the
        same minibatches on any number of learner ranks) where the sizes allow it,
        instead of a uniform permutation (``alf/learners/minibatch_shuffle.py``)."""
        self._shuffle = shuffle

    def set_mini_batch_size(self, mini_batch_size: int | None) -> None:
        """Train on minibatches of ``mini_batch_size`` (None: all) instead of
        ``TrainerConfig.mini_batch_size``: this learner rank's share of it
        (``alf.trainers.run_state.RunState``)."""
        self._mini_batch_size = mini_batch_size

    def prepare_data_transformer(self, transformer) -> None:
        """Get ``transformer`` ready to be trained with (the algorithm's new data
        transformer), or a ``ValueError`` when this learner cannot train with it."""

    def needs_bootstrap_row(self) -> bool:
        """Whether the unrolls it is given must carry their bootstrap row."""
        return False

    @property
    def replay_buffer(self):
        """The replay buffer, if this learner keeps one (and it was built)."""
        return None

    def load_replay_buffer_state(self, state: dict) -> None:
        """Load a checkpointed ``ReplayBuffer.state_dict()``."""
        raise ValueError(f"{type(self).__name__} keeps no replay buffer to load a state into")

    def initial_collect_pending(self) -> bool:
        """Whether training waits for more collected steps (``initial_collect_steps``)."""
        return False

    def end_trajectories(self) -> None:
        """The environments are about to restart: no stored step has a successor."""

    def train(self, unroll: Unroll) -> None:
        """One training iteration on ``unroll``."""
        raise NotImplementedError


def sample_weights(experience: Experience) -> torch.Tensor | None:
    """``[T, B]`` importance weights of replayed ``[T, B]`` experience, or None."""
    batch_info = experience.batch_info
    if not isinstance(batch_info, BatchInfo) or not torch.is_tensor(batch_info.importance_weights):
        return None
    num_steps = experience.time_step.step_type.shape[0]
    weights = batch_info.importance_weights
    return weights.unsqueeze(0).expand(num_steps, *weights.shape)


def shuffled_mini_batches(
    sequences: Experience, mini_batch_size: int | None, shuffle=None, num_envs: int = 0
):
    """One epoch over ``sequences`` ``[L, N]``: minibatches ``[L, mini_batch_size]``
    of a random permutation of the ``N`` sequences (the last one may be smaller).

    When one minibatch holds all ``N`` sequences it is ``sequences`` itself: the
    loss is a mean over the minibatch, which no permutation of its rows changes,
    so drawing and applying one would only cost time. With ``shuffle`` (an
    ``EnvStratifiedShuffle``; the sequences are the pieces of ``num_envs`` envs,
    piece-major) the permutation is its stratified one where the sizes allow it.
    """
    num_sequences = nest.get_nest_batch_size(sequences, dim=1)
    mini_batch_size = mini_batch_size or num_sequences
    if mini_batch_size >= num_sequences:
        yield sequences
        return
    leaves, treespec = nest.flatten_with_spec(sequences)
    perm = None
    if shuffle is not None:
        perm = shuffle.permutation(num_sequences, num_envs, mini_batch_size)
    if perm is None:
        perm = torch.randperm(num_sequences)  # drawn on the CPU generator
    perm = perm.to(leaves[0].device)
    for start in range(0, num_sequences, mini_batch_size):
        index = perm[start : start + mini_batch_size]
        yield nest.unflatten(treespec, [x.index_select(1, index) for x in leaves])


def split_sequences(experience: Experience, length: int | None) -> Experience:
    """``[T, B]`` → ``[L, (T / L) * B]``: consecutive ``L``-step pieces of every env."""
    num_steps, batch_size = experience.time_step.step_type.shape[:2]
    length = length or num_steps
    if num_steps % length:
        raise ValueError(
            f"TrainerConfig.mini_batch_length ({length}) must divide the number of steps "
            f"per env used for whole-buffer training ({num_steps})"
        )
    pieces = num_steps // length

    def _split(x):
        x = x.reshape(pieces, length, batch_size, *x.shape[2:])
        return x.transpose(0, 1).reshape(length, pieces * batch_size, *x.shape[3:])

    return nest.map_structure(_split, experience)


def mini_batch_epochs(experience: Experience, config, mini_batch_size: int | None, shuffle=None):
    """The ``num_updates_per_train_iter`` epochs over ``experience`` ``[T, B]``, each an
    iterator of its minibatches (a new permutation each, ``shuffle``'s where it applies):
    ``mini_batch_size`` sequences of ``mini_batch_length`` steps, or of whole episode
    segments with ``trajectory_mini_batches`` (``config``: the ``TrainerConfig``)."""
    if config.trajectory_mini_batches:
        segments = episode_segments(experience)
        for _ in range(config.num_updates_per_train_iter):
            yield trajectory_mini_batches(segments, mini_batch_size)
        return
    sequences = split_sequences(experience, config.mini_batch_length)
    num_envs = int(experience.time_step.step_type.shape[1])
    for _ in range(config.num_updates_per_train_iter):
        yield shuffled_mini_batches(sequences, mini_batch_size, shuffle, num_envs)
