"""``Network``: an ``nn.Module`` that knows its input, state and output specs and can copy itself.

Every network maps ``(inputs, state)`` to ``(output, new_state)``; inputs are
``[B, ...]`` nests matching ``input_tensor_spec``. A feed-forward network has
``state_spec == ()`` and returns ``state`` unchanged.
"""

from __future__ import annotations

import copy as copy_lib
import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules import module as _module

import alf.nest as nest
from alf.configuration import scopes
from alf.layers.dense import FC
from alf.layers.parallel import make_parallel_net, make_parallel_spec
from alf.tensor_specs import TensorSpec, zeros_from_spec
from alf.utils.math_ops import identity


def _copy_arg(value):
    """A fresh copy of a ctor argument that holds parameters; anything else as is."""
    if isinstance(value, Network):
        return value.copy()
    if isinstance(value, nn.Module):
        return copy_lib.deepcopy(value)
    return value


class Network(nn.Module):
    """Base class of alf networks.

    Subclasses call ``super().__init__(input_tensor_spec, state_spec, name)`` and
    implement ``forward(inputs, state=()) -> (output, new_state)``. The arguments
    a network is constructed with are recorded (before ``__init__`` runs), which
    is what ``copy()`` uses to build an independent twin.

    Forward calls do no spec checking: they are on the training hot path.

    Args:
        input_tensor_spec: nest of ``TensorSpec`` of one (unbatched) input.
        state_spec: nest of ``TensorSpec`` of the recurrent state, ``()`` if none.
        name: name of the network.
    """

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        # Recorded before nn.Module.__init__, so bypass nn.Module.__setattr__.
        object.__setattr__(obj, "_ctor_args", args)
        object.__setattr__(obj, "_ctor_kwargs", kwargs)
        # the gin scopes active now: copy() builds the twin with the same scoped values
        object.__setattr__(obj, "_ctor_scopes", scopes.active_scopes())
        return obj

    def __init__(self, input_tensor_spec, state_spec=(), name="Network"):
        super().__init__()
        self._input_tensor_spec = input_tensor_spec
        self._state_spec = state_spec
        self._name = name
        self._output_spec = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def input_tensor_spec(self):
        """Nest of ``TensorSpec`` of one input (without the batch dim)."""
        return self._input_tensor_spec

    @property
    def state_spec(self):
        """Nest of ``TensorSpec`` of the state; ``()`` for a feed-forward network."""
        return self._state_spec

    @property
    def is_recurrent(self) -> bool:
        """Whether the network has a state."""
        return len(nest.flatten(self._state_spec)) > 0

    @property
    def output_spec(self):
        """Nest of ``TensorSpec`` / ``DistributionSpec`` of the output (without the batch dim).

        Computed once by a dry run on zeros (in eval mode, without gradient);
        subclasses that know it override this.
        """
        if self._output_spec is None:
            self._output_spec = self._compute_output_spec()
        return self._output_spec

    def _compute_output_spec(self):
        from alf.utils import dist_utils

        modes = [(m, m.training) for m in self.modules()]
        self.eval()
        try:
            with torch.no_grad():
                inputs = zeros_from_spec(self._input_tensor_spec, batch_size=1)
                state = zeros_from_spec(self._state_spec, batch_size=1)
                output, _ = self(inputs, state)
        finally:
            for module, training in modes:
                module.training = training
        return dist_utils.extract_spec(output, from_dim=1)

    @property
    def saved_args(self) -> dict:
        """The constructor arguments of this network, by name."""
        bound = self._bound_ctor_args()
        if bound is None:
            return dict(self._ctor_kwargs)
        arguments = dict(bound.arguments)
        arguments.pop(next(iter(bound.signature.parameters)))  # self
        return arguments

    def _bound_ctor_args(self):
        try:
            signature = inspect.signature(type(self).__init__)
            return signature.bind(None, *self._ctor_args, **self._ctor_kwargs)
        except (TypeError, ValueError):
            return None

    def copy(self, name: str | None = None) -> Network:
        """A new network of the same type built with the same constructor arguments.

        The copy has freshly initialized, independent parameters (weights are not
        copied). Constructor arguments that are networks are copied the same way,
        other ``nn.Module`` arguments are deep-copied, so nothing is shared. It is built
        in the gin scopes the original was built in, so it gets the same scoped values.

        Args:
            name: name of the copy; the original name when None.
        """
        with scopes.scopes_activated(getattr(self, "_ctor_scopes", ())):
            args = [nest.map_structure(_copy_arg, a) for a in self._ctor_args]
            kwargs = {k: nest.map_structure(_copy_arg, v) for k, v in self._ctor_kwargs.items()}
            if name is not None:
                bound = self._bound_ctor_args()
                if bound is not None and "name" in bound.signature.parameters:
                    bound = bound.signature.bind(None, *args, **kwargs)
                    bound.arguments["name"] = name
                    return type(self)(*bound.args[1:], **bound.kwargs)
                kwargs["name"] = name
            return type(self)(*args, **kwargs)

    def forward(self, inputs, state=()):
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"name={self._name!r}"


class LinearOp:
    """Calls an ``nn.Linear`` layer as ``F.linear(x, weight, bias)`` when nothing hooks it.

    ``nn.Module.__call__`` plus the ``weight``/``bias`` attribute lookups cost about
    2 µs per layer, as much as the matmul of a small layer: 10-15% of a 64x64 MLP's
    forward at the batch sizes of RL rollouts. This op takes the parameters straight
    from the layer's ``_parameters`` (so replaced or reloaded parameters are seen)
    and falls back to ``layer(x)`` whenever ``nn.Module.__call__`` would do more than
    call ``forward``: hooks on the layer or global module hooks, or a layer that is no
    longer a plain ``nn.Linear`` (e.g. parametrized).

    Args:
        layer: an ``nn.Linear`` (exactly that class).
    """

    __slots__ = ("_layer", "_params")

    def __init__(self, layer: nn.Linear):
        if type(layer) is not nn.Linear:
            raise TypeError(f"LinearOp needs an nn.Linear, got {type(layer).__name__}")
        self._layer = layer
        self._params = layer._parameters

    @property
    def layer(self) -> nn.Linear:
        return self._layer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        layer = self._layer
        weight = self._params.get("weight")
        if weight is None or type(layer) is not nn.Linear or is_hooked(layer):
            return layer(x)
        return F.linear(x, weight, self._params["bias"])

    def __repr__(self) -> str:
        return f"LinearOp({self._layer!r})"


class FCOp:
    """Calls an ``alf.layers.FC`` as ``activation(F.linear(x, weight, bias))`` when nothing
    hooks it and it has no normalization: what ``LinearOp`` does for an ``nn.Linear``, with
    the layer's activation (skipped when it is the identity). Otherwise ``layer(x)``.

    Args:
        layer: an ``FC`` (exactly that class).
    """

    __slots__ = ("_layer", "_params", "_activation", "_plain")

    def __init__(self, layer: FC):
        if type(layer) is not FC:
            raise TypeError(f"FCOp needs an alf.layers.FC, got {type(layer).__name__}")
        self._layer = layer
        self._params = layer._parameters
        activation = layer._activation
        self._activation = None if activation is identity else activation
        self._plain = layer._ln is None and layer._bn is None

    @property
    def layer(self) -> FC:
        return self._layer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        layer = self._layer
        if not self._plain or type(layer) is not FC or is_hooked(layer):
            return layer(x)
        params = self._params
        y = F.linear(x, params["_weight"], params.get("_bias"))
        return y if self._activation is None else self._activation(y)

    def __repr__(self) -> str:
        return f"FCOp({self._layer!r})"


def is_hooked(module: nn.Module) -> bool:
    """Whether calling ``module`` would run hooks (the test of ``nn.Module._call_impl``)."""
    return bool(
        module._forward_pre_hooks
        or module._forward_hooks
        or module._backward_pre_hooks
        or module._backward_hooks
        or _module._global_forward_pre_hooks
        or _module._global_forward_hooks
        or _module._global_backward_pre_hooks
        or _module._global_backward_hooks
        or torch._C._get_tracing_state()
    )


class NetworkWrapper(Network):
    """A module or function ``f`` of one input as a feed-forward ``Network``:
    ``(f(x), state)``.

    Args:
        module: the module or function.
        input_tensor_spec: nest of ``TensorSpec`` of its input.
        name: name of the network.
    """

    def __init__(self, module, input_tensor_spec, name: str = "NetworkWrapper"):
        super().__init__(input_tensor_spec, name=name)
        self._module = module

    def forward(self, inputs, state=()):
        return self._module(inputs), state

    def make_parallel(self, n: int) -> NetworkWrapper:
        """The wrapper of the module's parallel form (``alf.layers.make_parallel_net``)."""
        spec = make_parallel_spec(self._input_tensor_spec, n)
        return NetworkWrapper(make_parallel_net(self._module, n), spec, f"parallel_{self._name}")


def get_input_tensor_spec(module):
    """The input spec of a ``Network``, an ``FC`` or a torch ``Sequential`` starting with one
    of them; None where the module does not say."""
    if isinstance(module, Network):
        return module.input_tensor_spec
    if isinstance(module, FC):
        return TensorSpec((module.input_size,))
    if isinstance(module, nn.Sequential) and len(module) > 0:
        return get_input_tensor_spec(module[0])
    return None


def wrap_as_network(module, input_tensor_spec=None) -> Network:
    """``module`` itself if it is a ``Network``, else a ``NetworkWrapper`` of it on
    ``input_tensor_spec`` (inferred where ``get_input_tensor_spec`` can)."""
    if isinstance(module, Network):
        return module
    if input_tensor_spec is None:
        input_tensor_spec = get_input_tensor_spec(module)
    if input_tensor_spec is None:
        raise ValueError(
            f"the input_tensor_spec of {type(module).__name__} {module!r} cannot be inferred: "
            "give input_tensor_spec"
        )
    return NetworkWrapper(module, input_tensor_spec)
