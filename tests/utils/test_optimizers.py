"""Optimizer specs: the lean fused Adam step and gradient clipping equal torch's, bit for bit."""

import copy
import subprocess
import sys
import textwrap

import pytest
import torch

from alf.optimizers import Adam, AdamW
from alf.optimizers.optimizers import FusedAdam, FusedAdamW, clip_grad_norm


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def _train(optimizer_cls, lean_clip, steps=12, **kwargs):
    """Parameters, gradient norms and optimizer state after ``steps`` clipped updates."""
    net = _net()
    opt = optimizer_cls(net.parameters(), lr=1e-2, eps=1e-5, fused=True, **kwargs)
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(1))
    norms = []
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        (net(x) ** 2).mean().backward()
        params = list(net.parameters())
        if lean_clip:
            norms.append(clip_grad_norm(params, 0.05))
        else:
            norms.append(torch.nn.utils.clip_grad_norm_(params, 0.05, foreach=True))
        for group in opt.param_groups:
            group["lr"] = 1e-2 * (1 - i / steps)
        opt.step()
    return [p.detach().clone() for p in net.parameters()], torch.stack(norms), opt.state_dict()


@pytest.mark.parametrize(
    "torch_cls, lean_cls, kwargs",
    [
        (torch.optim.Adam, FusedAdam, {}),
        (torch.optim.Adam, FusedAdam, {"weight_decay": 0.1, "maximize": True}),
        (torch.optim.AdamW, FusedAdamW, {"weight_decay": 0.01}),
        (torch.optim.Adam, FusedAdam, {"amsgrad": True}),  # torch's own step
    ],
)
def test_lean_fused_step_and_clipping_are_bit_identical_to_torch(torch_cls, lean_cls, kwargs):
    expected_params, expected_norms, expected_state = _train(torch_cls, False, **kwargs)
    params, norms, state = _train(lean_cls, True, **kwargs)
    assert all(torch.equal(a, b) for a, b in zip(expected_params, params))
    assert torch.equal(expected_norms, norms)
    for key, fields in expected_state["state"].items():
        assert all(torch.equal(fields[f], state["state"][key][f]) for f in fields)


@pytest.mark.parametrize("plain_adam_first", [False, True])
def test_lean_fused_step_runs_step_hooks_once(plain_adam_first):
    if plain_adam_first:  # torch then wraps Adam.step too, which the fallback must not rerun
        torch.optim.Adam(_net().parameters())
    net = _net()
    opt = FusedAdam(net.parameters(), fused=True)
    calls = []
    opt.register_step_pre_hook(lambda *args: calls.append("pre"))
    opt.register_step_post_hook(lambda *args: calls.append("post"))
    for _ in range(3):  # the first step initializes the state with torch's _init_group
        opt.zero_grad()
        net(torch.ones(2, 4)).sum().backward()
        opt.step()
    assert calls == ["pre", "post"] * 3
    assert all(float(s["step"]) == 3 for s in opt.state.values())


def test_lean_fused_step_with_closure_and_reloaded_state():
    net = _net()
    opt = FusedAdam(net.parameters(), fused=True)

    def closure():
        opt.zero_grad()
        loss = net(torch.ones(2, 4)).sum()
        loss.backward()
        return loss

    assert torch.is_tensor(opt.step(closure))
    twin = _net()
    twin.load_state_dict(net.state_dict())
    twin_opt = FusedAdam(twin.parameters(), fused=True)
    twin_opt.load_state_dict(copy.deepcopy(opt.state_dict()))  # torch shares the tensors
    for module, optimizer in ((net, opt), (twin, twin_opt)):
        optimizer.zero_grad()
        module(torch.ones(2, 4)).sum().backward()
        optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), twin.parameters()))


def test_specs_build_lean_optimizers_and_clip_by_global_norm():
    net = _net()
    adam = Adam(lr=1e-3, gradient_clipping=0.5).build(net.parameters())
    assert isinstance(adam, FusedAdam) and isinstance(adam, torch.optim.Adam)
    assert isinstance(AdamW().build(net.parameters()), FusedAdamW)
    net(torch.randn(8, 4)).pow(2).sum().mul(100).backward()
    params = list(net.parameters())
    norm = Adam(gradient_clipping=0.5).clip_gradients(params)
    assert float(norm) > 0.5
    clipped = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    assert abs(float(clipped) - 0.5) < 1e-4
    assert torch.allclose(Adam().clip_gradients(params), clipped)  # no clipping: norm only


def test_lean_fused_step_is_profiled_like_torch_step():
    net = _net()
    opt = FusedAdam(net.parameters(), fused=True)
    for _ in range(2):
        opt.zero_grad()
        net(torch.ones(2, 4)).sum().backward()
        opt.step()
    with torch.profiler.profile() as profiler:
        opt.step()
    assert "Optimizer.step#FusedAdam.step" in {e.key for e in profiler.key_averages()}


def test_clip_grad_norm_with_mixed_dtypes_equals_torch():
    torch.manual_seed(0)
    grads = [torch.randn(5) * 3, torch.randn(3, dtype=torch.float64) * 3]
    results = []
    for clip in (clip_grad_norm, lambda ps, c: torch.nn.utils.clip_grad_norm_(ps, c, foreach=True)):
        params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        results.append((clip(params, 0.5), [p.grad for p in params]))
    (norm, clipped), (expected_norm, expected) = results
    assert torch.equal(norm, expected_norm)
    assert all(torch.equal(a, b) for a, b in zip(clipped, expected))


def test_optimizer_specs_render_as_their_factory_call():
    """The operative config (root_dir/alf_config.py) writes an optimizer as the call
    that made it, and evaluating that text gives the same spec."""
    import alf
    from alf.configuration.writer import _Renderer
    from alf.optimizers import SGD, Adam, AdamW
    from alf.utils.schedulers import update_progress

    for spec in (
        Adam(lr=[(0, 1e-3), (1, 0.0)], eps=1e-5, gradient_clipping=0.5, name="actor"),
        AdamW(lr=3e-4, weight_decay=0.1),
        SGD(lr=0.1, momentum=0.9),
    ):
        renderer = _Renderer()
        text = renderer.render(spec)
        assert text.startswith("alf.optimizers.optimizers.")
        copy = eval(text, {"alf": alf})
        assert copy.optimizer_cls is spec.optimizer_cls and copy.kwargs == spec.kwargs
        assert copy.name == spec.name and copy.gradient_clipping == spec.gradient_clipping
        for progress in (0.0, 0.5, 1.0):
            update_progress(0, 0, progress)
            assert copy.lr_scheduler() == spec.lr_scheduler()
    update_progress(0, 0, 0.0)


def test_factory_specs_split_their_arguments():
    """Each factory's ``lr``/clipping go to the spec, the rest to the optimizer class,
    and the spec is named after the factory unless named."""
    from alf.optimizers import SGD, Adam, AdamW

    adam = Adam(lr=2e-3, betas=[0.8, 0.9], gradient_clipping=0.5)
    assert (adam.optimizer_cls, adam.name, adam.gradient_clipping) == (FusedAdam, "Adam", 0.5)
    assert adam.lr_scheduler() == 2e-3 and adam.clip_by_global_norm
    assert adam.kwargs == dict(
        betas=(0.8, 0.9), eps=1e-8, weight_decay=0.0, amsgrad=False, fused=True
    )
    assert adam._alf_repr_call[2] == dict(
        lr=2e-3,
        betas=[0.8, 0.9],
        eps=1e-8,
        weight_decay=0.0,
        amsgrad=False,
        gradient_clipping=0.5,
        clip_by_global_norm=True,
    )
    adamw = AdamW(name="critic")
    assert (adamw.optimizer_cls, adamw.name) == (FusedAdamW, "critic")
    assert adamw.kwargs == dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, fused=True)
    assert adamw._alf_repr_call[2]["name"] == "critic"
    sgd = SGD(momentum=0.9, clip_by_global_norm=False)
    assert (sgd.optimizer_cls, sgd.name, sgd.kwargs) == (torch.optim.SGD, "SGD", {"momentum": 0.9})
    assert sgd.lr_scheduler() == 1e-2 and not sgd.clip_by_global_norm


def test_training_with_the_lean_optimizers_imports_no_dynamo():
    """torch's ``Optimizer`` methods import ``torch._dynamo`` (about a second of start-up)
    on their first call; alf's Adam/AdamW get through construction, steps (the first
    included), ``zero_grad`` both ways and a state round trip without it."""
    script = textwrap.dedent(
        """
        import sys, torch
        from alf.optimizers import Adam, AdamW
        for spec in (Adam(lr=1e-2), AdamW(lr=1e-2)):
            net = torch.nn.Linear(3, 2)
            opt = spec.build(net.parameters())
            for set_to_none in (True, False, True):
                opt.zero_grad(set_to_none=set_to_none)
                net(torch.ones(4, 3)).pow(2).sum().backward()
                opt.step()
            state = opt.state_dict()
            opt.load_state_dict(state)
            assert float(opt.state[net.weight]["step"]) == 3
        print("dynamo imported:", "torch._dynamo" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "dynamo imported: False"
