"""ALF's containers: networks composed of layers, modules, functions and other networks.

``Sequential`` chains them (optionally wiring named results), ``Parallel`` applies a nest of
networks to the matching nest of inputs, ``Branch`` applies several to one input, ``Echo``
feeds part of a block's output back as its next input, ``Residue`` adds a block's output to
its input. Each container is a ``Network``: it has ``input_tensor_spec``, ``output_spec``
and a ``state_spec`` gathered from its recurrent members (``()`` when none is), so it goes
wherever a network does; ``make_parallel(n)`` builds the ensemble of ``n`` copies.

A member that is a ``Network`` is called ``net(x, state)``; any other callable ``f(x)``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

import alf.nest as nest
from alf.layers.parallel import make_parallel_net, make_parallel_spec
from alf.nest.utils import get_nested_field, make_nested_module
from alf.networks.network import Network, get_input_tensor_spec, is_hooked, wrap_as_network


def _gathered_state_spec(state_specs):
    """The container's state spec: ``()`` when no member has a state."""
    return state_specs if nest.flatten(state_specs) else ()


def _is_nested_str(value) -> bool:
    return all(isinstance(x, str) for x in nest.flatten(value))


def _parallel_member(member, n: int):
    if isinstance(member, Network) and not hasattr(member, "make_parallel"):
        raise ValueError(f"{type(member).__name__} {member.name!r} has no parallel form")
    return make_parallel_net(member, n)


def Sequential(*modules, output="", input_tensor_spec=None, name="Sequential", **named_modules):
    """A chain of modules: each takes the previous one's result (the first, the input).

    A member may be ``(inputs, module)``: ``inputs`` is a nest of names of earlier results
    (``'input'`` is the container's input, a named member's result goes by its keyword),
    e.g. ``Sequential(enc, a=fc1, b=(('input', 'a'), fc2), output=('a', 'b'))``. ``output``
    (a nest of names) selects what the container returns (default: the last result). The
    state is the list of the members' states (``()`` for a stateless member).

    Args:
        modules: ``Network``s, modules or functions, or ``(inputs, module)`` pairs.
        output: nest of names of the results to return; '' for the last one.
        input_tensor_spec: the input's spec; needed when the first member does not say.
        name: name of the network.
        named_modules: members whose result is kept under their keyword.
    """
    return _Sequential(modules, named_modules, output, input_tensor_spec, name)


class _Sequential(Network):
    def __init__(
        self, elements=(), element_dict=None, output="", input_tensor_spec=None, name="Sequential"
    ):
        members = [("", e) for e in elements] + list((element_dict or {}).items())
        self_inputs, modules = [], []
        for index, (key, element) in enumerate(members):
            inputs, module = element if _is_pair(element) else ("", element)
            if isinstance(module, type) or not callable(module) or not _is_nested_str(inputs):
                raise ValueError(
                    f"{name}: member {key or index} must be a module or (nested str, module), "
                    f"got {element!r}"
                    + (" (a class: add '()')" if isinstance(module, type) else "")
                )
            self_inputs.append(inputs)
            modules.append(module)
        if not modules:
            raise ValueError(f"{name}: no members")
        if not _is_nested_str(output):
            raise ValueError(f"{name}: output must be a nest of names, got {output!r}")
        if input_tensor_spec is None and not self_inputs[0]:
            input_tensor_spec = get_input_tensor_spec(modules[0])
        if input_tensor_spec is None:
            raise ValueError(f"{name}: give input_tensor_spec (the first member does not say)")
        states = [m.state_spec if isinstance(m, Network) else () for m in modules]
        super().__init__(input_tensor_spec, _gathered_state_spec(states), name)
        self._members = modules
        self._inputs = self_inputs
        self._outputs = [key for key, _ in members]
        self._output = output
        self._is_network = [isinstance(m, Network) for m in modules]
        self._modules_list = nn.ModuleList(m for m in modules if isinstance(m, nn.Module))
        plain = not any(self_inputs) and not any(self._outputs) and not output
        # a plain, stateless chain: (member, is a Network, is a module) for a tight loop
        self._chain = None
        if plain and self._state_spec == ():
            self._chain = tuple(
                (m, isinstance(m, Network), isinstance(m, nn.Module)) for m in modules
            )

    def forward(self, inputs, state=()):
        if self._chain is not None:
            return _run_chain(self._chain, inputs), state
        x, results = inputs, {"input": inputs}
        stateful = self._state_spec != ()
        new_state = [()] * len(self._members) if stateful else state
        for i, module in enumerate(self._members):
            if self._inputs[i]:
                x = get_nested_field(results, self._inputs[i])
            if self._is_network[i]:
                x, s = module(x, state[i] if stateful else ())
                if stateful:
                    new_state[i] = s
            else:
                x = module(x)
            if self._outputs[i]:
                results[self._outputs[i]] = x
        if self._output:
            x = get_nested_field(results, self._output)
        return x, new_state

    def __getitem__(self, i):
        return self._members[i]

    def __len__(self) -> int:
        return len(self._members)

    def make_parallel(self, n: int) -> _Sequential:
        """The chain of the members' parallel forms, on ``[B, n, ...]``."""
        unnamed, named = [], {}
        for module, inputs, key in zip(self._members, self._inputs, self._outputs):
            member = (inputs, _parallel_member(module, n))
            if key:
                named[key] = member
            else:
                unnamed.append(member)
        spec = make_parallel_spec(self._input_tensor_spec, n)
        return _Sequential(unnamed, named, self._output, spec, f"parallel_{self._name}")


def _run_chain(chain, x):
    """``x`` through the members in turn; a module that no hook watches is run by its
    ``forward`` (what ``nn.Module.__call__`` would do, without its overhead, a good part of
    a small layer's time)."""
    for member, is_network, is_module in chain:
        if is_network:
            x = member(x)[0]
        elif is_module and not is_hooked(member):
            x = member.forward(x)
        else:
            x = member(x)
    return x


def _is_pair(element) -> bool:
    return (
        isinstance(element, tuple)
        and not nest.is_namedtuple(element)
        and len(element) == 2
        and callable(element[1])
        and _is_nested_str(element[0])
    )


class Parallel(Network):
    """A nest of networks applied to the matching nest of inputs: ``Parallel((f, g))`` maps
    ``(x0, x1)`` to ``(f(x0), g(x1))``, and the states alike.

    Args:
        modules: a nest of ``Network``s or modules (a non-network needs its spec given).
        input_tensor_spec: the nest of input specs; inferred from the members by default.
        name: name of the network.
    """

    def __init__(self, modules, input_tensor_spec=None, name: str = "Parallel"):
        if input_tensor_spec is None:
            input_tensor_spec = nest.map_structure(get_input_tensor_spec, modules)
            if any(s is None for s in nest.flatten(input_tensor_spec)):
                raise ValueError(f"{name}: give input_tensor_spec (a member does not say)")
        networks = nest.map_structure_up_to(modules, wrap_as_network, modules, input_tensor_spec)
        states = nest.map_structure(lambda net: net.state_spec, networks)
        super().__init__(input_tensor_spec, _gathered_state_spec(states), name)
        self._networks = networks
        self._nets = make_nested_module(networks)

    @property
    def networks(self):
        return self._networks

    def forward(self, inputs, state=()):
        flat_inputs = nest.flatten_up_to(self._networks, inputs)
        return _run_members(self._networks, flat_inputs, state, self._state_spec == ())

    def make_parallel(self, n: int) -> Parallel:
        networks = nest.map_structure(lambda net: _parallel_member(net, n), self._networks)
        spec = make_parallel_spec(self._input_tensor_spec, n)
        return Parallel(networks, spec, f"parallel_{self._name}")


def _run_members(networks, flat_inputs, state, stateless: bool):
    """``(outputs, states)`` of the nest ``networks``, member ``i`` on ``flat_inputs[i]``
    (and its part of ``state``), both nests of ``networks``' structure (``state`` returned as
    is when no member has one)."""
    flat_nets = nest.flatten(networks)
    if stateless:
        outs = [net(x)[0] for net, x in zip(flat_nets, flat_inputs)]
        return nest.pack_sequence_as(networks, outs), state
    flat_states = nest.flatten_up_to(networks, state)
    pairs = [net(x, s) for net, x, s in zip(flat_nets, flat_inputs, flat_states)]
    return (
        nest.pack_sequence_as(networks, [o for o, _ in pairs]),
        nest.pack_sequence_as(networks, [s for _, s in pairs]),
    )


def Branch(*modules, input_tensor_spec=None, name="Branch", **named_modules):
    """Several networks on one input: ``Branch(f, g)`` (or ``Branch((f, g))``) maps ``x`` to
    ``(f(x), g(x))``; ``Branch(a=f, b=g)`` to ``dict(a=f(x), b=g(x))``.

    Args:
        modules: the members (or one nest of them).
        input_tensor_spec: the input's spec; inferred from the members by default (they must
            agree).
        name: name of the network.
        named_modules: members by name (instead of ``modules``).
    """
    if modules and named_modules:
        raise ValueError(f"{name}: give members by position or by name, not both")
    if len(modules) == 1:
        modules = modules[0]
    return _Branch(modules or named_modules, input_tensor_spec, name)


class _Branch(Network):
    def __init__(self, modules, input_tensor_spec=None, name: str = "Branch"):
        if input_tensor_spec is None:
            specs = [s for s in map(get_input_tensor_spec, nest.flatten(modules)) if s is not None]
            if not specs:
                raise ValueError(f"{name}: give input_tensor_spec (no member says)")
            if any(s != specs[0] for s in specs):
                raise ValueError(f"{name}: the members' input specs differ: {specs}")
            input_tensor_spec = specs[0]
        networks = nest.map_structure(lambda m: wrap_as_network(m, input_tensor_spec), modules)
        states = nest.map_structure(lambda net: net.state_spec, networks)
        super().__init__(input_tensor_spec, _gathered_state_spec(states), name)
        self._networks = networks
        self._flat = nest.flatten(networks)
        self._nets = make_nested_module(networks)

    @property
    def networks(self):
        return self._networks

    def forward(self, inputs, state=()):
        flat_inputs = [inputs] * len(self._flat)
        return _run_members(self._networks, flat_inputs, state, self._state_spec == ())

    def make_parallel(self, n: int) -> _Branch:
        networks = nest.map_structure(lambda net: _parallel_member(net, n), self._networks)
        spec = make_parallel_spec(self._input_tensor_spec, n)
        return _Branch(networks, spec, f"parallel_{self._name}")


class Echo(Network):
    """A block whose second input is its own second output of the step before.

    ``block`` takes ``(x, echo)`` (or ``dict(input=x, echo=echo)``) and returns
    ``(y, echo')`` (or ``dict(output=y, echo=echo')``); ``Echo(block)`` takes ``x``, returns
    ``y``, and carries ``echo'`` in its state (with the block's own state): zeros at the
    start of an episode, as every state.

    Args:
        block: a ``Network`` with such inputs and outputs (the echo's specs equal).
        input_tensor_spec: if given, must be the spec of ``x``.
    """

    def __init__(self, block: Network, input_tensor_spec=None, name: str = "Echo"):
        if not isinstance(block, Network):
            raise ValueError(f"Echo: block must be a Network, got {type(block).__name__}")
        in_spec, out_spec = block.input_tensor_spec, block.output_spec
        self._tuple_input = _is_tuple_pair(in_spec)
        if not (self._tuple_input or _is_dict_pair(in_spec, "input")):
            raise ValueError(
                f"Echo: the block's input must be (x, echo) or dict(input, echo): {in_spec}"
            )
        self._tuple_output = _is_tuple_pair(out_spec)
        if not (self._tuple_output or _is_dict_pair(out_spec, "output")):
            raise ValueError(
                f"Echo: the block's output must be (y, echo) or dict(output, echo): {out_spec}"
            )
        real_spec, echo_in = in_spec if self._tuple_input else (in_spec["input"], in_spec["echo"])
        echo_out = out_spec[1] if self._tuple_output else out_spec["echo"]
        if echo_in != echo_out:
            raise ValueError(
                f"Echo: the echo's input spec {echo_in} differs from its output's {echo_out}"
            )
        if input_tensor_spec is not None and input_tensor_spec != real_spec:
            raise ValueError(
                f"Echo: input_tensor_spec {input_tensor_spec} is not the block's {real_spec}"
            )
        super().__init__(real_spec, (block.state_spec, echo_in), name)
        self._block = block

    def forward(self, inputs, state):
        block_state, echo = state
        block_input = (inputs, echo) if self._tuple_input else dict(input=inputs, echo=echo)
        out, block_state = self._block(block_input, block_state)
        y, echo = out if self._tuple_output else (out["output"], out["echo"])
        return y, (block_state, echo)

    def make_parallel(self, n: int) -> Echo:
        spec = make_parallel_spec(self._input_tensor_spec, n)
        return Echo(_parallel_member(self._block, n), spec, f"parallel_{self._name}")


def _is_tuple_pair(spec) -> bool:
    return isinstance(spec, tuple) and not nest.is_namedtuple(spec) and len(spec) == 2


def _is_dict_pair(spec, key: str) -> bool:
    return isinstance(spec, dict) and set(spec) == {key, "echo"}


class Residue(Network):
    """``activation(x + block(x))``, the block's state carried.

    Args:
        block: a network or module whose output has the input's shape.
        input_tensor_spec: the input's spec, if ``block`` does not say.
        activation: applied to the sum (``torch.relu_`` by default).
        name: name of the network.
    """

    def __init__(
        self,
        block,
        input_tensor_spec=None,
        activation: Callable = torch.relu_,
        name: str = "Residue",
    ):
        block = wrap_as_network(block, input_tensor_spec)
        super().__init__(block.input_tensor_spec, block.state_spec, name)
        self._block = block
        self._activation = activation

    def forward(self, inputs, state=()):
        y, state = self._block(inputs, state)
        return self._activation(inputs + y), state
