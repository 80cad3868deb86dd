"""The fast distribution constructors give the same distributions as torch's."""

import pytest
import torch
import torch.distributions as td

from alf.utils import dist_utils


def _squash_transforms(action_dim):
    low, high = -2.0 * torch.ones(action_dim), torch.ones(action_dim)
    return [
        dist_utils.StableTanh(),
        dist_utils.affine_transform((high + low) / 2, (high - low) / 2),
    ]


@pytest.mark.parametrize(
    "loc_shape, scale_shape",
    [((5, 3), (5, 3)), ((5, 3), (3,)), ((4, 5, 3), (5, 3)), ((3,), (5, 3)), ((5, 3), (5, 1))],
)
def test_normal_matches_torch(loc_shape, scale_shape):
    torch.manual_seed(0)
    loc = torch.randn(loc_shape)
    scale = torch.rand(scale_shape) + 0.1
    fast, ref = dist_utils.normal(loc, scale), td.Normal(loc, scale, validate_args=False)
    assert fast.batch_shape == ref.batch_shape and fast.event_shape == ref.event_shape
    assert torch.equal(fast.loc, ref.loc) and torch.equal(fast.scale, ref.scale)
    value = ref.sample()
    assert torch.equal(fast.log_prob(value), ref.log_prob(value))
    assert torch.equal(fast.entropy(), ref.entropy())
    torch.manual_seed(1)
    a = fast.rsample()
    torch.manual_seed(1)
    assert torch.equal(a, ref.rsample())


@pytest.mark.parametrize("event_ndims", [1, 2])
def test_elementwise_transformed_matches_torch(event_ndims):
    torch.manual_seed(0)
    loc = torch.randn(6, 2, 3)
    scale = torch.rand(6, 2, 3) + 0.1
    base = dist_utils.DiagMultivariateNormal(loc, scale, event_ndims)
    transforms = _squash_transforms(3)
    fast = dist_utils.elementwise_transformed(base, transforms)
    ref = td.TransformedDistribution(base, transforms, validate_args=False)
    assert type(fast) is td.TransformedDistribution
    assert fast.batch_shape == ref.batch_shape and fast.event_shape == ref.event_shape
    torch.manual_seed(3)
    a = fast.rsample()
    torch.manual_seed(3)
    assert torch.equal(a, ref.rsample())
    assert torch.equal(fast.log_prob(a), ref.log_prob(a))
    assert torch.equal(dist_utils.get_mode(fast), dist_utils.get_mode(ref))
    shape = (4,) + tuple(ref.batch_shape)
    assert fast.expand(shape).batch_shape == ref.expand(shape).batch_shape == shape


def test_elementwise_transformed_falls_back_for_other_transforms():
    base = dist_utils.DiagMultivariateNormal(torch.zeros(4, 3), torch.ones(4, 3))
    # an affine map whose parameters do not broadcast to the event shape changes the shapes
    wide = td.AffineTransform(torch.zeros(2, 4, 3), 1.0)
    fast = dist_utils.elementwise_transformed(base, [wide])
    ref = td.TransformedDistribution(base, [wide], validate_args=False)
    assert fast.batch_shape == ref.batch_shape == (2, 4)
    exp = dist_utils.elementwise_transformed(base, [td.ExpTransform()])
    assert exp.batch_shape == (4,) and exp.event_shape == (3,)
