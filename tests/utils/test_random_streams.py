"""Counter-based per-env random streams (``alf.utils.random_streams``).

- SplitMix64's finalizer against the published first outputs of ``splitmix64`` seeded
  with 0 (Vigna's reference implementation);
- every routed sampling function gives env ``g`` the same numbers whether it is stepped
  among 8 envs, in 2 groups of 4 or 4 groups of 2 (the layouts of samplers and ranks);
- the bootstrap row (``advance=False``) draws what the next step draws; a restart with
  the same seed repeats the stream; another seed, env or domain gives other numbers;
- outside a stream, in another thread and with an explicit generator, torch's own
  generator draws, untouched by the streams;
- the distributions are right: uniform and normal moments, categorical frequencies
  (Gumbel-max and inverse CDF), and a zero-probability category is never drawn.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import torch.distributions as td

from alf.utils import dist_utils
from alf.utils.random_streams import ActingStreams, mix64

SPLITMIX64_ZERO = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
GAMMA = 0x9E3779B97F4A7C15


def test_mix64_is_splitmix64():
    states = np.array([(GAMMA * (i + 1)) % 2**64 for i in range(3)], dtype=np.uint64)
    assert mix64(states).tolist() == SPLITMIX64_ZERO


def _draw_everything(rows: int, logits: torch.Tensor) -> list:
    probs = logits.softmax(-1)
    values = [
        torch.rand(rows, 3),
        torch.rand(rows, 2, dtype=torch.float64),
        torch.randn(rows, 3),
        torch.rand_like(logits),
        torch.randn_like(logits),
        torch.randint(0, 7, (rows,)),
        torch.randint(5, (rows, 2)),
        torch.randint(2, 9, size=(rows,)),
        torch.randint(high=4, size=(rows, 3)),
        torch.multinomial(probs, 1),
        torch.multinomial(probs, 2, replacement=True),
        torch.multinomial(probs, 3),
        torch.normal(logits, 2.0),
        torch.bernoulli(probs),
        torch.empty(rows, 4).uniform_(-1, 1),
        torch.empty(rows, 4).normal_(1.0, 3.0),
        torch.empty(rows, 4).exponential_(2.0),
        dist_utils.Categorical(logits=logits).sample(),
        td.Normal(logits, 0.5).sample(),
        td.Normal(logits, 0.5).rsample(),
        td.Independent(td.Normal(logits, 1.0), 1).sample(),
        torch.rand(5),  # not shaped [B, ...]: keyed by the step alone
    ]
    return values


@pytest.mark.parametrize("groups", [2, 4])
def test_every_env_draws_the_same_numbers_in_any_layout(groups):
    logits = torch.randn(8, 5)
    whole = ActingStreams(7, np.arange(8))
    size = 8 // groups
    parts = [ActingStreams(7, np.arange(g * size, (g + 1) * size)) for g in range(groups)]
    for _ in range(3):  # three steps: the counters move on alike
        with whole.drawing():
            expected = _draw_everything(8, logits)
        got = []
        for g, part in enumerate(parts):
            with part.drawing():
                got.append(_draw_everything(size, logits[g * size : (g + 1) * size]))
        for i, value in enumerate(expected[:-1]):
            assert torch.equal(value, torch.cat([p[i] for p in got])), i
        for p in got:
            assert torch.equal(expected[-1], p[-1])


def test_rows_of_a_server_batch_draw_their_own_envs_numbers():
    logits = torch.randn(8, 5)
    whole = ActingStreams(3, np.arange(8))
    with whole.drawing():
        expected = dist_utils.Categorical(logits=logits).sample()
    batch = ActingStreams(3, np.arange(8))
    rows = torch.tensor([5, 1, 6])
    with batch.drawing(rows):
        got = dist_utils.Categorical(logits=logits[rows]).sample()
    assert torch.equal(got, expected[rows])
    assert batch.steps.tolist() == [0, 1, 0, 0, 0, 1, 1, 0]


def test_bootstrap_row_restart_seed_env_and_domain():
    streams = ActingStreams(1, np.arange(4))
    with streams.drawing(advance=False):
        bootstrap = torch.rand(4, 3)
    with streams.drawing():
        first = torch.rand(4, 3)
    with streams.drawing():
        second = torch.rand(4, 3)
    assert torch.equal(bootstrap, first) and not torch.equal(first, second)
    assert streams.steps.tolist() == [2, 2, 2, 2]
    streams.restart(1)
    with streams.drawing():
        assert torch.equal(torch.rand(4, 3), first)
    for other in (
        ActingStreams(2, np.arange(4)),
        ActingStreams(1, np.arange(1, 5)),
        ActingStreams(1, np.arange(4), "evaluate"),
    ):
        with other.drawing():
            assert not torch.equal(torch.rand(4, 3), first)
    # within a step each draw is new, and rows differ from one another
    with ActingStreams(1, np.arange(4)).drawing():
        a, b = torch.rand(4, 3), torch.rand(4, 3)
    assert not torch.equal(a, b) and len(set(a[:, 0].tolist())) == 4


def test_torch_draws_as_usual_outside_a_stream_and_with_a_generator():
    torch.manual_seed(5)
    expected = torch.rand(4, 3)
    generator_expected = torch.rand(2, generator=torch.Generator().manual_seed(9))
    torch.manual_seed(5)
    streams = ActingStreams(5, np.arange(4))
    with streams.drawing():
        torch.rand(4, 3)  # the stream's: the global generator does not move
        with_generator = torch.rand(2, generator=torch.Generator().manual_seed(9))
        seen_by_thread = []
        thread = threading.Thread(target=lambda: seen_by_thread.append(torch.rand(4, 3)))
        thread.start()
        thread.join()
    assert torch.equal(with_generator, generator_expected)
    torch.manual_seed(5)
    assert torch.equal(seen_by_thread[0], expected)  # another thread: torch's own
    torch.manual_seed(5)
    assert torch.equal(torch.rand(4, 3), expected)


def test_the_draws_have_the_right_distributions():
    n = 20_000
    streams = ActingStreams(11, np.arange(n))
    probs = torch.tensor([0.1, 0.0, 0.2, 0.7])
    with streams.drawing():
        u = torch.rand(n, 4)
        z = torch.randn(n, 4)
        gumbel = dist_utils.Categorical(logits=probs.log().expand(n, 4)).sample()
        inverse = torch.multinomial(probs.expand(n, 4), 1).squeeze(1)
        top2 = torch.multinomial(probs.expand(n, 4), 2)
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.005 and abs(float(u.var()) - 1 / 12) < 0.002
    assert abs(float(z.mean())) < 0.01 and abs(float(z.std()) - 1.0) < 0.01
    for sample in (gumbel, inverse):
        frequencies = torch.bincount(sample, minlength=4).double() / n
        assert frequencies[1] == 0.0
        # 4 standard errors of the largest category's frequency
        assert torch.allclose(frequencies, probs.double(), atol=4 * (0.7 * 0.3 / n) ** 0.5)
    assert not bool((top2 == 1).any()) and bool((top2[:, 0] != top2[:, 1]).all())


def test_randint_takes_torchs_argument_forms():
    streams = ActingStreams(4, np.arange(6000))
    with streams.drawing():
        values = [
            torch.randint(3, 6, (6000,)),
            torch.randint(3, 6, size=(6000,)),
            torch.randint(low=3, high=6, size=(6000,)),
            torch.randint(6, (6000,)) // 2 + 3,
        ]
    for v in values:
        assert v.dtype == torch.int64 and set(v.tolist()) == {3, 4, 5}
        assert abs(float((v == 5).double().mean()) - 1 / 3) < 0.03
