"""``ReplayLearner``: training from a replay buffer of raw experience (off-policy).

See ``learner`` for what a learner is; ``ReplayLearner``'s doc for the iteration.
"""

from __future__ import annotations

import logging

import torch

import alf.nest as nest
from alf.data_structures import BatchInfo, Experience, StepType
from alf.data_transformers.base import statistics_frozen
from alf.data_transformers.hindsight_relabeler import HindsightExperienceTransformer
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.learners.learner import Learner, mini_batch_epochs
from alf.learners.unroller import Unroll
from alf.tensor_specs import TensorSpec
from alf.utils.device import to_device
from alf.utils.schedulers import LinearScheduler


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

    **Episodic returns** (``ReplayBuffer.record_episodic_return``, configured). Sampled
    training also gets ``BatchInfo.discounted_return`` ``[B, T]``, each step's return to
    its episode's end, and puts it time-major in ``rollout_info.discounted_return`` when
    the algorithm's rollout info has that field (``LowerBoundedTDLoss`` uses it).

    **Checkpoints.** ``PolicyTrainer`` saves ``replay_buffer.state_dict()``. A state
    loaded before the buffer exists is kept and loaded right after the buffer is
    built, before the first step is added.
    """

    raw_experience = True
    keeps_replay_buffer = True
    trains_off_policy = True

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

    def _can_sample(self, buffer: ReplayBuffer) -> bool:
        """Whether sampled training finds a sequence of ``mini_batch_length`` steps: with
        ``initial_collect_steps`` below that length (e.g. 0), training starts once every
        env has stored that many steps (the random-action window is unchanged)."""
        if self.whole_replay_buffer_training:
            return True
        length = self._config.mini_batch_length or self._config.unroll_length
        return int(buffer.current_size().min()) >= length

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

    def reset_replay_buffer(self) -> None:
        """Empty the replay buffer as at a fresh start (a PBT member's
        ``replay_buffer_on_exploit='reset'``): training waits again for
        ``initial_collect_steps`` steps of every env, as a resume of the emptied buffer would."""
        if self._replay_buffer is not None:
            self._replay_buffer.clear()
        self._pending_replay_buffer_state = None
        self._initial_collect_done = False

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
            _check_episodic_returns_with_relabelling(buffer, self._algorithm.data_transformer)
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
        for epoch in mini_batch_epochs(experience, cfg, self._mini_batch_size):
            for mini_batch in epoch:
                alg.update_from_experience(mini_batch)
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
            part_exp = with_discounted_return(part_exp, part_info)
            alg.update_from_experience(part_exp._replace(batch_info=to_device(part_info)))
        alg.after_train_iter(experience._replace(batch_info=batch_info))


def with_discounted_return(experience: Experience, batch_info: BatchInfo) -> Experience:
    """``experience`` ``[T, B]`` with ``rollout_info.discounted_return`` set to the
    sampled steps' episodic returns ``[T, B]`` (``batch_info.discounted_return``
    ``[B, T]``) when the buffer records them and the algorithm's rollout info has that
    field (as ALF's ``Agent.preprocess_experience`` does); else ``experience`` as is."""
    returns = batch_info.discounted_return
    info = experience.rollout_info
    if not torch.is_tensor(returns) or "discounted_return" not in getattr(info, "_fields", ()):
        return experience
    returns = returns.t().to(experience.time_step.reward.device)
    return experience._replace(rollout_info=info._replace(discounted_return=returns))


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


def _check_episodic_returns_with_relabelling(buffer: ReplayBuffer, transformer) -> None:
    """Hindsight relabelling changes a replayed step's goal and reward, so the buffer's
    return (of the original goal) would bound the relabelled step's target wrongly."""
    members = getattr(transformer, "members", [transformer])
    relabels = any(isinstance(m, HindsightExperienceTransformer) for m in members)
    if buffer.records_episodic_return and relabels:
        raise ValueError(
            "ReplayBuffer.record_episodic_return with HindsightExperienceTransformer: a "
            "relabelled step's return is not known; record no returns with relabelling"
        )
