"""ReplayBuffer: FIFO ring per env, sequences within one env, prioritized sampling, checkpoints.

Every stored step records its env id and position, so a sampled batch shows exactly
where it came from. Prioritized frequencies are checked against ``p^alpha / sum p^alpha``
within 5 binomial standard deviations, with a fixed generator (no flakiness).
"""

from typing import NamedTuple

import pytest
import torch

from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.tensor_specs import TensorSpec
from alf.utils.checkpoint_utils import Checkpointer


class Step(NamedTuple):
    env: torch.Tensor
    pos: torch.Tensor
    obs: dict


SPEC = Step(
    env=TensorSpec((), torch.int64),
    pos=TensorSpec((), torch.int64),
    obs={"x": TensorSpec((3,)), "flag": TensorSpec((), torch.bool)},
)


def make_buffer(num_envs=3, max_length=8, **kwargs) -> ReplayBuffer:
    return ReplayBuffer(SPEC, num_environments=num_envs, max_length=max_length, **kwargs)


def add_steps(buffer: ReplayBuffer, env_ids, num_steps: int) -> None:
    """Add ``num_steps`` steps to envs ``env_ids``; each records its env and position."""
    env_ids = torch.as_tensor(env_ids, dtype=torch.int64)
    for _ in range(num_steps):
        pos = buffer.current_pos[env_ids].clone()
        step = Step(
            env=env_ids,
            pos=pos,
            obs={"x": pos.float().unsqueeze(1).repeat(1, 3), "flag": pos % 2 == 0},
        )
        buffer.add_batch(step, env_ids.to(torch.int32))


def valid_starts(buffer: ReplayBuffer, batch_length: int) -> list[tuple[int, int]]:
    """``(env_id, position)`` of every step that can start a ``batch_length`` sequence."""
    first, current = buffer.first_pos(), buffer.current_pos
    return [
        (e, p)
        for e in range(buffer.num_environments)
        for p in range(int(first[e]), int(current[e]) - batch_length + 1)
    ]


def assert_within_binomial(counts: dict, probs: dict, num_samples: int, sigmas: float = 5.0):
    assert set(counts) <= set(probs)
    for key, p in probs.items():
        expected = num_samples * p
        std = (num_samples * p * (1 - p)) ** 0.5
        assert abs(counts.get(key, 0) - expected) <= sigmas * std + 1e-9, (key, counts, expected)


def sample_counts(buffer, num_samples, batch_length, seed=0) -> dict:
    generator = torch.Generator().manual_seed(seed)
    _, info = buffer.get_batch(num_samples, batch_length, generator=generator)
    counts = {}
    for e, p in zip(info.env_ids.tolist(), info.positions.tolist()):
        counts[(e, p)] = counts.get((e, p), 0) + 1
    return counts


# -- storage ---------------------------------------------------------------------------


def test_fifo_overwrite_keeps_the_newest_steps_and_positions_only_grow():
    buffer = make_buffer(num_envs=2, max_length=5)
    add_steps(buffer, [0, 1], 13)
    assert buffer.current_pos.tolist() == [13, 13]
    assert buffer.current_size().tolist() == [5, 5]
    everything = buffer.gather_all()
    assert everything.pos.tolist() == [list(range(8, 13))] * 2
    assert everything.env.tolist() == [[0] * 5, [1] * 5]
    assert torch.equal(everything.obs["x"][..., 0], everything.pos.float())
    assert torch.equal(everything.obs["flag"], everything.pos % 2 == 0)


def test_gather_all_needs_equal_sizes():
    buffer = make_buffer()
    add_steps(buffer, [0, 2], 2)
    add_steps(buffer, [1], 1)
    with pytest.raises(RuntimeError, match=r"same number of steps.*\[2, 1, 2\]"):
        buffer.gather_all()


@pytest.mark.parametrize("prioritized", [False, True])
def test_sampled_sequences_never_cross_envs(prioritized):
    buffer = make_buffer(num_envs=3, max_length=8, prioritized_sampling=prioritized)
    add_steps(buffer, [0], 12)  # wrapped: positions 4..11
    add_steps(buffer, [1], 3)
    add_steps(buffer, [2], 1)  # too short for length 3
    batch, info = buffer.get_batch(600, 3, generator=torch.Generator().manual_seed(0))
    assert batch.pos.shape == (600, 3) and batch.obs["x"].shape == (600, 3, 3)
    assert torch.equal(batch.env, info.env_ids.unsqueeze(1).expand(-1, 3))
    assert torch.equal(batch.pos, info.positions.unsqueeze(1) + torch.arange(3))
    drawn = set(zip(info.env_ids.tolist(), info.positions.tolist()))
    assert drawn == set(valid_starts(buffer, 3))  # every valid start, nothing else
    if prioritized:
        assert torch.equal(info.importance_weights, torch.ones(600))  # equal priorities
    else:
        assert info.importance_weights == ()


def test_uniform_sampling_is_uniform_over_valid_starts():
    buffer = make_buffer(num_envs=2, max_length=8)
    add_steps(buffer, [0], 10)
    add_steps(buffer, [1], 4)
    starts = valid_starts(buffer, 2)
    counts = sample_counts(buffer, 20000, 2)
    assert_within_binomial(counts, {s: 1 / len(starts) for s in starts}, 20000)


def test_get_batch_errors():
    buffer = make_buffer(max_length=4)
    add_steps(buffer, [0, 1, 2], 2)
    with pytest.raises(RuntimeError, match="no env has 3 steps"):
        buffer.get_batch(2, 3)
    with pytest.raises(ValueError, match="batch_length 5 > max_length 4"):
        buffer.get_batch(2, 5)
    prioritized = make_buffer(prioritized_sampling=True)
    with pytest.raises(RuntimeError, match="no env has 1 steps"):
        prioritized.get_batch(2, 1)


@pytest.mark.parametrize("prioritized", [False, True])
def test_clear_forgets_steps_but_positions_keep_growing(prioritized):
    buffer = make_buffer(num_envs=2, max_length=4, prioritized_sampling=prioritized)
    add_steps(buffer, [0, 1], 6)
    buffer.clear()
    assert buffer.current_pos.tolist() == [6, 6]
    assert buffer.current_size().tolist() == [0, 0]
    with pytest.raises(RuntimeError, match="no env has 1 steps"):
        buffer.get_batch(1, 1)
    add_steps(buffer, [0, 1], 3)
    assert buffer.gather_all().pos.tolist() == [[6, 7, 8]] * 2
    buffer.clear(keep_last=2)
    assert buffer.gather_all().pos.tolist() == [[7, 8]] * 2
    assert set(sample_counts(buffer, 200, 1)) == {(0, 7), (0, 8), (1, 7), (1, 8)}


def test_memory_report():
    buffer = make_buffer(num_envs=2, max_length=4)
    assert buffer.bytes_per_transition() == 8 + 8 + 3 * 4 + 1
    assert buffer.total_bytes() == 29 * 8
    prioritized = make_buffer(num_envs=2, max_length=4, prioritized_sampling=True)
    assert prioritized.total_bytes() == 29 * 8 + 2 * (2 * 8 * 8)  # two float64 trees


# -- prioritized sampling ---------------------------------------------------------------


def set_priorities(buffer, priority_of) -> dict:
    """Give every stored step of ``buffer`` the priority ``priority_of(env, pos)``."""
    first, current = buffer.first_pos(), buffer.current_pos
    keys = [
        (e, p)
        for e in range(buffer.num_environments)
        for p in range(int(first[e]), int(current[e]))
    ]
    priorities = {k: float(priority_of(*k)) for k in keys}
    env_ids, positions = zip(*keys)
    buffer.update_priority(
        torch.tensor(env_ids), torch.tensor(positions), torch.tensor(list(priorities.values()))
    )
    return priorities


@pytest.mark.parametrize("batch_length", [1, 3])
def test_prioritized_frequencies_match_priorities_to_the_alpha(batch_length):
    alpha = 0.6
    buffer = make_buffer(num_envs=2, max_length=6, prioritized_sampling=True, priority_alpha=alpha)
    add_steps(buffer, [0], 9)  # wrapped
    add_steps(buffer, [1], 5)
    priorities = set_priorities(buffer, lambda e, p: 1 + (3 * p + e) % 7)
    starts = valid_starts(buffer, batch_length)
    total = sum(priorities[s] ** alpha for s in starts)
    probs = {s: priorities[s] ** alpha / total for s in starts}
    num_samples = 40000
    counts = sample_counts(buffer, num_samples, batch_length)
    assert_within_binomial(counts, probs, num_samples)
    # the tail excluded while sampling is restored afterwards
    assert buffer._priorities._sum_tree.summary() == pytest.approx(
        sum(v**alpha for v in priorities.values())
    )


def test_importance_weights_as_defined():
    alpha, beta = 0.7, [0.4]
    buffer = make_buffer(
        num_envs=2,
        max_length=5,
        prioritized_sampling=True,
        priority_alpha=alpha,
        priority_beta=lambda: beta[0],
    )
    add_steps(buffer, [0, 1], 7)
    priorities = set_priorities(buffer, lambda e, p: 0.5 + p + 2 * e)
    starts = valid_starts(buffer, 2)
    num_starts = len(starts)
    total = sum(priorities[s] ** alpha for s in starts)

    def expected_weight(key, b):
        weight = (num_starts * priorities[key] ** alpha / total) ** -b
        return weight / max((num_starts * priorities[s] ** alpha / total) ** -b for s in starts)

    for b in (0.4, 1.0):
        beta[0] = b
        assert buffer.current_beta() == b
        _, info = buffer.get_batch(50, 2, generator=torch.Generator().manual_seed(1))
        keys = list(zip(info.env_ids.tolist(), info.positions.tolist()))
        expected = torch.tensor([expected_weight(k, b) for k in keys])
        assert info.importance_weights.dtype == torch.float32
        torch.testing.assert_close(info.importance_weights, expected)
        assert float(info.importance_weights.max()) <= 1.0


def test_new_steps_get_the_max_priority_and_updates_are_checked():
    alpha, eps = 0.5, 1e-3
    buffer = make_buffer(
        num_envs=2, max_length=3, prioritized_sampling=True, priority_alpha=alpha, priority_eps=eps
    )
    add_steps(buffer, [0, 1], 2)
    assert buffer.max_priority == 1.0
    buffer.update_priority(torch.tensor([0, 1]), torch.tensor([0, 1]), torch.tensor([9.0, 0.0]))
    assert buffer.max_priority == 9.0
    add_steps(buffer, [0, 1], 1)
    leaves = buffer.state_dict()["priority"]
    assert leaves.tolist() == [[3.0, 1.0, 3.0], [1.0, eps**alpha, 3.0]]
    add_steps(buffer, [0], 1)  # position 3 overwrites position 0 of env 0
    buffer.update_priority(torch.tensor([0]), torch.tensor([0]), torch.tensor([4.0]))  # stale
    assert buffer.state_dict()["priority"][0].tolist() == [3.0, 1.0, 3.0]
    with pytest.raises(ValueError, match="finite and >= 0"):
        buffer.update_priority(torch.tensor([0]), torch.tensor([3]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        buffer.update_priority(torch.tensor([0]), torch.tensor([3]), torch.tensor([float("nan")]))
    with pytest.raises(ValueError, match="2 env ids, 2 positions and 1 priorities"):
        buffer.update_priority(torch.tensor([0, 1]), torch.tensor([3, 2]), torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="without prioritized_sampling"):
        make_buffer().update_priority(torch.tensor([0]), torch.tensor([0]), torch.tensor([1.0]))


# -- checkpoints ----------------------------------------------------------------------------


def filled_prioritized_buffer() -> ReplayBuffer:
    buffer = make_buffer(num_envs=3, max_length=5, prioritized_sampling=True, priority_alpha=0.8)
    add_steps(buffer, [0, 1, 2], 4)
    buffer.clear(keep_last=1)
    add_steps(buffer, [0, 2], 4)  # env 0 and 2 wrap
    set_priorities(buffer, lambda e, p: 1 + p * (e + 1))
    return buffer


def test_checkpoint_round_trip_restores_contents_positions_and_priorities(tmp_path):
    buffer = filled_prioritized_buffer()
    Checkpointer(str(tmp_path)).save(1, {"replay_buffer": buffer.state_dict()})
    loaded_state = Checkpointer(str(tmp_path)).load()["replay_buffer"]  # weights_only load
    restored = make_buffer(num_envs=3, max_length=5, prioritized_sampling=True, priority_alpha=0.8)
    restored.load_state_dict(loaded_state)
    before, after = buffer.state_dict(), restored.state_dict()
    assert before.keys() == after.keys()
    for key in before:
        if torch.is_tensor(before[key]):
            assert torch.equal(before[key], after[key]), key
        else:
            assert before[key] == after[key], key
    assert torch.equal(buffer._priorities._min_tree._nodes, restored._priorities._min_tree._nodes)
    batch, info = buffer.get_batch(64, 2, generator=torch.Generator().manual_seed(3))
    batch2, info2 = restored.get_batch(64, 2, generator=torch.Generator().manual_seed(3))
    assert torch.equal(batch.pos, batch2.pos) and torch.equal(batch.env, batch2.env)
    assert torch.equal(info.importance_weights, info2.importance_weights)
    add_steps(buffer, [1], 1)
    add_steps(restored, [1], 1)
    assert torch.equal(buffer.state_dict()["priority"], restored.state_dict()["priority"])


def test_loading_without_priorities_gives_stored_steps_the_max_priority():
    plain = make_buffer(num_envs=2, max_length=4)
    add_steps(plain, [0, 1], 2)
    prioritized = make_buffer(num_envs=2, max_length=4, prioritized_sampling=True)
    prioritized.load_state_dict(plain.state_dict())
    assert prioritized.state_dict()["priority"].tolist() == [[1.0, 1.0, 0.0, 0.0]] * 2
    assert prioritized.gather_all().pos.tolist() == [[0, 1]] * 2


def test_loading_a_mismatched_state_raises():
    buffer = make_buffer(num_envs=3, max_length=8)
    with pytest.raises(ValueError, match="does not match"):
        make_buffer(num_envs=3, max_length=4).load_state_dict(buffer.state_dict())
    other = ReplayBuffer(
        Step(TensorSpec((), torch.int32), SPEC.pos, SPEC.obs), num_environments=3, max_length=8
    )
    with pytest.raises(ValueError, match="does not match"):
        other.load_state_dict(buffer.state_dict())
    with pytest.raises(ValueError, match="lacks"):
        buffer.load_state_dict({"current_pos": torch.zeros(3, dtype=torch.int64)})


def test_set_newest_marks_only_the_newest_step_of_envs_with_data():
    spec = {"step_type": TensorSpec((), torch.int32)}
    buffer = ReplayBuffer(spec, num_environments=3, max_length=4)
    for _ in range(6):  # wraps the ring
        buffer.add_batch(
            {"step_type": torch.full((2,), 1, dtype=torch.int32)}, torch.tensor([0, 1])
        )
    buffer.set_newest("step_type", 2)
    data = buffer._buffer["step_type"]
    newest = (6 - 1) % 4
    assert data[0, newest] == 2 and data[1, newest] == 2
    assert int((data[:2] == 2).sum()) == 2
    assert int(data[2].abs().sum()) == 0  # env 2 has nothing stored


def test_add_steps_equals_repeated_add_batch():
    spec = {"x": TensorSpec((2,)), "step_type": TensorSpec((), torch.int32)}
    kwargs = dict(num_environments=3, max_length=5, prioritized_sampling=True)
    a, b = ReplayBuffer(spec, **kwargs), ReplayBuffer(spec, **kwargs)
    env_ids = torch.tensor([2, 0])
    for start in (0, 3):  # the second unroll wraps the ring
        steps = {
            "x": torch.arange(start, start + 3 * 2 * 2, dtype=torch.float32)[:12].reshape(3, 2, 2),
            "step_type": torch.full((3, 2), start, dtype=torch.int32),
        }
        a.add_steps(steps, env_ids)
        for t in range(3):
            b.add_batch({k: v[t] for k, v in steps.items()}, env_ids)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        if isinstance(sa[key], torch.Tensor):
            assert torch.equal(sa[key], sb[key]), key
        else:
            assert sa[key] == sb[key], key
