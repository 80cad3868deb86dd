"""The state an exported policy carries from one step to the next (``alf.export``).

A policy is stateful when its ``predict_step`` keeps a recurrent state (a non-empty
``predict_state_spec``: LSTM / GRU networks), when a ``FrameStacker`` keeps the last frames,
or when ``predict_step`` reads the previous action (``TimeStep.prev_action``). Its exported
function then takes the state as inputs and returns the next state as outputs:

    (observation leaves..., step_type [B], state leaves...)
        -> (action leaves..., new state leaves...)

The state is a dict of up to three parts, each input named ``state.<path>`` in
``nest.flatten`` order:

* ``policy``: the ``predict_step`` state (e.g. ``state.policy.actor.0.0`` and
  ``state.policy.actor.0.1``, the LSTM's :math:`h` and :math:`c`);
* ``frame_stack``: each ``FrameStacker``'s ``stack_size - 1`` previous frames
  ``[B, K - 1, *frame]`` (``frame_stack_<i>`` when there are several; a dict by field when
  the stacker stacks named fields);
* ``prev_action``: the action taken at the previous step.

The reset at an episode's start is inside the exported function, as ``policy_step`` in
``alf/learners/acting.py`` does it: where ``step_type == FIRST`` the policy state is
replaced by the initial state, the frame stack by copies of the FIRST frame (what
``FrameStacker`` does) and the previous action by zeros. So a runtime loop only has to
feed back the state it was given and pass the step types; the state it starts with does
not matter when the first step is FIRST (zeros, ``zeros``).
"""

from __future__ import annotations

import torch

import alf.nest as nest
from alf.data_structures import StepType
from alf.data_transformers import FrameStacker
from alf.export.export_formats import ExportError
from alf.export.policy_inputs import (
    action_difference,
    observation_leaf_specs,
    sample_observations,
    time_step_of,
)
from alf.tensor_specs import TensorSpec
from alf.utils.torch_utils import reset_state_if_necessary

#: the spec of the ``step_type`` input of a stateful export
STEP_TYPE_SPEC = TensorSpec((), torch.int32)


def uses_prev_action(algorithm, observation_spec, transformers, seed: int = 0) -> bool:
    """Whether ``algorithm.predict_step`` reads ``TimeStep.prev_action``: its output or state
    differs between two random previous actions on the same (random, MID) steps."""
    batch = 32
    observation = nest.pack_sequence_as(
        observation_spec, sample_observations(observation_leaf_specs(observation_spec), batch, seed)
    )
    step_type = torch.full((batch,), int(StepType.MID), dtype=torch.int32)
    results = []
    for k in range(2):
        actions = sample_observations(nest.flatten(algorithm.action_spec), batch, seed + 1 + k)
        prev_action = nest.pack_sequence_as(algorithm.action_spec, actions)
        time_step = time_step_of(observation, step_type, prev_action)
        for transformer in transformers:
            state = _zeros(transformer.state_spec, batch)
            time_step, _ = transformer.transform_timestep(time_step, state)
        try:
            with torch.no_grad():
                state = algorithm.get_initial_predict_state(batch)
                step = algorithm.predict_step(time_step, state)
        except Exception as e:  # any failure of the policy's own code: one line
            text = (str(e).strip() or type(e).__name__).splitlines()[0]
            raise ExportError(f"predict_step fails on random observations: {text}") from e
        results.append(nest.flatten(step.output) + nest.flatten(step.state))
    return any(not torch.equal(a, b) for a, b in zip(*results))


def _zeros(spec, batch: int):
    return nest.map_structure(lambda s: torch.zeros((batch, *s.shape), dtype=s.dtype), spec)


class StateLayout:
    """The state parts of an exported policy, their names and specs (see the module doc).

    Args:
        algorithm: the ``RLAlgorithm``.
        transformers: the data transformers folded into the export, in order.
        prev_action: whether the state holds the previous action.
    """

    def __init__(self, algorithm, transformers: list, prev_action: bool):
        self._algorithm = algorithm
        self._transformers = transformers
        spec = {}
        if nest.flatten(algorithm.predict_state_spec):
            spec["policy"] = algorithm.predict_state_spec
        stackers = [i for i, t in enumerate(transformers) if isinstance(t, FrameStacker)]
        self._stack_keys = {}
        for n, i in enumerate(stackers):
            key = "frame_stack" if len(stackers) == 1 else f"frame_stack_{n}"
            self._stack_keys[i] = key
            spec[key] = self._by_field(transformers[i], transformers[i].state_spec)
        if prev_action:
            spec["prev_action"] = algorithm.action_spec
        self.spec = spec
        self.specs = nest.flatten(spec)
        self.names = [f"state.{path}" for path, _ in nest.flatten_with_path(spec)]

    @staticmethod
    def _by_field(stacker: FrameStacker, per_field: list):
        fields = stacker._fields
        if fields == [""]:
            return per_field[0]
        return {field: s for field, s in zip(fields, per_field)}

    @staticmethod
    def _per_field(stacker: FrameStacker, by_field) -> list:
        fields = stacker._fields
        if fields == [""]:
            return [by_field]
        return [by_field[field] for field in fields]

    @property
    def stateful(self) -> bool:
        return bool(self.specs)

    @property
    def uses_prev_action(self) -> bool:
        return "prev_action" in self.spec

    def pack(self, leaves) -> dict:
        """The state dict of its flat leaves."""
        return nest.pack_sequence_as(self.spec, list(leaves))

    def flatten(self, state: dict) -> list:
        return nest.flatten(state)

    def zeros(self, batch_size: int) -> list[torch.Tensor]:
        """State leaves of zeros ``[batch_size, ...]`` (any state will do before a FIRST)."""
        return [torch.zeros((batch_size, *s.shape), dtype=s.dtype) for s in self.specs]

    def prev_action(self, state: dict, first: torch.Tensor):
        """The previous action of the step (zeros where ``first``), or ``()``."""
        if not self.uses_prev_action:
            return ()
        return nest.map_structure(
            lambda a: torch.where(_rows(first, a), torch.zeros_like(a), a), state["prev_action"]
        )

    def transform(self, time_step, state: dict, new_state: dict):
        """``time_step`` through the folded transformers; the frame stacks move on in
        ``new_state`` (each ``FrameStacker`` resets its frames at FIRST itself)."""
        for i, transformer in enumerate(self._transformers):
            key = self._stack_keys.get(i)
            if key is None:
                time_step, _ = transformer.transform_timestep(time_step, ())
                continue
            frames = self._per_field(transformer, state[key])
            time_step, frames = transformer.transform_timestep(time_step, frames)
            new_state[key] = self._by_field(transformer, frames)
        return time_step

    def policy_state(self, state: dict, first: torch.Tensor, batch_size: int):
        """The ``predict_step`` state: the input's, reset to the initial state where
        ``first`` (the initial state alone when the policy keeps none)."""
        if "policy" not in self.spec:
            return self._algorithm.get_initial_predict_state(batch_size)
        # the initial state of one row, broadcast (a traced batch size is a tensor)
        initial = nest.map_structure(
            lambda s0, s: s0.to(s.device, s.dtype).expand_as(s),
            self._algorithm.get_initial_predict_state(1),
            state["policy"],
        )
        return reset_state_if_necessary(state["policy"], initial, first)


def _rows(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return mask.reshape((-1,) + (1,) * (x.ndim - 1))


def sample_step_types(num_steps: int, batch_size: int, seed: int = 0) -> torch.Tensor:
    """Step types ``[num_steps, batch_size]`` int32 of random episodes: FIRST at step 0,
    then a row's episode ends (LAST) with probability 0.1 and the next step is FIRST."""
    generator = torch.Generator().manual_seed(seed)
    result = torch.full((num_steps, batch_size), int(StepType.MID), dtype=torch.int32)
    result[0] = int(StepType.FIRST)
    ends = torch.rand((num_steps, batch_size), generator=generator) < 0.1
    for t in range(1, num_steps):
        after_last = result[t - 1] == StepType.LAST
        result[t] = torch.where(after_last, int(StepType.FIRST), result[t])
        result[t] = torch.where(~after_last & ends[t], int(StepType.LAST), result[t])
    return result


def compare_sequences(policy, loaded, observations: list, batch_size: int = 8) -> float:
    """The largest action difference between the stateful ``policy`` (eager) and the exported
    file ``loaded``, each stepped with its own state through random episodes of the
    observation leaves ``observations`` ``[N, ...]`` (``batch_size`` rows of ``N //
    batch_size`` steps; ``inf`` when shapes, dtype kinds or integer actions differ)."""
    batch_size = max(1, min(batch_size, observations[0].shape[0]))
    num_steps = observations[0].shape[0] // batch_size
    rows = [
        o[: num_steps * batch_size].reshape(num_steps, batch_size, *o.shape[1:])
        for o in observations
    ]
    step_types = sample_step_types(num_steps, batch_size, seed=11)
    num_actions = len(policy.output_names) - len(policy.state.names)
    eager_state = policy.state.zeros(batch_size)
    file_state = [s.numpy() for s in eager_state]
    worst = 0.0
    for t in range(num_steps):
        inputs = [r[t] for r in rows] + [step_types[t]]
        with torch.no_grad():
            expected = list(policy(*inputs, *eager_state))
        got = loaded(*(x.numpy() for x in inputs), *file_state)
        eager_state, file_state = expected[num_actions:], got[num_actions:]
        worst = max(worst, action_difference(expected[:num_actions], got[:num_actions]))
        if worst == float("inf"):
            break
    return worst


def example_state(layout: StateLayout, batch_size: int, seed: int = 0) -> list[torch.Tensor]:
    """Random state leaves for tracing (normal floats, zero integers)."""
    generator = torch.Generator().manual_seed(seed)
    result = []
    for spec in layout.specs:
        shape = (batch_size, *spec.shape)
        if spec.dtype.is_floating_point:
            result.append(torch.randn(shape, generator=generator).to(spec.dtype))
        else:
            result.append(torch.zeros(shape, dtype=spec.dtype))
    return result
