"""ALF's ``capacity_ratio`` of the optimizer specs: which elements train, by hand."""

from __future__ import annotations

import copy

import pytest
import torch

import alf
from alf.optimizers import SGD, Adam, AdamTF, AdamW
from alf.optimizers.capacity import CapacityMasks
from alf.utils.schedulers import LinearScheduler
from alf.utils.training_progress import Progress


def _params(seed=0):
    """``w`` [4, 5] (20 elements) and ``b`` [3]."""
    torch.manual_seed(seed)
    w = torch.nn.Parameter(torch.randn(4, 5))
    b = torch.nn.Parameter(torch.randn(3))
    return w, b


def _alf_numbers(*shapes):
    """ALF's per-parameter uniform numbers: one generator with torch's default seed (ALF's
    is never seeded), drawn parameter after parameter."""
    generator = torch.Generator()
    assert generator.initial_seed() == 67280421310721  # torch's default seed
    return [torch.rand(shape, generator=generator) for shape in shapes]


def _set_grads(w, b):
    w.grad = torch.arange(20.0).reshape(4, 5) / 10 + 1.0  # no zero: every element moves
    b.grad = torch.tensor([1.0, -2.0, 3.0])


def test_sgd_step_trains_the_elements_alf_draws_by_hand():
    """ratio 0.25, min_capacity 4: w (20 > 4 elements) trains where u < max(4/20, 0.25)
    = 0.25, the other elements keep their values; b (3 <= 4 elements) trains whole."""
    w, b = _params()
    w0, b0 = w.detach().clone(), b.detach().clone()
    opt = SGD(lr=0.5, capacity_ratio=0.25, min_capacity=4).build([w, b])
    _set_grads(w, b)
    opt.step()
    u_w, _ = _alf_numbers((4, 5), (3,))
    trained = u_w < 0.25
    assert 0 < int(trained.sum()) < 20
    expected_w = torch.where(trained, w0 - 0.5 * w.grad, w0)
    assert torch.equal(w.detach(), expected_w)
    assert torch.equal(b.detach(), b0 - 0.5 * b.grad)
    # min_capacity above the ratio: max(10/20, 0.25) = 0.5 of w trains
    w, b = _params()
    w0 = w.detach().clone()
    opt = SGD(lr=0.5, capacity_ratio=0.25, min_capacity=10).build([w, b])
    _set_grads(w, b)
    opt.step()
    assert torch.equal(w.detach(), torch.where(u_w < 0.5, w0 - 0.5 * w.grad, w0))


def test_masked_out_value_sets_the_frozen_elements_at_build_and_after_each_step():
    w, b = _params()
    w0 = w.detach().clone()
    opt = Adam(lr=0.1, capacity_ratio=0.5, min_capacity=0, masked_out_value=0.0).build([w, b])
    u_w, u_b = _alf_numbers((4, 5), (3,))
    assert torch.equal(w.detach(), torch.where(u_w >= 0.5, torch.zeros(()), w0))
    for _ in range(3):
        _set_grads(w, b)
        opt.step()
    assert torch.equal(w.detach()[u_w >= 0.5], torch.zeros(int((u_w >= 0.5).sum())))
    assert torch.equal(b.detach()[u_b >= 0.5], torch.zeros(int((u_b >= 0.5).sum())))
    assert (w.detach()[u_w < 0.5] != w0[u_w < 0.5]).all()


@pytest.mark.parametrize(
    "factory", [Adam, AdamW, AdamTF, SGD], ids=["Adam", "AdamW", "AdamTF", "SGD"]
)
def test_frozen_elements_do_not_move_under_weight_decay_and_momentum(factory):
    """Whatever the update (Adam's moments, AdamW's and SGD's decay, momentum), a frozen
    element keeps its value; the fused lean Adam step runs the hooks once."""
    kwargs = dict(momentum=0.9) if factory is SGD else dict(weight_decay=0.1)
    w, b = _params()
    w0, b0 = w.detach().clone(), b.detach().clone()
    opt = factory(lr=0.05, capacity_ratio=0.3, min_capacity=0, **kwargs).build([w, b])
    for _ in range(4):
        opt.zero_grad()
        (w.sum() ** 2 + (b**2).sum()).backward()
        opt.step()
    for p, p0, u in zip((w, b), (w0, b0), _alf_numbers((4, 5), (3,))):
        frozen = u >= 0.3
        assert torch.equal(p.detach()[frozen], p0[frozen])
        assert (p.detach()[~frozen] != p0[~frozen]).all()


def test_a_growing_ratio_grows_nested_masks_and_frees_all_at_one():
    """ALF's capacity schedule: the elements trained at a ratio stay trained at a larger one."""
    progress = Progress()
    ratio = LinearScheduler([(0, 0.1), (1.0, 1.0)], progress_type="percent", progress=progress)
    w = torch.nn.Parameter(torch.zeros(64, 64))
    opt = SGD(lr=1.0, capacity_ratio=ratio, min_capacity=0).build([w])
    masks = opt.capacity_masks
    trained = []
    for percent in (0.0, 0.5, 1.0):
        progress.update(0, 0, percent)
        w.grad = torch.ones_like(w)
        before = w.detach().clone()
        opt.step()
        trained.append(w.detach() != before)
        assert masks.ratio() == pytest.approx(0.1 + 0.9 * percent)
    share = [float(t.float().mean()) for t in trained]
    assert share[0] == pytest.approx(0.1, abs=0.02) and share[1] == pytest.approx(0.55, abs=0.03)
    assert share[2] == 1.0 and masks.masks(1.0) == []
    assert bool((trained[1] | ~trained[0]).all())  # trained at 0.1 -> trained at 0.55


def test_masks_are_the_same_in_a_rebuilt_optimizer_so_a_resume_continues_exactly():
    """The masks depend on the parameter shapes alone: nothing to checkpoint."""
    runs = []
    for _ in range(2):
        net = torch.nn.Sequential(torch.nn.Linear(50, 200), torch.nn.Linear(200, 2))
        runs.append((net, Adam(lr=0.01, capacity_ratio=0.2, min_capacity=100)))
    torch.manual_seed(0)
    (net_a, spec_a), (net_b, spec_b) = runs
    opt_a = spec_a.build(net_a.parameters())
    x = torch.randn(8, 50)
    for _ in range(3):
        opt_a.zero_grad()
        net_a(x).pow(2).sum().backward()
        opt_a.step()
    net_b.load_state_dict(net_a.state_dict())
    opt_b = spec_b.build(net_b.parameters())
    opt_b.load_state_dict(copy.deepcopy(opt_a.state_dict()))
    for net, opt in ((net_a, opt_a), (net_b, opt_b)):
        opt.zero_grad()
        net(x).pow(2).sum().backward()
        opt.step()
    assert all(torch.equal(p, q) for p, q in zip(net_a.parameters(), net_b.parameters()))
    (w_a, frozen_a), (w_b, frozen_b) = (opt.capacity_masks.masks(0.2)[0] for opt in (opt_a, opt_b))
    assert torch.equal(frozen_a, frozen_b) and w_a.shape == w_b.shape == (200, 50)


def test_no_hooks_without_capacity_limit_and_the_spec_renders_its_call():
    from alf.configuration.writer import _Renderer

    w, b = _params()
    opt = Adam(lr=0.1).build([w, b])
    assert not hasattr(opt, "capacity_masks") and not opt._optimizer_step_pre_hooks
    assert "capacity_ratio" not in Adam(capacity_ratio=1)._alf_repr_call[2]
    spec = Adam(
        lr=5e-4,
        capacity_ratio=LinearScheduler(progress_type="percent", schedule=[(0, 0.1), (1.0, 1)]),
        masked_out_value=0,
    )  # ALF's sac_bipedal_walker_capacity_schedule_conf
    assert spec.capacity_ratio() == pytest.approx(0.1) and spec.masked_out_value == 0
    assert "capacity_ratio" not in spec.kwargs and spec.min_capacity == 8192
    spec = Adam(lr=5e-4, capacity_ratio=[(0, 0.1), (1.0, 1.0)], min_capacity=16)
    copy_ = eval(_Renderer().render(spec), {"alf": alf})  # the operative config's text
    assert copy_.min_capacity == 16 and copy_.capacity_ratio() == pytest.approx(0.1)


def test_bad_capacity_values_are_one_line_errors_naming_the_argument():
    with pytest.raises(ValueError, match=r"^Adam: capacity_ratio must be in \[0, 1\], got 1.5$"):
        Adam(capacity_ratio=1.5)
    with pytest.raises(ValueError, match="^SGD: min_capacity must be an integer >= 0, got -1$"):
        SGD(min_capacity=-1)
    w, b = _params()
    opt = SGD(lr=0.1, capacity_ratio=lambda: 2.0).build([w, b])
    _set_grads(w, b)
    with pytest.raises(ValueError, match=r"capacity_ratio must be in \[0, 1\], got 2.0"):
        opt.step()
    assert isinstance(opt.capacity_masks, CapacityMasks)
