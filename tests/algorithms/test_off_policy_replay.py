"""OffPolicyAlgorithm with its replay buffer: what each training mode trains on, prioritized
replay (importance weights in the loss, priority updates), and the buffer in checkpoints.

``ReplayProbeAlgorithm`` acts at random on CountingEnv and regresses the reward with a
linear model. Its rollout info is a step counter that grows by one per unrolled step, so
in sampled training a replayed step's counter equals its replay position (no bootstrap
rows are drawn there), and every update records which ``(env_id, step)`` it trained on.
``tests/confs/tiny_replay_conf.py`` runs it under ``PolicyTrainer``.
"""

import collections
import os
from typing import Any, NamedTuple

import pytest
import torch
import torch.nn as nn

import alf
from alf.algorithms.algorithm import masked_mean
from alf.algorithms.config import TrainerConfig
from alf.algorithms.off_policy_algorithm import OffPolicyAlgorithm
from alf.data_structures import AlgStep, LossInfo
from alf.optimizers import Adam
from alf.tensor_specs import TensorSpec
from alf.trainers import checkpoints
from alf.trainers.policy_trainer import PolicyTrainer
from alf.utils import common
from alf.utils.schedulers import update_progress
from tests.algorithms.algorithm_test_utils import counting_env

TINY_REPLAY_CONF = os.path.join(os.path.dirname(__file__), "..", "confs", "tiny_replay_conf.py")


class ProbeRolloutInfo(NamedTuple):
    step: Any = ()


class ProbeTrainInfo(NamedTuple):
    loss: Any = ()
    step: Any = ()


class ReplayProbeAlgorithm(OffPolicyAlgorithm):
    """Random actions; loss ``(q(o)[prev_action] - reward)^2`` ``[T, B]`` of a linear ``q``.

    ``LossInfo.priority`` ``[B]`` is ``1 + (first step counter % 7)``, so tests know the
    priority each replayed sequence was given. ``updates`` records, per update, the
    replayed ``env_id`` and counter ``[T, B]``, the ``batch_info`` and the
    ``sample_weights`` passed to ``update_with_gradient``.
    """

    def __init__(
        self,
        observation_spec,
        action_spec,
        reward_spec=TensorSpec(()),
        env=None,
        config=None,
        optimizer=None,
        name: str = "ReplayProbeAlgorithm",
    ):
        super().__init__(
            observation_spec=observation_spec,
            action_spec=action_spec,
            reward_spec=reward_spec,
            env=env,
            config=config,
            optimizer=optimizer or Adam(lr=1e-2),
            name=name,
        )
        self._num_actions = int(action_spec.maximum) + 1
        self._q = nn.Linear(1, self._num_actions)
        self.register_buffer("_rollout_count", torch.zeros((), dtype=torch.int64))
        self.updates = []

    def predict_step(self, inputs, state):
        return AlgStep(output=self._q(inputs.observation).argmax(-1), state=state)

    def rollout_step(self, inputs, state):
        batch_size = inputs.step_type.shape[0]
        action = torch.randint(0, self._num_actions, (batch_size,))
        step = self._rollout_count.expand(batch_size).clone()
        self._rollout_count += 1
        return AlgStep(output=action, state=state, info=ProbeRolloutInfo(step=step))

    def train_step(self, inputs, state, rollout_info):
        q = self._q(inputs.observation)
        prediction = q.gather(-1, inputs.prev_action.unsqueeze(-1)).squeeze(-1)
        loss = (prediction - inputs.reward) ** 2
        return AlgStep(state=state, info=ProbeTrainInfo(loss=loss, step=rollout_info.step))

    def calc_loss(self, info):
        return LossInfo(loss=info.loss, priority=1.0 + (info.step[0] % 7).float())

    def update_from_experience(self, experience, valid_masks=None):
        self.updates.append(
            dict(
                env_id=experience.time_step.env_id.clone(),
                step=experience.rollout_info.step.clone(),
                batch_info=experience.batch_info,
            )
        )
        return super().update_from_experience(experience, valid_masks)

    def update_with_gradient(self, loss_info, valid_masks=None, weight=1.0, sample_weights=None):
        self.updates[-1]["sample_weights"] = sample_weights
        return super().update_with_gradient(loss_info, valid_masks, weight, sample_weights)


@pytest.fixture
def make_probe():
    """``make_probe(**trainer_config)``: a probe on 2 CountingEnvs (closed after the test)."""
    envs = []

    def _make(**kwargs):
        env = counting_env(num_envs=2, seed=len(envs))
        envs.append(env)
        config = TrainerConfig(**kwargs)
        return ReplayProbeAlgorithm(
            observation_spec=env.observation_spec(),
            action_spec=env.action_spec(),
            reward_spec=env.reward_spec(),
            env=env,
            config=config,
        )

    yield _make
    for env in envs:
        env.close()
    update_progress(0, 0, 0.0)


def pairs(update) -> list[tuple[int, int]]:
    """The ``(env_id, step counter)`` of every replayed step of one update."""
    return list(zip(update["env_id"].flatten().tolist(), update["step"].flatten().tolist()))


def assert_sequences_of_one_env(update):
    env_id, step = update["env_id"], update["step"]
    assert torch.equal(env_id, env_id[:1].expand_as(env_id))
    assert torch.equal(step, step[:1] + torch.arange(step.shape[0]).unsqueeze(1))


# -- what each training mode trains on ------------------------------------------------------


def test_whole_buffer_visits_every_stored_step_once_per_pass(make_probe):
    alg = make_probe(
        unroll_length=4,
        replay_buffer_length=4,
        mini_batch_size=2,
        mini_batch_length=2,
        num_updates_per_train_iter=3,
        whole_replay_buffer_training=True,
        clear_replay_buffer=True,
    )
    alg.train_iter()
    stored = {(e, s) for e in (0, 1) for s in range(4)}  # counter 4 is the bootstrap row
    assert len(alg.updates) == 3 * 2  # 3 passes over 4 sequences of 2 steps, 2 per minibatch
    for epoch in range(3):
        visited = pairs(alg.updates[2 * epoch]) + pairs(alg.updates[2 * epoch + 1])
        assert sorted(visited) == sorted(stored)
    for update in alg.updates:
        assert_sequences_of_one_env(update)
        assert update["batch_info"] == () and update["sample_weights"] is None
    assert alg.replay_buffer.current_size().tolist() == [0, 0]


def test_whole_buffer_without_clearing_trains_on_the_newest_steps(make_probe):
    alg = make_probe(
        unroll_length=4,
        replay_buffer_length=8,
        mini_batch_size=4,
        mini_batch_length=4,
        num_updates_per_train_iter=2,
        whole_replay_buffer_training=True,
        clear_replay_buffer=False,
    )
    for _ in range(3):
        alg.train_iter()
    stored = alg.replay_buffer.gather_all()
    stored_pairs = sorted(
        zip(stored.time_step.env_id.flatten().tolist(), stored.rollout_info.step.flatten().tolist())
    )
    assert stored_pairs == sorted((e, s) for e in (0, 1) for s in range(4, 12))
    for update in alg.updates[-2:]:  # the last iteration: 2 passes of one minibatch each
        assert sorted(pairs(update)) == stored_pairs
        assert_sequences_of_one_env(update)


def sampled_config(**kwargs):
    return dict(
        unroll_length=4,
        replay_buffer_length=16,
        mini_batch_size=3,
        mini_batch_length=2,
        num_updates_per_train_iter=2,
        whole_replay_buffer_training=False,
        clear_replay_buffer=False,
        **kwargs,
    )


def test_sampled_training_draws_sequences_from_the_buffer(make_probe):
    alg = make_probe(**sampled_config())
    for iteration in range(5):
        alg.train_iter()
        size = alg.replay_buffer.current_pos.tolist()
        for update in alg.updates[-2:]:
            info = update["batch_info"]
            assert_sequences_of_one_env(update)
            assert torch.equal(update["env_id"][0].long(), info.env_ids)
            assert torch.equal(update["step"][0], info.positions)  # counter == position here
            assert bool((info.positions + 2 <= torch.tensor(size)[info.env_ids]).all())
            assert bool((info.positions >= max(0, 4 * (iteration + 1) - 16)).all())
            assert info.importance_weights == () and update["sample_weights"] is None
    assert len(alg.updates) == 10
    assert len({p for u in alg.updates for p in pairs(u)}) > 12  # draws spread over the buffer


def test_sampled_training_waits_until_a_sequence_of_mini_batch_length_is_stored(make_probe):
    # initial_collect_steps=0 asks for no warm-up, but a sample of 3 steps needs 3 stored.
    alg = make_probe(**{**sampled_config(), "unroll_length": 1, "mini_batch_length": 3})
    assert alg.config.initial_collect_steps == 0
    for stored in (1, 2):
        alg.train_iter()
        assert alg.replay_buffer.current_size().tolist() == [stored, stored]
        assert alg.updates == []
        assert not alg.initial_collect_pending()  # no random-action window asked for
    alg.train_iter()
    assert len(alg.updates) == 2
    for update in alg.updates:
        assert_sequences_of_one_env(update)
        assert update["step"][:, 0].tolist() == [0, 1, 2]  # the only 3-step sequence


def test_prioritized_replay_weights_the_loss_and_updates_priorities(make_probe):
    alpha = 0.6
    alg = make_probe(**sampled_config(priority_replay=True, priority_replay_alpha=alpha))
    update_progress(0, 0, 0.5)
    for _ in range(5):
        alg.train_iter()
    buffer = alg.replay_buffer
    assert buffer.prioritized_sampling
    assert buffer.current_beta() == pytest.approx(0.4 + 0.5 * (1 - 0.4))  # linear to 1
    latest = {}
    for update in alg.updates:
        info = update["batch_info"]
        assert_sequences_of_one_env(update)
        weights = info.importance_weights
        assert weights.shape == (3,) and bool(((weights > 0) & (weights <= 1)).all())
        assert torch.equal(update["sample_weights"], weights.expand(2, 3))
        for e, p in zip(info.env_ids.tolist(), info.positions.tolist()):
            latest[(e, p)] = 1.0 + p % 7
    priority = buffer.state_dict()["priority"]
    first = buffer.first_pos()
    checked = 0
    for (e, p), value in latest.items():
        if p >= int(first[e]):  # not overwritten since
            assert float(priority[e, p % 16]) == pytest.approx(value**alpha)
            checked += 1
    assert checked > 5
    assert buffer.max_priority == max(latest.values())


def test_sample_weights_scale_the_masked_mean(make_probe):
    loss = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    mask = torch.tensor([[True, True], [True, False], [False, True]])
    weights = torch.tensor([0.5, 0.25]).expand(3, 2)
    expected = (0.5 * 1 + 0.25 * 2 + 0.5 * 3 + 0.25 * 6) / 4
    assert float(masked_mean(loss, mask, weights)) == pytest.approx(expected)
    alg = make_probe(**sampled_config())
    param = alg._q.bias
    alg.updates.append({})
    result = alg.update_with_gradient(
        LossInfo(loss=loss * param[0] / param[0].detach()), mask, sample_weights=weights
    )
    assert float(result.loss) == pytest.approx(expected)
    with pytest.raises(ValueError, match="per-sample loss"):
        masked_mean(torch.tensor(1.0), None, torch.ones(2))


# -- the buffer in checkpoints ---------------------------------------------------------------


def test_a_checkpointed_buffer_is_loaded_when_the_first_unroll_builds_it(make_probe):
    config = sampled_config(priority_replay=True)
    first = make_probe(**config)
    for _ in range(2):
        first.train_iter()
    state = {
        k: v.clone() if torch.is_tensor(v) else v
        for k, v in first.replay_buffer.state_dict().items()
    }
    second = make_probe(**config)
    second.load_replay_buffer_state(state)
    assert second.replay_buffer is None
    second.train_iter()
    buffer = second.replay_buffer
    assert buffer.current_pos.tolist() == [12, 12]
    old = first.replay_buffer.gather_all()
    new = buffer.gather_all()
    assert torch.equal(new.rollout_info.step[:, :8], old.rollout_info.step)
    assert torch.equal(new.time_step.observation[:, :8], old.time_step.observation)
    mismatched = make_probe(**dict(config, replay_buffer_length=8))
    mismatched.load_replay_buffer_state(state)
    with pytest.raises(ValueError, match="does not match"):
        mismatched.train_iter()


@pytest.fixture
def clean_configs():
    """A clean configuration registry; torch's thread count restored (the trainer sets it)."""
    num_threads = torch.get_num_threads()
    alf.reset_configs()
    yield
    alf.reset_configs()
    torch.set_num_threads(num_threads)
    update_progress(0, 0, 0.0)


def make_trainer(root_dir, *conf_params) -> PolicyTrainer:
    alf.reset_configs()
    params = [*conf_params, f"TrainerConfig.root_dir={str(root_dir)!r}"]
    common.parse_conf_file(TINY_REPLAY_CONF, params)
    return PolicyTrainer(TrainerConfig())


def load_ckpt(root_dir, step):
    path = os.path.join(root_dir, "train", "algorithm", f"ckpt-{step}.pt")
    return torch.load(path, map_location="cpu", weights_only=True)


def assert_same(a, b, key="state"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), key
        for k in a:
            assert_same(a[k], b[k], f"{key}.{k}")
    elif torch.is_tensor(a):
        assert torch.equal(a, b), key
    else:
        assert a == b, key


@pytest.mark.usefixtures("clean_configs")
def test_trainer_resume_continues_with_the_replay_buffer(tmp_path, monkeypatch, caplog):
    make_trainer(tmp_path / "full").train()
    make_trainer(tmp_path / "resumed", "TrainerConfig.num_iterations=3").train()
    partial = load_ckpt(tmp_path / "resumed", 3)["replay_buffer"]
    assert partial["current_pos"].tolist() == [12, 12]
    assert partial["priority"].shape == (2, 16) and partial["max_priority"] > 1
    monkeypatch.setattr(checkpoints, "_REPLAY_BUFFER_WARN_BYTES", 0)
    resumed = make_trainer(tmp_path / "resumed")
    resumed.train()
    assert "replay buffer" in caplog.text and "checkpoint_replay_buffer=False" in caplog.text
    assert resumed.algorithm.replay_buffer.current_pos.tolist() == [24, 24]
    full, again = load_ckpt(tmp_path / "full", 6), load_ckpt(tmp_path / "resumed", 6)
    assert_same(again["replay_buffer"], full["replay_buffer"], "replay_buffer")
    assert_same(again["algorithm"], full["algorithm"], "algorithm")


@pytest.mark.usefixtures("clean_configs")
def test_checkpoint_replay_buffer_false_leaves_the_buffer_out(tmp_path):
    trainer = make_trainer(
        tmp_path, "TrainerConfig.num_iterations=1", "TrainerConfig.checkpoint_replay_buffer=False"
    )
    trainer.train()
    assert "replay_buffer" not in load_ckpt(tmp_path, 1)
    assert collections.Counter(trainer.algorithm.replay_buffer.current_pos.tolist()) == {4: 2}
