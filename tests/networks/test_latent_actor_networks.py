"""RealNVP and ALF's latent actor: the transform and its inverse by hand, the log-Jacobian
against autograd's, the density of the transformed distribution against a change of
variables, and a SAC step with a latent actor."""

import functools
import math

import pytest
import torch

from alf.algorithms.sac_algorithm import SacAlgorithm
from alf.data_structures import Experience, StepType, TimeStep
from alf.networks import LatentActorDistributionNetwork, RealNVPNetwork
from alf.networks.latent_actor_networks import UnitNormalActorDistributionNetwork
from alf.networks.normalizing_flow_networks import _masks
from alf.optimizers import Adam
from alf.tensor_specs import BoundedTensorSpec, TensorSpec


def test_masks_alternate():
    first, second, third = _masks(4, 1, "contiguous", 3)
    assert first.tolist() == [True, False, False, False] and torch.equal(second, ~first)
    assert torch.equal(third, first)
    assert _masks(6, 2, "distributed", 1)[0].tolist() == [True, False, False, True, False, False]
    with pytest.raises(ValueError, match="mask_mode"):
        _masks(4, 2, "checkered", 1)


def test_one_layer_by_hand_and_its_inverse():
    torch.manual_seed(0)
    flow = RealNVPNetwork(
        TensorSpec((2,)), fc_layer_params=(), num_layers=1, transform_scale_nonlinear=torch.exp
    )
    net = flow._nets[0]  # ParallelFC [2 -> 2] x 2: scale, translation
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[[0.5, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0]]]))
        net[0].bias.copy_(torch.tensor([[0.0, 0.1], [0.0, -1.0]]))
    x = torch.tensor([[2.0, 3.0]])
    y, _ = flow(x)
    # mask keeps x1 = 2; s = 0.5 * 2 * [1, 0] + [0, 0.1] -> scale_2 = e^0.1, t_2 = -1
    expected = torch.tensor([[2.0, 3.0 * math.exp(0.1) - 1.0]])
    torch.testing.assert_close(y, expected)
    back, _ = flow.inverse(y)
    torch.testing.assert_close(back, x)
    transform = flow.make_invertible_transform()
    torch.testing.assert_close(transform.log_abs_det_jacobian(x, y), torch.tensor([0.1]))


def test_log_jacobian_equals_autograds_on_a_conditional_flow():
    torch.manual_seed(1)
    flow = RealNVPNetwork(TensorSpec((3,)), TensorSpec((2,)), fc_layer_params=(8,), num_layers=4)
    x, z = torch.randn(3), torch.randn(1, 2)
    transform = flow.make_invertible_transform(z)
    jacobian = torch.autograd.functional.jacobian(lambda v: transform(v[None])[0], x)
    expected = torch.linalg.slogdet(jacobian).logabsdet
    y = transform(x[None])
    torch.testing.assert_close(transform.log_abs_det_jacobian(x[None], y)[0], expected)
    assert flow.make_invertible_transform(z) is transform  # cached for the same inputs


def test_latent_actor_density_is_a_change_of_variables():
    torch.manual_seed(2)
    action_spec = BoundedTensorSpec((2,), minimum=-2.0, maximum=2.0)
    flow = functools.partial(RealNVPNetwork, fc_layer_params=(8,), num_layers=2)
    actor = LatentActorDistributionNetwork(
        TensorSpec((3,)), action_spec, normalizing_flow_network_ctor=flow, scale_distribution=True
    )
    obs = torch.randn(4, 3)
    dist, _ = actor(obs)
    action = dist.rsample()
    assert action.shape == (4, 2) and bool((action.abs() < 2).all())
    # log p(a) = log N(u) - log|det du->a|, u the latent sample behind a
    latent = dist.transforms[0].inv(dist.transforms[1].inv(dist.transforms[2].inv(action)))
    flowed = dist.transforms[0](latent)
    log_det = dist.transforms[0].log_abs_det_jacobian(latent, flowed)
    log_det = log_det + (
        2.0 * (math.log(2.0) - flowed - torch.nn.functional.softplus(-2.0 * flowed))
    ).sum(-1)
    log_det = log_det + 2 * math.log(2.0)  # the affine map's scale 2 per dimension
    base = -0.5 * (latent**2).sum(-1) - math.log(2 * math.pi)
    torch.testing.assert_close(dist.log_prob(action), base - log_det, rtol=0, atol=1e-4)
    prior, _ = UnitNormalActorDistributionNetwork(TensorSpec((3,)), action_spec)(obs)
    assert prior.batch_shape == (4,) and torch.equal(prior.mean, torch.zeros(4, 2))


def test_unsupported_arguments_are_named():
    with pytest.raises(ValueError, match="conv_layer_params not supported"):
        RealNVPNetwork(TensorSpec((2,)), conv_layer_params=((4, 3, 1),))
    with pytest.raises(ValueError, match="bounded action spec"):
        LatentActorDistributionNetwork(TensorSpec((3,)), TensorSpec((2,)), scale_distribution=True)


def test_sac_trains_a_latent_actor():
    torch.manual_seed(3)
    obs_spec = TensorSpec((3,))
    action_spec = BoundedTensorSpec((1,), minimum=-2.0, maximum=2.0)
    flow = functools.partial(RealNVPNetwork, fc_layer_params=(8,), num_layers=2)
    sac = SacAlgorithm(
        obs_spec,
        action_spec,
        actor_optimizer=Adam(lr=1e-3),
        critic_optimizer=Adam(lr=1e-3),
        alpha_optimizer=Adam(lr=1e-3),
        actor_network_ctor=functools.partial(
            LatentActorDistributionNetwork,
            normalizing_flow_network_ctor=flow,
            scale_distribution=True,
        ),
    )
    steps = torch.full((2, 8), int(StepType.MID), dtype=torch.int32)
    exp = Experience(
        time_step=TimeStep(
            step_type=steps,
            reward=torch.randn(2, 8),
            discount=torch.ones(2, 8),
            observation=torch.randn(2, 8, 3),
        ),
        rollout_info=sac.rollout_step(
            TimeStep(step_type=steps[0], observation=torch.randn(8, 3)), ()
        ).info._replace(action=torch.rand(2, 8, 1) * 4 - 2),
    )
    before = [p.detach().clone() for p in sac._actor_network.parameters()]
    sac.update_from_experience(exp)
    after = list(sac._actor_network.parameters())
    assert all(torch.isfinite(p).all() for p in after)
    assert any(not torch.equal(b, a) for b, a in zip(before, after))  # the flow learned


def test_sample_and_log_prob_run_each_flow_layer_once():
    torch.manual_seed(4)
    action_spec = BoundedTensorSpec((2,), minimum=-1.0, maximum=1.0)
    flow = functools.partial(RealNVPNetwork, fc_layer_params=(8,), num_layers=2)
    actor = LatentActorDistributionNetwork(
        TensorSpec((3,)), action_spec, normalizing_flow_network_ctor=flow, scale_distribution=True
    )
    calls = []
    for net in actor._nf_network._nets:
        net.register_forward_hook(lambda *_: calls.append(1))
    dist, _ = actor(torch.randn(5, 3))
    dist.log_prob(dist.rsample())
    assert len(calls) == 2  # one pass per layer: log_prob reuses the sample's scales
