"""The collectives of data-parallel learners, on two real gloo ranks (two processes).

* ``Algorithm.update_with_gradient`` on two ranks holding halves of a batch gives the
  parameters one process gets on the whole batch, also when the halves have different
  numbers of valid (unmasked) entries;
* a non-finite loss on one rank makes every rank skip the update;
* a rank leaving the group joins gloo's threads (none outlives the interpreter);
* a ``RunningMeanVar`` updated on two ranks with batches of different sizes (one of them
  empty) holds the moments of the concatenated data, on both ranks, with and without
  ``speed``.
"""

import datetime
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from alf.algorithms.algorithm import Algorithm
from alf.optimizers import Adam
from alf.parallel import collectives
from alf.utils.normalizers import RunningMeanVar

WORLD = 2


class _Linear(Algorithm):
    """A linear model with a squared loss, trained with Adam and gradient clipping."""

    def __init__(self):
        super().__init__(optimizer=Adam(lr=0.1, gradient_clipping=1.0), name="Linear")
        torch.manual_seed(0)
        self.net = torch.nn.Linear(3, 2)

    def loss(self, x, y):
        return ((self.net(x) - y) ** 2).sum(-1)  # [T, B]


def _data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 6, 3, generator=g)
    y = torch.randn(5, 6, 2, generator=g)
    mask = torch.ones(5, 6, dtype=torch.bool)
    mask[4, :2] = False  # rank 0's half has 2 invalid entries, rank 1's none
    mask[1, 0] = False
    return x, y, mask


def _updates(alg, x, y, mask, steps=3):
    from alf.data_structures import LossInfo

    for _ in range(steps):
        alg.update_with_gradient(LossInfo(loss=alg.loss(x, y)), valid_masks=mask)
    return {k: v.clone() for k, v in alg.net.state_dict().items()}


def _stats_batches(rank):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(7, 4, generator=g, dtype=torch.float64) * 3 + 5
    b = torch.randn(3, 4, generator=g, dtype=torch.float64) - 2
    c = torch.randn(9, 4, generator=g, dtype=torch.float64) * 0.5
    empty = torch.zeros(0, 4, dtype=torch.float64)
    # per update: (rank 0's batch, rank 1's batch)
    return [(a, b), (empty, c), (c[:4], a[:1])], rank


def _stats(speed, batches, rank=None):
    stats = RunningMeanVar((4,), speed=speed)
    for pair in batches:
        stats.update(torch.cat(pair) if rank is None else pair[rank])
    return stats.count.clone(), stats.mean.clone(), stats.var.clone()


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1


def _worker(rank, path, results_dir):
    threads_before = _thread_count()
    store = dist.FileStore(path, WORLD)
    collectives.init_process_group(
        "gloo", store=store, rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=60)
    )
    import torch._dynamo  # noqa: F401 (as torch.compile or torch's own optimizers import it)

    try:
        x, y, mask = _data()
        half = slice(rank * 3, (rank + 1) * 3)
        params = _updates(_Linear(), x[:, half], y[:, half], mask[:, half])
        batches, _ = _stats_batches(rank)
        stats = {speed: _stats(speed, batches, rank) for speed in (None, 5.0)}
        # a NaN in rank 1's data only: every rank skips that update
        alg = _Linear()
        x_nan = x[:, half].clone()
        if rank == 1:
            x_nan[0, 0, 0] = float("nan")
        skipped = _updates(alg, x_nan, y[:, half], mask[:, half], steps=1)
        skipped["count"] = torch.tensor(alg.non_finite_updates_skipped)
        result = {"params": params, "stats": stats, "skipped": skipped}
        torch.save(result, os.path.join(results_dir, f"{rank}.pt"))
    finally:
        collectives.destroy_process_group()
    with open(os.path.join(results_dir, f"{rank}.threads"), "w") as f:
        f.write(f"{threads_before} {_thread_count()}")


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    mp.start_processes(
        _worker, args=(str(tmp / "store"), str(tmp)), nprocs=WORLD, start_method="spawn"
    )
    results = [torch.load(tmp / f"{r}.pt", weights_only=True) for r in range(WORLD)]
    for r, result in enumerate(results):
        result["threads"] = [int(n) for n in (tmp / f"{r}.threads").read_text().split()]
    return results


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_leaving_the_group_joins_the_backend_threads(rank_results):
    """With ``torch._dynamo`` imported after the group was made, a rank that leaves the
    group has no gloo thread left: none can outlive the interpreter and abort the rank
    at exit."""
    for result in rank_results:
        before, after = result["threads"]
        assert after == before


def test_two_ranks_on_halves_update_like_one_process_on_the_whole_batch(rank_results):
    assert not collectives.is_active()
    x, y, mask = _data()
    expected = _updates(_Linear(), x, y, mask)
    initial = _Linear().net.state_dict()
    for result in rank_results:
        for name, value in expected.items():
            # float32 sums in another order: equal to a few ulps
            torch.testing.assert_close(result["params"][name], value, rtol=1e-6, atol=1e-6)
            assert not torch.equal(value, initial[name])  # the updates moved them
    for name in expected:  # and the ranks are bit-identical to each other
        assert torch.equal(rank_results[0]["params"][name], rank_results[1]["params"][name])


def test_plain_average_of_rank_gradients_would_differ(rank_results):
    """The count weighting matters here: halves with unequal valid counts averaged
    plainly give other parameters (so the test above can fail)."""
    x, y, mask = _data()
    alg = _Linear()
    from alf.utils.math_ops import masked_mean

    for _ in range(3):
        grads = []
        for r in range(WORLD):
            half = slice(r * 3, (r + 1) * 3)
            alg.net.zero_grad()
            masked_mean(alg.loss(x[:, half], y[:, half]), mask[:, half]).backward()
            grads.append([p.grad.clone() for p in alg.net.parameters()])
        for p, g0, g1 in zip(alg.net.parameters(), *grads):
            p.grad = (g0 + g1) / 2
        spec, optimizer, params = alg.optimizers()[0]
        spec.clip_gradients(params)
        optimizer.step()
    plain = alg.net.state_dict()
    diff = max(float((plain[k] - rank_results[0]["params"][k]).abs().max()) for k in plain)
    assert diff > 1e-4


@pytest.mark.parametrize("speed", [None, 5.0])
def test_pooled_normalizer_statistics_equal_those_of_the_concatenated_data(rank_results, speed):
    batches, _ = _stats_batches(0)
    count, mean, var = _stats(speed, batches)
    for result in rank_results:
        r_count, r_mean, r_var = result["stats"][speed]
        assert float(r_count) == float(count) == 7 + 3 + 9 + 4 + 1
        torch.testing.assert_close(r_mean, mean, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(r_var, var, rtol=1e-12, atol=1e-12)
    # without pooling, each rank would have its own statistics
    own = _stats(speed, batches, rank=1)
    assert not torch.allclose(own[1], mean)


def test_a_non_finite_loss_on_one_rank_makes_every_rank_skip_the_update(rank_results):
    initial = _Linear().net.state_dict()
    for result in rank_results:
        assert int(result["skipped"]["count"]) == 1
        for name, value in initial.items():
            assert torch.equal(result["skipped"][name], value)
