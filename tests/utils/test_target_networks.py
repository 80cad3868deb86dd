"""TargetUpdater: Polyak averaging every ``period`` calls; its phase survives a checkpoint."""

import torch
import torch.nn as nn

from alf.utils.target_networks import TargetUpdater, soft_update


def _pair():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    target = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    return model, target


def test_initial_copy_and_soft_update_formula():
    model, target = _pair()
    updater = TargetUpdater([model], [target], tau=0.25, period=1)
    assert all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), target.state_dict().values())
    )
    assert not any(p.requires_grad for p in target.parameters())
    before = target[0].weight.clone()
    with torch.no_grad():
        model[0].weight.add_(1.0)
        model[1].running_mean.fill_(2.0)
    updater()
    assert torch.allclose(target[0].weight, 0.75 * before + 0.25 * model[0].weight)
    assert torch.equal(target[1].running_mean, model[1].running_mean)  # buffers are copied


def test_period_and_checkpointed_phase():
    model, target = _pair()
    updater = TargetUpdater([model], [target], tau=1.0, period=3)
    with torch.no_grad():
        model[0].bias.fill_(5.0)
    updater()
    updater()
    assert not torch.equal(target[0].bias, model[0].bias)  # 2 calls: no update yet
    state = updater.state_dict()
    assert int(state["_count"]) == 2
    model2, target2 = _pair()
    resumed = TargetUpdater([model2], [target2], tau=1.0, period=3)
    resumed.load_state_dict(state)
    with torch.no_grad():
        model2[0].bias.fill_(7.0)
    resumed()  # the third call since the start: updates
    assert torch.equal(target2[0].bias, model2[0].bias)


def test_soft_update_checks_parameter_counts():
    try:
        soft_update(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), 0.5)
    except ValueError as e:
        assert "parameter counts" in str(e)
    else:
        raise AssertionError("expected a ValueError")
