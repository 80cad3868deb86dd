"""``OffPolicyAlgorithm``: trains from a replay buffer of raw experience.

Per iteration (ALF's scheme):

1. unroll ``unroll_length`` steps without gradient and store the *raw*
   (untransformed) experience in the replay buffer;
2. skip training until every env has ``initial_collect_steps`` steps;
3. ``whole_replay_buffer_training``: take the whole buffer ``[T, B]``, transform
   and preprocess it once, then for each of ``num_updates_per_train_iter``
   epochs shuffle the ``(T / mini_batch_length) * B`` sequences (time order kept
   inside each) and update on minibatches of ``mini_batch_size`` of them;
   otherwise sample ``mini_batch_size * num_updates_per_train_iter`` sequences of
   ``mini_batch_length`` once and split them into that many updates;
4. ``clear_replay_buffer``: empty the buffer after training.

PPO uses this path with whole-buffer training and ``clear_replay_buffer``.

**Prioritized replay** (``TrainerConfig.priority_replay``; Schaul et al. 2016,
"Prioritized Experience Replay"). Sampled training draws sequences by priority
and sets ``experience.batch_info = BatchInfo(env_ids, positions,
importance_weights)`` (each ``[B]``) on every minibatch. The importance weights
``(N * P(i))^-beta / max_j (N * P(j))^-beta`` (normalized by the largest weight
over the whole buffer) multiply the per-sample loss ``[T, B]`` in
``update_with_gradient``, with ``beta`` annealed linearly from
``priority_replay_beta`` to 1 over the training progress. After each update,
when ``calc_loss`` returned ``LossInfo.priority`` ``[B]`` (one value per sequence,
e.g. its mean ``|TD error|``), the priorities of the sequences' first steps are
set to it; new steps get the largest priority so far. The minibatches of one
iteration are drawn together, so updated priorities count from the next
iteration on.

**Checkpoints.** ``PolicyTrainer`` saves ``replay_buffer.state_dict()``. The
buffer is built from the first unrolled experience (its nest structure is only
known then), so ``load_replay_buffer_state`` keeps a state given before that and
loads it right after the buffer is built, before the first step is added.
"""

from __future__ import annotations

import logging

import torch

import alf.nest as nest
from alf.algorithms.data_transformer import statistics_frozen
from alf.algorithms.rl_algorithm import RLAlgorithm
from alf.algorithms.trajectory_batching import episode_segments, trajectory_mini_batches
from alf.data_structures import BatchInfo, Experience, LossInfo, StepType
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.tensor_specs import TensorSpec
from alf.utils.device import get_device, to_device
from alf.utils.schedulers import LinearScheduler


class OffPolicyAlgorithm(RLAlgorithm):
    """An RL algorithm trained on experience replayed from a buffer."""

    is_on_policy = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._replay_buffer: ReplayBuffer | None = None
        self._pending_replay_buffer_state: dict | None = None
        self._train_experience_steps = 0
        self._initial_collect_done = False

    @property
    def replay_buffer(self) -> ReplayBuffer | None:
        return self._replay_buffer

    def initial_collect_pending(self) -> bool:
        """Whether some env still has fewer than ``initial_collect_steps`` steps in the
        replay buffer, i.e. training has not started yet: the window in which
        algorithms with ``random_initial_collect`` act uniformly at random
        (Stable-Baselines3's ``learning_starts``). False without a ``TrainerConfig``."""
        if self._initial_collect_done or self._config is None:
            return False
        buffer = self._replay_buffer
        size = 0 if buffer is None else int(buffer.current_size().min())
        if size < self._config.initial_collect_steps:
            return True
        # The buffer only grows unless it is cleared: no need to look again.
        self._initial_collect_done = not self._config.clear_replay_buffer
        return False

    def _make_experience(self, time_step, transformed, policy_step, policy_state) -> Experience:
        """Store the raw time step: transformers run again on replayed data."""
        return Experience(
            time_step=time_step,
            action=_to_cpu(policy_step.output),
            rollout_info=_to_cpu(policy_step.info),
            state=_to_cpu(policy_state),
        )

    def load_replay_buffer_state(self, state: dict) -> None:
        """Load a checkpointed ``ReplayBuffer.state_dict()``.

        Loaded at once when the buffer exists, else kept and loaded as soon as
        the first unroll builds the buffer (see the module doc).
        """
        if self._replay_buffer is not None:
            self._replay_buffer.load_state_dict(state)
        else:
            self._pending_replay_buffer_state = state

    def _create_replay_buffer(self, experience: Experience) -> ReplayBuffer:
        """A buffer for steps like ``experience`` ``[B, ...]``, prioritized as configured."""
        cfg = self._config
        spec = nest.map_structure(lambda x: TensorSpec.from_tensor(x, from_dim=1), experience)
        return ReplayBuffer(
            spec,
            num_environments=self._env.batch_size,
            max_length=cfg.replay_buffer_length,
            prioritized_sampling=cfg.priority_replay,
            priority_alpha=cfg.priority_replay_alpha,
            priority_beta=LinearScheduler([(0.0, cfg.priority_replay_beta), (1.0, 1.0)]),
            priority_eps=cfg.priority_replay_eps,
        )

    def restart_environment(self, seed: int) -> None:
        """Restart the env and end each env's stored trajectory there.

        The newest stored step's successor will never be stored (the env restarts),
        so it becomes a time-limit LAST (discount unchanged): earlier steps still
        bootstrap from it, and no transition is trained across the seam.
        """
        if self._replay_buffer is not None:
            self._replay_buffer.set_newest("time_step.step_type", StepType.LAST)
        super().restart_environment(seed)

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

    def _uses_bootstrap_row(self) -> bool:
        cfg = self._config
        return cfg.whole_replay_buffer_training and cfg.clear_replay_buffer

    def _train_iter_off_policy(self) -> int:
        cfg = self._config
        experiences = self.unroll(cfg.unroll_length)
        buffer = self._ensure_replay_buffer(experiences[0])
        if cfg.clear_replay_buffer and cfg.unroll_length > buffer.max_length:
            raise ValueError(
                f"TrainerConfig.replay_buffer_length ({buffer.max_length}) must be >= "
                f"unroll_length ({cfg.unroll_length}) when clear_replay_buffer is True"
            )
        self._store(buffer, experiences)
        steps = len(experiences) * self._env.batch_size
        if self.initial_collect_pending():
            return steps
        if cfg.whole_replay_buffer_training:
            self._train_on_whole_buffer()
        else:
            self._train_on_samples()
        if cfg.clear_replay_buffer:
            buffer.clear()
        return steps

    @staticmethod
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
        experience = self._data_transformer.transform_experience(
            experience._replace(batch_info=batch_info)
        )
        return experience._replace(batch_info=())

    def _prepare(self, experience: Experience, env_ids, positions) -> Experience:
        """``_transform`` then ``preprocess_experience``."""
        return self.preprocess_experience(self._transform(experience, env_ids, positions))

    def _train_on_whole_buffer(self) -> None:
        cfg = self._config
        buffer = self._replay_buffer
        experience = nest.map_structure(lambda x: x.transpose(0, 1), buffer.gather_all())
        env_ids = torch.arange(buffer.num_environments)
        experience = self._transform(experience, env_ids, buffer.first_pos())
        if self._uses_bootstrap_row():
            # The bootstrap row is the next unroll's first step: transformed with the
            # statistics frozen, so normalizers count it once (then).
            with statistics_frozen(self._data_transformer):
                bootstrap = self.bootstrap_experience(raw=True)
                bootstrap = nest.map_structure(lambda x: x.cpu().unsqueeze(0), bootstrap)
                bootstrap = self._transform(bootstrap, env_ids, buffer.current_pos.clone())
            experience = nest.map_structure(
                lambda x, y: torch.cat([x, y.to(x.dtype)]), experience, bootstrap
            )
            experience = self.preprocess_experience(experience)
            experience = nest.map_structure(lambda x: x[:-1], experience)
        else:
            experience = self.preprocess_experience(experience)
        if cfg.trajectory_mini_batches:
            segments = episode_segments(experience)

            def epoch():
                return trajectory_mini_batches(segments, cfg.mini_batch_size)
        else:
            sequences = _split_sequences(experience, cfg.mini_batch_length)

            def epoch():
                return _shuffled_mini_batches(sequences, cfg.mini_batch_size)

        for _ in range(cfg.num_updates_per_train_iter):
            for mini_batch in epoch():
                self.update_from_experience(mini_batch)
                if self.stop_training_epochs():
                    break
            if self.stop_training_epochs():
                break
        self.after_train_iter(experience)

    def _train_on_samples(self) -> None:
        cfg = self._config
        length = cfg.mini_batch_length or cfg.unroll_length
        mini_batch_size = cfg.mini_batch_size or self._env.batch_size
        total = mini_batch_size * cfg.num_updates_per_train_iter
        experience, batch_info = self._replay_buffer.get_batch(total, length, time_major=True)
        for part_exp, part_info in _split_batch(
            experience, batch_info, cfg.num_updates_per_train_iter, mini_batch_size
        ):
            part_exp = self._prepare(part_exp, part_info.env_ids, part_info.positions)
            self.update_from_experience(part_exp._replace(batch_info=to_device(part_info)))
            if self.stop_training_epochs():
                break
        self.after_train_iter(experience._replace(batch_info=batch_info))

    def update_from_experience(self, experience: Experience, valid_masks=None) -> LossInfo:
        """``RLAlgorithm.update_from_experience`` plus prioritized replay.

        Importance weights in ``experience.batch_info`` (when a tensor) weight the
        per-sample loss, and a returned ``LossInfo.priority`` ``[B]`` updates the
        priorities of the replayed sequences (see the module doc). ``train_steps``
        gets the experience without its ``batch_info`` (whose leaves are ``[B]``);
        ``after_update`` gets it whole.

        Args:
            experience: time-major ``[T, B]`` experience on the training device.
            valid_masks: ``[T, B]`` extra mask; LAST steps are always masked out.
        """
        weights = _sample_weights(experience)
        extra_args = {} if weights is None else {"sample_weights": weights}
        with torch.enable_grad():
            info = self.train_steps(experience._replace(batch_info=()))  # [B], not [T, B]
            loss_info = self.calc_loss(info)
            mask = experience.time_step.step_type != StepType.LAST
            if valid_masks is not None:
                mask = mask & valid_masks
            loss_info = self.update_with_gradient(loss_info, mask, **extra_args)
        self.after_update(experience, info)
        self._summarize_loss(loss_info)
        self._update_priority(experience.batch_info, loss_info.priority)
        return loss_info

    def _update_priority(self, batch_info, priority) -> None:
        """Send ``priority`` ``[B]`` to the buffer for the sequences of ``batch_info``."""
        buffer = self._replay_buffer
        if not torch.is_tensor(priority) or buffer is None or not buffer.prioritized_sampling:
            return
        if not isinstance(batch_info, BatchInfo) or not torch.is_tensor(batch_info.env_ids):
            return
        buffer.update_priority(batch_info.env_ids, batch_info.positions, priority)


def _to_cpu(value):
    """Detached CPU copies of the tensors of ``value`` (as is when already on the CPU)."""
    if get_device().type == "cpu":
        return value  # rollout runs under no_grad, so nothing to detach
    return nest.map_structure(lambda x: x.detach().cpu(), value)


def _sample_weights(experience: Experience) -> torch.Tensor | None:
    """``[T, B]`` importance weights of replayed ``[T, B]`` experience, or None."""
    batch_info = experience.batch_info
    if not isinstance(batch_info, BatchInfo) or not torch.is_tensor(batch_info.importance_weights):
        return None
    num_steps = experience.time_step.step_type.shape[0]
    weights = batch_info.importance_weights
    return weights.unsqueeze(0).expand(num_steps, *weights.shape)


def _split_batch(experience: Experience, batch_info, num_parts: int, part_size: int):
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


def _shuffled_mini_batches(sequences: Experience, mini_batch_size: int | None):
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


def _split_sequences(experience: Experience, length: int | None) -> Experience:
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
