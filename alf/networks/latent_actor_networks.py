"""ALF's latent actors: an action distribution made by pushing a prior (e.g. a unit normal)
through a normalizing flow conditioned on the observation, then, with
``scale_distribution``, squashing it into the action bounds (``StableTanh`` and an affine
map). The density can take any shape, which suits SAC and DDPG (reparameterized samples, the
flows' caches keep ``log_prob`` of a fresh sample exact); policy-gradient methods evaluate
``log_prob`` of stored actions through the flows' inverses.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.distributions as td

import alf
from alf.networks.network import Network
from alf.networks.normalizing_flow_networks import RealNVPNetwork
from alf.tensor_specs import BoundedTensorSpec
from alf.utils import dist_utils


@alf.configurable
class UnitNormalActorDistributionNetwork(Network):
    """A unit diagonal normal over the action, whatever the input (a latent actor's prior).

    Args:
        input_tensor_spec: the observation's spec (only its batch shape is read).
        action_spec: a vector action's spec.
        name: name of the network.
    """

    def __init__(
        self, input_tensor_spec, action_spec, name: str = "UnitNormalActorDistributionNetwork"
    ):
        super().__init__(input_tensor_spec, name=name)
        self._action_spec = action_spec

    def forward(self, inputs, state=()):
        batch = alf.nest.flatten(inputs)[0].shape[0]
        zeros = torch.zeros(batch, *self._action_spec.shape)
        return dist_utils.DiagMultivariateNormal(zeros, torch.ones_like(zeros)), state


@alf.configurable
class LatentActorDistributionNetwork(Network):
    """The prior actor's distribution transformed by a normalizing flow (module doc).

    Args:
        input_tensor_spec: the observation's spec.
        action_spec: a vector action's spec (bounded, for ``scale_distribution``).
        prior_actor_distribution_network_ctor: ``ctor(input_tensor_spec=, action_spec=)``
            of the prior's network.
        normalizing_flow_network_ctor: ``ctor(input_tensor_spec=action_spec,
            conditional_input_tensor_spec=)`` of the flow.
        conditional_flow: condition the flow on the observation.
        scale_distribution: squash into the action bounds.
        dist_squashing_transform: the squashing into (-1, 1) (``StableTanh()``).
        name: name of the network.
    """

    def __init__(
        self,
        input_tensor_spec,
        action_spec,
        prior_actor_distribution_network_ctor: Callable = UnitNormalActorDistributionNetwork,
        normalizing_flow_network_ctor: Callable = RealNVPNetwork,
        conditional_flow: bool = True,
        scale_distribution: bool = False,
        dist_squashing_transform: td.Transform | None = None,
        name: str = "LatentActorDistributionNetwork",
    ):
        super().__init__(input_tensor_spec, name=name)
        self._prior_actor_network = prior_actor_distribution_network_ctor(
            input_tensor_spec=input_tensor_spec, action_spec=action_spec
        )
        self._nf_network = normalizing_flow_network_ctor(
            input_tensor_spec=action_spec,
            conditional_input_tensor_spec=input_tensor_spec if conditional_flow else None,
        )
        self._conditional_flow = conditional_flow
        self._squash = None
        if scale_distribution:
            if not isinstance(action_spec, BoundedTensorSpec):
                raise ValueError(f"{name}: scale_distribution needs a bounded action spec")
            low = np.broadcast_to(action_spec.minimum, action_spec.shape).astype(np.float64)
            high = np.broadcast_to(action_spec.maximum, action_spec.shape).astype(np.float64)
            self.register_buffer(
                "_means", torch.as_tensor((high + low) / 2, dtype=torch.float32), False
            )
            self.register_buffer(
                "_magnitudes", torch.as_tensor((high - low) / 2, dtype=torch.float32), False
            )
            self._squash = dist_squashing_transform or dist_utils.StableTanh()

    def forward(self, inputs, state=()):
        prior, state = self._prior_actor_network(inputs, state)
        flow = self._nf_network.make_invertible_transform(
            inputs if self._conditional_flow else None
        )
        transforms = [flow]
        if self._squash is not None:
            transforms += [self._squash, dist_utils.affine_transform(self._means, self._magnitudes)]
        return td.TransformedDistribution(prior, transforms, validate_args=False), state
