"""Learners: the training iteration, the learner side of the actor/learner seam.

A learner gets an ``Unroll`` (``alf/algorithms/unroller.py``) and trains its
algorithm on it; it never sees the environment or the policy that collected the
unroll. Each algorithm class names the learner of the data regime it needs
(``RLAlgorithm.learner_class``), so the regime follows from the algorithm and no
conf has to select it:

* ``OnPolicyLearner`` (``OnPolicyAlgorithm``, e.g. actor-critic / A2C): the unroll,
  transformed at rollout, plus its bootstrap row, is used for exactly one update.
* ``ReplayLearner`` (``OffPolicyAlgorithm``: SAC, DDPG/TD3, DQN): raw experience
  goes into a replay buffer and is replayed through the data transformers, with
  ALF's knobs (``whole_replay_buffer_training``, ``clear_replay_buffer``,
  ``initial_collect_steps``, prioritized sampling; see ``ReplayLearner``).
* ``EpochLearner`` (``PPOAlgorithm``): the latest unroll only, replayed raw through
  the data transformers, trained on for ``num_updates_per_train_iter`` epochs of
  shuffled minibatches, then discarded.

**Bootstrap row.** When training uses every step of the latest unroll
(``OnPolicyLearner``, and a replay buffer trained whole and then cleared), the
last unrolled step's successor is the environment's current time step. The actor
appends it as ``Unroll.bootstrap`` (its action not taken), so returns and
advantages of step ``T-1`` bootstrap from it; it is never trained on. (ALF instead
leaves the last step of each unroll with a zero advantage, wasting 1/T of the data.)

**Minibatches** (at the end of this file): ``split_sequences`` cuts an unroll into
equal pieces, ``shuffled_mini_batches`` draws one epoch of minibatches of them,
``split_batch`` cuts a sampled batch into the parts of consecutive updates, and
``sample_weights`` reads the importance weights of prioritized replay. Minibatches of
whole episode segments (recurrent policies) are in ``trajectory_batching``.
"""

from __future__ import annotations

import logging

import torch

import alf.nest as nest
from alf.algorithms.data_transformer_base import statistics_frozen
from alf.algorithms.trajectory_batching import episode_segments, trajectory_mini_batches
from alf.algorithms.unroller import Unroll
from alf.data_structures import BatchInfo, Experience, StepType
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.tensor_specs import TensorSpec
from alf.utils.device import to_device
from alf.utils.schedulers import LinearScheduler


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

    def __init__(self, algorithm, config):
        self._algorithm = algorithm
        self._config = config
        self._mini_batch_size = config.mini_batch_size

    def set_mini_batch_size(self, mini_batch_size: int | None) -> None:
        """Train on minibatches of ``mini_batch_size`` (None: all) instead of
        ``TrainerConfig.mini_batch_size``: this learner rank's share of it
        (``alf.trainers.run_state.RunState``)."""
        self._mini_batch_size = mini_batch_size

    def check_data_transformer(self, transformer) -> None:
        """A ``ValueError`` when it cannot train with ``transformer`` (none here)."""

    def needs_bootstrap_row(self) -> bool:
        """Whether the unrolls it is given must carry their bootstrap row."""
        return False

    @property
    def replay_buffer(self) -> ReplayBuffer | None:
        """The replay buffer, if this learner keeps one (and it was built)."""
        return None

    def _can_sample(self, buffer: ReplayBuffer) -> bool:
        """Whether sampled training finds a sequence of ``mini_batch_length`` steps: with
        ``initial_collect_steps`` below that length (e.g. 0), training starts once every
        env has stored that many steps (the random-action window is unchanged)."""
        if self.whole_replay_buffer_training:
            return True
        length = self._config.mini_batch_length or self._config.unroll_length
        return int(buffer.current_size().min()) >= length

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


class OnPolicyLearner(Learner):
    """One update on the latest unroll ``[T, B]`` and its bootstrap row, then discarded.

    The unroll was transformed at rollout. ``preprocess_experience`` sees all
    ``T + 1`` rows, ``train_step`` recomputes the outputs with gradient over all of
    them (at once, or step by step for recurrent models), and one
    ``update_with_gradient`` is made with the bootstrap row and LAST steps masked out.
    ``TrainerConfig.whole_replay_buffer_training`` and ``clear_replay_buffer`` need not be
    set; set to False they are an error.
    """

    def __init__(self, algorithm, config):
        _refuse_replay_settings(algorithm, config, "once")
        super().__init__(algorithm, config)

    def check_data_transformer(self, transformer) -> None:
        needs_replay = transformer.needs_replay()
        if needs_replay:
            raise ValueError(
                f"{self._algorithm.name} trains on the transformed experience of its rollout and "
                f"never replays it, but data transformers {needs_replay} only act on replayed "
                f"experience (use update_mode='rollout' for normalizers; "
                f"HindsightExperienceTransformer needs an off-policy algorithm)"
            )

    def needs_bootstrap_row(self) -> bool:
        return True

    def train(self, unroll: Unroll) -> None:
        alg = self._algorithm
        experience = nest.stack_nests([*unroll.experiences, unroll.bootstrap])
        experience = alg.preprocess_experience(experience)
        num_rows, batch_size = experience.time_step.step_type.shape[:2]
        valid = torch.ones(
            num_rows, batch_size, dtype=torch.bool, device=experience.time_step.step_type.device
        )
        valid[-1] = False
        alg.update_from_experience(experience, valid)
        alg.after_train_iter(experience)


class ReplayLearner(Learner):
    """Trains from a replay buffer of raw experience (ALF's off-policy iteration).

    Per iteration:

    1. the unroll's raw steps are stored in the replay buffer (built from the first
       unroll, whose nest structure it takes);
    2. nothing is trained until every env has ``initial_collect_steps`` steps (and, for
       sampled training, the ``mini_batch_length`` steps of one sample);
    3. ``whole_replay_buffer_training``: the whole buffer ``[T, B]`` is transformed
       and preprocessed once, then for each of ``num_updates_per_train_iter`` epochs
       its ``(T / mini_batch_length) * B`` sequences (time order kept inside each)
       are shuffled and updated on in minibatches of ``mini_batch_size``; otherwise
       ``mini_batch_size * num_updates_per_train_iter`` sequences of
       ``mini_batch_length`` are sampled at once and split into that many updates;
    4. ``clear_replay_buffer``: the buffer is emptied after training.

    **Prioritized replay** (``TrainerConfig.priority_replay``; Schaul et al. 2016,
    "Prioritized Experience Replay"). Sampled training draws sequences by priority
    and gives each minibatch ``experience.batch_info = BatchInfo(env_ids, positions,
    importance_weights)`` (each ``[B]``); ``RLAlgorithm.update_from_experience``
    weights the loss with the importance weights and sends ``LossInfo.priority``
    back to the buffer. ``beta`` is annealed linearly from ``priority_replay_beta``
    to 1 over the training progress. The minibatches of one iteration are drawn
    together, so updated priorities count from the next iteration on.

    **Checkpoints.** ``PolicyTrainer`` saves ``replay_buffer.state_dict()``. A state
    loaded before the buffer exists is kept and loaded right after the buffer is
    built, before the first step is added.
    """

    raw_experience = True
    keeps_replay_buffer = True

    def __init__(self, algorithm, config):
        super().__init__(algorithm, config)
        self._replay_buffer: ReplayBuffer | None = None
        self._pending_replay_buffer_state: dict | None = None
        self._initial_collect_done = False
        if config.trajectory_mini_batches and not self.needs_bootstrap_row():
            raise ValueError(
                "TrainerConfig.trajectory_mini_batches trains on the latest unroll: it needs "
                "whole_replay_buffer_training=True and clear_replay_buffer=True"
            )

    @property
    def whole_replay_buffer_training(self) -> bool:
        """``TrainerConfig.whole_replay_buffer_training`` (unset: False, sampling)."""
        return bool(self._config.whole_replay_buffer_training)

    @property
    def clear_replay_buffer(self) -> bool:
        """``TrainerConfig.clear_replay_buffer`` (unset: False, the buffer is kept)."""
        return bool(self._config.clear_replay_buffer)

    @property
    def replay_buffer(self) -> ReplayBuffer | None:
        return self._replay_buffer

    def needs_bootstrap_row(self) -> bool:
        return self.whole_replay_buffer_training and self.clear_replay_buffer

    def initial_collect_pending(self) -> bool:
        """Whether some env still has fewer than ``initial_collect_steps`` steps in the
        replay buffer, i.e. training has not started yet: the window in which
        algorithms with ``random_initial_collect`` act uniformly at random
        (Stable-Baselines3's ``learning_starts``)."""
        if self._initial_collect_done:
            return False
        buffer = self._replay_buffer
        size = 0 if buffer is None else int(buffer.current_size().min())
        if size < self._config.initial_collect_steps:
            return True
        # The buffer only grows unless it is cleared: no need to look again.
        self._initial_collect_done = not self.clear_replay_buffer
        return False

    def load_replay_buffer_state(self, state: dict) -> None:
        """Load a checkpointed ``ReplayBuffer.state_dict()`` (now, or when the buffer is
        built; see the class doc)."""
        if self._replay_buffer is not None:
            self._replay_buffer.load_state_dict(state)
        else:
            self._pending_replay_buffer_state = state

    def end_trajectories(self) -> None:
        """End each env's stored trajectory at its newest step.

        That step's successor will never be stored (the env restarts), so it becomes a
        time-limit LAST (discount unchanged): earlier steps still bootstrap from it,
        and no transition is trained across the seam.
        """
        if self._replay_buffer is not None:
            self._replay_buffer.set_newest("time_step.step_type", StepType.LAST)

    def _create_replay_buffer(self, experience: Experience) -> ReplayBuffer:
        """A buffer for steps like ``experience`` ``[B, ...]``, prioritized as configured."""
        cfg = self._config
        spec = nest.map_structure(lambda x: TensorSpec.from_tensor(x, from_dim=1), experience)
        return ReplayBuffer(
            spec,
            num_environments=experience.time_step.step_type.shape[0],
            max_length=cfg.replay_buffer_length,
            prioritized_sampling=cfg.priority_replay,
            priority_alpha=cfg.priority_replay_alpha,
            priority_beta=LinearScheduler([(0.0, cfg.priority_replay_beta), (1.0, 1.0)]),
            priority_eps=cfg.priority_replay_eps,
        )

    def _ensure_replay_buffer(self, experience: Experience) -> ReplayBuffer:
        if self._replay_buffer is None:
            buffer = self._create_replay_buffer(experience)
            logging.info(
                "Replay buffer: %d envs x %d steps, %d bytes per transition, %.1f MB in all%s",
                buffer.num_environments,
                buffer.max_length,
                buffer.bytes_per_transition(),
                buffer.total_bytes() / 1e6,
                " (prioritized)" if buffer.prioritized_sampling else "",
            )
            if self._pending_replay_buffer_state is not None:
                buffer.load_state_dict(self._pending_replay_buffer_state)
                self._pending_replay_buffer_state = None
                logging.info("Replay buffer restored: %s steps", buffer.current_size().tolist())
            self._replay_buffer = buffer
        return self._replay_buffer

    def train(self, unroll: Unroll) -> None:
        experiences = unroll.experiences
        buffer = self._ensure_replay_buffer(experiences[0])
        if self.clear_replay_buffer and len(experiences) > buffer.max_length:
            raise ValueError(
                f"TrainerConfig.replay_buffer_length ({buffer.max_length}) must be >= "
                f"unroll_length ({len(experiences)}) when clear_replay_buffer is True"
            )
        _store(buffer, experiences)
        if self.initial_collect_pending() or not self._can_sample(buffer):
            return
        if self.whole_replay_buffer_training:
            self._train_on_whole_buffer(unroll.bootstrap)
        else:
            self._train_on_samples()
        if self.clear_replay_buffer:
            buffer.clear()

    def _transform(self, experience: Experience, env_ids, positions) -> Experience:
        """Raw replayed ``[T, B]`` experience → device, transformed by the data transformers.

        The transformers get ``experience.batch_info = BatchInfo(env_ids, positions, (),
        replay_buffer)`` (``[B]`` buffer rows and replay positions of row 0, on the CPU)
        so those that read the buffer can (see ``data_transformer``); it is removed again
        afterwards.
        """
        experience = to_device(experience._replace(batch_info=()))
        batch_info = BatchInfo(
            env_ids=env_ids, positions=positions, replay_buffer=self._replay_buffer
        )
        experience = self._algorithm.data_transformer.transform_experience(
            experience._replace(batch_info=batch_info)
        )
        return experience._replace(batch_info=())

    def _whole_buffer_experience(self, bootstrap: Experience | None) -> Experience:
        """The whole buffer ``[T, B]``, transformed and preprocessed (with the bootstrap
        row appended for preprocessing when there is one, then dropped)."""
        alg, buffer = self._algorithm, self._replay_buffer
        experience = nest.map_structure(lambda x: x.transpose(0, 1), buffer.gather_all())
        env_ids = torch.arange(buffer.num_environments)
        experience = self._transform(experience, env_ids, buffer.first_pos())
        if bootstrap is None:
            return alg.preprocess_experience(experience)
        # The bootstrap row is the next unroll's first step: transformed with the
        # statistics frozen, so normalizers count it once (then).
        with statistics_frozen(alg.data_transformer):
            bootstrap = nest.map_structure(lambda x: x.cpu().unsqueeze(0), bootstrap)
            bootstrap = self._transform(bootstrap, env_ids, buffer.current_pos.clone())
        experience = nest.map_structure(
            lambda x, y: torch.cat([x, y.to(x.dtype)]), experience, bootstrap
        )
        experience = alg.preprocess_experience(experience)
        return nest.map_structure(lambda x: x[:-1], experience)

    def _train_on_whole_buffer(self, bootstrap: Experience | None) -> None:
        cfg, alg = self._config, self._algorithm
        experience = self._whole_buffer_experience(bootstrap)
        if cfg.trajectory_mini_batches:
            segments = episode_segments(experience)

            def epoch():
                return trajectory_mini_batches(segments, self._mini_batch_size)
        else:
            sequences = split_sequences(experience, cfg.mini_batch_length)

            def epoch():
                return shuffled_mini_batches(sequences, self._mini_batch_size)

        for _ in range(cfg.num_updates_per_train_iter):
            for mini_batch in epoch():
                alg.update_from_experience(mini_batch)
                if alg.stop_training_epochs():
                    break
            if alg.stop_training_epochs():
                break
        alg.after_train_iter(experience)

    def _train_on_samples(self) -> None:
        cfg, alg, buffer = self._config, self._algorithm, self._replay_buffer
        length = cfg.mini_batch_length or cfg.unroll_length
        mini_batch_size = self._mini_batch_size or buffer.num_environments
        total = mini_batch_size * cfg.num_updates_per_train_iter
        experience, batch_info = buffer.get_batch(total, length, time_major=True)
        for part_exp, part_info in split_batch(
            experience, batch_info, cfg.num_updates_per_train_iter, mini_batch_size
        ):
            part_exp = self._transform(part_exp, part_info.env_ids, part_info.positions)
            part_exp = alg.preprocess_experience(part_exp)
            alg.update_from_experience(part_exp._replace(batch_info=to_device(part_info)))
            if alg.stop_training_epochs():
                break
        alg.after_train_iter(experience._replace(batch_info=batch_info))


class EpochLearner(ReplayLearner):
    """PPO's regime: several epochs of minibatches over the latest unroll, then discard it.

    A ``ReplayLearner`` that always trains on its whole buffer and clears it
    afterwards (the buffer keeps ``replay_buffer_length >= unroll_length`` steps per
    env, so ``FrameStacker`` can still read the previous unroll's last frames): the
    raw unroll is replayed through the data transformers (so normalizers
    may update in ``'replay'`` mode and ``FrameStacker`` reads its frames from the
    buffer), preprocessed with the bootstrap row (PPO's advantages), and trained on
    for ``num_updates_per_train_iter`` epochs of ``mini_batch_size`` sequences of
    ``mini_batch_length`` steps (or whole episode segments with
    ``trajectory_mini_batches``). ``TrainerConfig.whole_replay_buffer_training`` and
    ``clear_replay_buffer`` need not be set; set to False they are an error.
    """

    def __init__(self, algorithm, config):
        _refuse_replay_settings(algorithm, config, "for several epochs")
        super().__init__(algorithm, config)

    @property
    def whole_replay_buffer_training(self) -> bool:
        return True

    @property
    def clear_replay_buffer(self) -> bool:
        return True


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


def _store(buffer: ReplayBuffer, experiences: list[Experience]) -> None:
    """Add an unroll's steps ``[B, ...]`` to ``buffer``, each row to its env's slots."""
    if len(experiences) == 1:
        buffer.add_batch(experiences[0], experiences[0].time_step.env_id)
        return
    unrolled = nest.stack_nests(experiences)
    env_ids = unrolled.time_step.env_id
    if bool((env_ids == env_ids[0]).all()):  # rows keep their env (batched envs do)
        buffer.add_steps(unrolled, env_ids[0])
    else:
        for exp in experiences:
            buffer.add_batch(exp, exp.time_step.env_id)


# -- minibatches ----------------------------------------------------------------------


def sample_weights(experience: Experience) -> torch.Tensor | None:
    """``[T, B]`` importance weights of replayed ``[T, B]`` experience, or None."""
    batch_info = experience.batch_info
    if not isinstance(batch_info, BatchInfo) or not torch.is_tensor(batch_info.importance_weights):
        return None
    num_steps = experience.time_step.step_type.shape[0]
    weights = batch_info.importance_weights
    return weights.unsqueeze(0).expand(num_steps, *weights.shape)


def split_batch(experience: Experience, batch_info, num_parts: int, part_size: int):
    """``num_parts`` consecutive pieces ``[T, part_size]`` of sampled ``experience``
    ``[T, num_parts * part_size]`` with their ``batch_info`` ``[part_size]`` (the
    whole as is when there is one piece)."""
    if num_parts == 1:
        yield experience, batch_info
        return
    for i in range(num_parts):
        part = slice(i * part_size, (i + 1) * part_size)
        yield (
            nest.map_structure(lambda x, s=part: x[:, s], experience),
            nest.map_structure(lambda x, s=part: x[s], batch_info),
        )


def shuffled_mini_batches(sequences: Experience, mini_batch_size: int | None):
    """One epoch over ``sequences`` ``[L, N]``: minibatches ``[L, mini_batch_size]``
    of a random permutation of the ``N`` sequences (the last one may be smaller).

    When one minibatch holds all ``N`` sequences it is ``sequences`` itself: the
    loss is a mean over the minibatch, which no permutation of its rows changes,
    so drawing and applying one would only cost time.
    """
    num_sequences = nest.get_nest_batch_size(sequences, dim=1)
    mini_batch_size = mini_batch_size or num_sequences
    if mini_batch_size >= num_sequences:
        yield sequences
        return
    leaves, treespec = nest.flatten_with_spec(sequences)
    perm = torch.randperm(num_sequences)
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
