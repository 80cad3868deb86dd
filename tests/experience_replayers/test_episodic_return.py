"""ReplayBuffer(record_episodic_return=True): each step's discounted return to its episode end.

Exact against hand expansions (episodes ending by termination, by a time limit, still
running, lives lost), reward clipping, ring overwrite, checkpoints, prioritized
sampling, and against a brute-force reference on random episodes added step by step
and in unrolls.
"""

from __future__ import annotations

import io

import pytest
import torch

from alf.data_structures import Experience, StepType, TimeStep
from alf.experience_replayers.episodic import discounted_suffix_sums
from alf.experience_replayers.replay_buffer import ReplayBuffer
from alf.tensor_specs import TensorSpec

F, M, L = int(StepType.FIRST), int(StepType.MID), int(StepType.LAST)
GAMMA = 0.9
DEFAULT = -1000.0

SPEC = Experience(
    time_step=TimeStep(
        step_type=TensorSpec((), torch.int32),
        reward=TensorSpec(()),
        discount=TensorSpec(()),
        observation=TensorSpec((2,)),
        env_id=TensorSpec((), torch.int64),
    ),
    action=TensorSpec((), torch.int64),
)


def make_buffer(num_envs=1, max_length=32, **kwargs) -> ReplayBuffer:
    kwargs.setdefault("gamma", GAMMA)
    return ReplayBuffer(
        SPEC,
        num_environments=num_envs,
        max_length=max_length,
        record_episodic_return=True,
        **kwargs,
    )


def experience(step_type, reward, discount) -> Experience:
    """A batch ``[...]`` of steps (any leading shape) with these fields."""
    step_type = torch.as_tensor(step_type, dtype=torch.int32)
    shape = step_type.shape
    return Experience(
        time_step=TimeStep(
            step_type=step_type,
            reward=torch.as_tensor(reward, dtype=torch.float32),
            discount=torch.as_tensor(discount, dtype=torch.float32),
            observation=torch.zeros(*shape, 2),
            env_id=torch.zeros(shape, dtype=torch.int64),
        ),
        action=torch.zeros(shape, dtype=torch.int64),
    )


def add(buffer, steps, env=0):
    """Add ``steps`` ``[(step_type, reward, discount), ...]`` one by one to ``env``."""
    for step_type, reward, discount in steps:
        buffer.add_batch(experience([step_type], [reward], [discount]), torch.tensor([env]))


def returns(buffer, env=0) -> list[float]:
    """The returns of env's stored steps, oldest first."""
    first = int(buffer.oldest_readable_pos()[env])
    positions = torch.arange(first, int(buffer.current_pos[env]))
    return buffer.discounted_return(torch.tensor(env), positions).tolist()


def close(values, expected):
    assert values == pytest.approx(expected, rel=1e-6, abs=1e-6)


# -- hand expansions -------------------------------------------------------------------


def test_termination_time_limit_and_running_episodes():
    g = GAMMA
    buffer = make_buffer()
    terminated = [(F, 0.0, 1.0), (M, 1.0, 1.0), (M, 2.0, 1.0), (L, 3.0, 0.0)]
    add(buffer, terminated[:3])
    close(returns(buffer), [DEFAULT] * 3)  # not ended yet
    add(buffer, terminated[3:])
    expected = [1 + g * 2 + g * g * 3, 2 + g * 3, 3.0, DEFAULT]  # the LAST step: default
    close(returns(buffer), expected)
    # a time limit (LAST with discount 1): the return is not known
    add(buffer, [(F, 5.0, 1.0), (M, 1.0, 1.0), (L, 1.0, 1.0)])
    expected += [DEFAULT] * 3
    close(returns(buffer), expected)
    # still running when sampled
    add(buffer, [(F, 0.0, 1.0), (M, 1.0, 1.0)])
    expected += [DEFAULT] * 2
    close(returns(buffer), expected)
    batch, info = buffer.get_batch(16, 2)
    assert info.discounted_return.shape == (16, 2)
    positions = info.positions.unsqueeze(1) + torch.arange(2)
    for b in range(16):
        for t in range(2):
            assert float(info.discounted_return[b, t]) == pytest.approx(
                expected[int(positions[b, t])], rel=1e-6
            )


def test_lost_lives_close_windows_and_the_next_window_starts_at_the_lost_life():
    """Discount 0 at a MID step (``AtariTerminalOnLifeLossWrapper``): the steps before
    it get returns to it; the step itself gets its return (including the reward right
    after it) when the next discount-0 step arrives."""
    g = GAMMA
    buffer = make_buffer()
    add(buffer, [(F, 0.0, 1.0), (M, 1.0, 1.0), (M, 1.0, 0.0)])
    close(returns(buffer), [1 + g, 1.0, DEFAULT])
    add(buffer, [(M, 2.0, 1.0), (M, 1.0, 1.0)])
    close(returns(buffer), [1 + g, 1.0, DEFAULT, DEFAULT, DEFAULT])
    add(buffer, [(L, 1.0, 0.0)])
    close(returns(buffer), [1 + g, 1.0, 2 + g * 1 + g * g * 1, 1 + g, 1.0, DEFAULT])
    # The same life lost, then a time limit: the steps after the lost life stay unknown.
    buffer = make_buffer()
    add(buffer, [(F, 0.0, 1.0), (M, 1.0, 1.0), (M, 1.0, 0.0), (M, 2.0, 1.0), (L, 1.0, 1.0)])
    close(returns(buffer), [1 + g, 1.0, DEFAULT, DEFAULT, DEFAULT])


def test_fractional_discounts_multiply_the_later_rewards():
    g = GAMMA
    buffer = make_buffer()
    add(buffer, [(F, 0.0, 1.0), (M, 1.0, 0.5), (M, 2.0, 1.0), (L, 4.0, 0.0)])
    g2 = 2 + g * 4
    close(returns(buffer), [1 + g * 0.5 * g2, g2, 4.0, DEFAULT])


def test_reward_clipping():
    g = GAMMA
    buffer = make_buffer(reward_clip=(-1.0, 1.0))
    add(buffer, [(F, 9.0, 1.0), (M, 5.0, 1.0), (M, -3.0, 1.0), (L, 0.5, 0.0)])
    close(returns(buffer), [1 - g + g * g * 0.5, -1 + g * 0.5, 0.5, DEFAULT])


def test_ring_overwrite():
    g = GAMMA
    buffer = make_buffer(max_length=4)
    # An episode longer than the buffer: its head is gone when it ends; the stored
    # steps still get their (forward-looking) returns.
    add(buffer, [(F, 0.0, 1.0)] + [(M, float(i), 1.0) for i in range(1, 5)] + [(L, 5.0, 0.0)])
    assert int(buffer.oldest_readable_pos()[0]) == 2
    close(returns(buffer), [3 + g * 4 + g * g * 5, 4 + g * 5, 5.0, DEFAULT])
    # A slot being written gets the default again (positions 2, 3 are overwritten).
    add(buffer, [(F, 0.0, 1.0), (M, 1.0, 1.0)])
    close(returns(buffer), [5.0, DEFAULT, DEFAULT, DEFAULT])
    # The next episode ends: only its steps change.
    add(buffer, [(L, 2.0, 0.0)])
    close(returns(buffer), [DEFAULT, 1 + g * 2, 2.0, DEFAULT])


def test_several_envs_and_unrolls_at_once():
    """``add_steps`` (an unroll ``[T, B]``) gives what step-by-step adding gives, with
    several episode ends per env in one unroll."""
    g = GAMMA
    step_type = torch.tensor([[F, M], [M, M], [L, L], [F, F], [M, M], [L, M]]).int()
    reward = torch.tensor([[0.0, 7.0], [1.0, 2.0], [2.0, 3.0], [0.0, 4.0], [3.0, 1.0], [4.0, 2]])
    discount = torch.tensor([[1, 1], [1, 1], [0, 1], [1, 1], [1, 0], [0, 1]]).float()
    buffer = make_buffer(num_envs=2)
    buffer.add_steps(experience(step_type, reward, discount), torch.tensor([0, 1]))
    close(returns(buffer, 0), [1 + g * 2, 2.0, DEFAULT, 3 + g * 4, 4.0, DEFAULT])
    close(returns(buffer, 1), [DEFAULT, DEFAULT, DEFAULT, 1.0, DEFAULT, DEFAULT])
    one_by_one = make_buffer(num_envs=2)
    for t in range(6):
        one_by_one.add_batch(experience(step_type[t], reward[t], discount[t]), torch.tensor([0, 1]))
    for env in (0, 1):
        assert returns(one_by_one, env) == returns(buffer, env)


# -- random episodes against a brute-force reference -------------------------------------


def random_steps(num_steps, generator, fractional=True):
    """``(step_type, reward, discount)`` ``[num_steps]`` of consecutive random episodes
    (some lives lost, terminal or time-limit ends, fractional discounts)."""
    step_type, reward, discount = [], [], []
    t = 0
    while t < num_steps:
        length = int(torch.randint(1, 12, (1,), generator=generator))
        for i in range(length + 1):
            kind = F if i == 0 else (L if i == length else M)
            u = float(torch.rand((), generator=generator))
            if kind == L:
                d = 0.0 if u < 0.6 else 1.0
            elif kind == M:
                d = 0.0 if u < 0.15 else (0.5 if fractional and u < 0.25 else 1.0)
            else:
                d = 1.0
            step_type.append(kind)
            reward.append(float(torch.randn((), generator=generator)) * 2)
            discount.append(d)
        t += length + 1
    return (
        torch.tensor(step_type[:num_steps], dtype=torch.int32),
        torch.tensor(reward[:num_steps]),
        torch.tensor(discount[:num_steps]),
    )


def reference(step_type, reward, discount, first, gamma, clip=None):
    """Returns of positions ``first..`` of one env's full history, by the definition."""
    n_steps = len(step_type)
    r = reward.double()
    if clip is not None:
        r = r.clamp(*clip)
    out = []
    for j in range(first, n_steps):
        end = None
        for n in range(j + 1, n_steps):
            if step_type[n] == F:
                break
            if discount[n] == 0:
                end = n
                break
        if end is None:
            out.append(DEFAULT)
            continue
        total, scale = 0.0, 1.0
        for k in range(j, end):
            if k > j:
                scale *= gamma * float(discount[k])
            total += scale * float(r[k + 1])
        out.append(total)
    return out


@pytest.mark.parametrize("max_length", [5, 16, 200])
def test_random_episodes_match_the_reference(max_length):
    generator = torch.Generator().manual_seed(max_length)
    num_envs, num_steps = 3, 120
    histories = [random_steps(num_steps, generator) for _ in range(num_envs)]
    step_type, reward, discount = (torch.stack([h[i] for h in histories], 1) for i in range(3))
    clip = (-2.0, 2.5)
    by_step = make_buffer(num_envs, max_length, reward_clip=clip)
    by_unroll = make_buffer(num_envs, max_length, reward_clip=clip)
    env_ids = torch.arange(num_envs)
    t = 0
    while t < num_steps:
        size = min(int(torch.randint(1, 9, (1,), generator=generator)), num_steps - t)
        rows = slice(t, t + size)
        by_unroll.add_steps(experience(step_type[rows], reward[rows], discount[rows]), env_ids)
        for i in range(t, t + size):
            by_step.add_batch(experience(step_type[i], reward[i], discount[i]), env_ids)
        t += size
        for env in range(num_envs):
            first = int(by_step.oldest_readable_pos()[env])
            expected = reference(
                step_type[:t, env], reward[:t, env], discount[:t, env], first, GAMMA, clip
            )
            close(returns(by_step, env), expected)
            close(returns(by_unroll, env), expected)
    # Rebuilding from the stored steps (a checkpoint without returns) gives the same.
    state = by_step.state_dict()
    del state["episodic_return"], state["episodic_window_start"]
    rebuilt = make_buffer(num_envs, max_length, reward_clip=clip)
    rebuilt.load_state_dict(state)
    for env in range(num_envs):
        assert returns(rebuilt, env) == returns(by_step, env)
    # (a window start older than the oldest stored step counts as the oldest one)
    oldest = by_step.oldest_readable_pos()
    starts = [torch.maximum(b._episodic.window_start, oldest) for b in (rebuilt, by_step)]
    assert torch.equal(*starts)


# -- checkpoints and prioritized sampling --------------------------------------------------


def test_checkpoint_round_trip_and_continuing():
    generator = torch.Generator().manual_seed(3)
    step_type, reward, discount = random_steps(60, generator)
    a = make_buffer(max_length=16)
    for i in range(40):
        a.add_batch(experience(step_type[i : i + 1], reward[i : i + 1], discount[i : i + 1]))
    data = io.BytesIO()
    torch.save(a.state_dict(), data)
    data.seek(0)
    b = make_buffer(max_length=16)
    b.load_state_dict(torch.load(data, weights_only=True))
    assert returns(b) == returns(a)
    for i in range(40, 60):
        for buffer in (a, b):
            buffer.add_batch(
                experience(step_type[i : i + 1], reward[i : i + 1], discount[i : i + 1])
            )
    assert returns(b) == returns(a)
    close(returns(a), reference(step_type, reward, discount, 60 - 16, GAMMA))


def test_prioritized_sampling_gives_the_returns_of_the_sampled_steps():
    generator = torch.Generator().manual_seed(5)
    histories = [random_steps(40, generator) for _ in range(2)]
    step_type, reward, discount = (torch.stack([h[i] for h in histories], 1) for i in range(3))
    buffer = make_buffer(num_envs=2, max_length=32, prioritized_sampling=True)
    buffer.add_steps(experience(step_type, reward, discount), torch.arange(2))
    batch, info = buffer.get_batch(64, 3, generator=generator, time_major=True)
    assert torch.is_tensor(info.importance_weights)
    positions = info.positions.unsqueeze(1) + torch.arange(3)
    expected = buffer.discounted_return(info.env_ids.unsqueeze(1), positions)
    assert torch.equal(info.discounted_return, expected)
    for env in range(2):
        first = int(buffer.oldest_readable_pos()[env])
        close(
            returns(buffer, env),
            reference(step_type[:, env], reward[:, env], discount[:, env], first, GAMMA),
        )


def test_settings_and_no_returns_without_recording():
    plain = ReplayBuffer(SPEC, num_environments=1, max_length=4, gamma=0.9, reward_clip=(-1, 1))
    add(plain, [(F, 0.0, 1.0), (M, 1.0, 1.0)])
    _, info = plain.get_batch(2, 2)
    assert info.discounted_return == ()
    with pytest.raises(RuntimeError, match="record_episodic_return"):
        plain.discounted_return(torch.tensor(0), torch.tensor([0]))
    with pytest.raises(ValueError, match="keep_episodic_info"):
        make_buffer(keep_episodic_info=False)
    with pytest.raises(ValueError, match="gamma"):
        make_buffer(gamma=0.0)
    with pytest.raises(ValueError, match="reward_clip"):
        make_buffer(reward_clip=(1.0, -1.0))
    vector = SPEC._replace(time_step=SPEC.time_step._replace(reward=TensorSpec((2,))))
    with pytest.raises(ValueError, match="scalar reward"):
        ReplayBuffer(vector, num_environments=1, max_length=4, record_episodic_return=True)


def test_discounted_suffix_sums_over_many_chunks():
    """Small factors force many chunks (the products would underflow in one)."""
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randn(3, 700, generator=generator, dtype=torch.float64)
    factors = torch.rand(3, 700, generator=generator, dtype=torch.float64) * 0.02 + 0.005
    result = discounted_suffix_sums(rewards, factors)
    expected = torch.zeros(3, 701, dtype=torch.float64)
    for j in range(699, -1, -1):
        expected[:, j] = rewards[:, j] + factors[:, j] * expected[:, j + 1]
    assert torch.allclose(result, expected[:, :700], rtol=1e-12, atol=1e-12)
    # gamma = 0.99 over 50,000 steps of reward 1: one chunk, no underflow
    ones = torch.ones(1, 50000, dtype=torch.float64)
    long = discounted_suffix_sums(ones, ones * 0.99)
    assert float(long[0, 0]) == pytest.approx(100.0, rel=1e-9)
    assert float(long[0, -1]) == 1.0
