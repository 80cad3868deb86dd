"""Export a trained deterministic policy as a standalone file: ONNX, TorchScript or
``torch.export``.

The exported function is ``predict_step`` (the policy used for evaluation and ``play``)
behind the data transformers, with the batch size ``B`` free. A stateless policy maps a
batch of raw observations (as the environment gives them) to actions:

    observation [B, ...] -> data transformers -> predict_step -> action [B, ...]

A policy with a state (a recurrent ``predict_step``, ``FrameStacker``, a ``predict_step``
reading the previous action) takes the state as inputs and returns the next one, and
resets it where ``step_type`` is FIRST inside the function (``alf.export.stateful``):

    (observation leaves..., step_type [B], state.<path>...)
        -> (action leaves..., new_state.<path>...)

The data transformers that change the observation are folded in with their statistics
as constants: ``ObservationNormalizer`` (its running mean and variance as of the
checkpoint), ``ImageScaleTransformer`` and ``FrameStacker`` (its frames in the state); the
ones that do not touch the observation at prediction (``UntransformedTimeStep``, the reward
transformers, ``HindsightExperienceTransformer``) are left out. Everything else is refused
with one line (``ExportError``):

* a data transformer this module does not know to be a function of the observation and
  the exported state;
* a random ``predict_step`` (``epsilon_greedy`` > 0; the greedy policy is exported with
  ``--conf_param TrainerConfig.epsilon_greedy=0.0``).

An observation that is a nest (a dict of tensors) becomes one input per leaf, named
``observation.<path>`` in ``nest.flatten`` order (``observation`` for a single tensor);
an action nest one output per leaf, ``action`` / ``action.<path>``. The file embeds its
``metadata`` (the names, dtypes and shapes of the inputs and outputs, by role), which
``alf.export.runtime.ExportedPolicy`` reads to run it.

While ``export`` runs, the exporting libraries' own chatter (their log records below
ERROR, e.g. ``torchvision is not installed``, and the warnings they issue, e.g. a
``FutureWarning`` of torch's pytree) is silenced (``quiet_exporters``); alf's messages and
every error still show.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings

import torch
import torch.nn as nn

import alf.nest as nest
from alf.data_structures import StepType
from alf.data_transformers import (
    FrameStacker,
    HindsightExperienceTransformer,
    IdentityDataTransformer,
    ImageScaleTransformer,
    ObservationNormalizer,
    RewardClipping,
    RewardNormalizer,
    RewardScaling,
    UntransformedTimeStep,
)
from alf.export.export_formats import (  # noqa: F401 (re-exported)
    EXTENSIONS,
    FORMATS,
    METADATA_KEY,
    METADATA_VERSION,
    ExportError,
    format_of,
)
from alf.export.policy_inputs import (  # noqa: F401 (re-exported)
    NamedSpecs,
    action_difference,
    leaf_names,
    sample_observations,
    time_step_of,
)
from alf.export.runtime import ExportedPolicy as LoadedPolicy  # noqa: F401 (re-exported)
from alf.export.stateful import (
    STEP_TYPE_SPEC,
    StateLayout,
    compare_sequences,
    example_state,
    uses_prev_action,
)

#: the loggers of the libraries an export runs (their records below ERROR are silenced)
EXPORTER_LOGGERS = ("torch", "onnx", "onnx_ir", "onnxscript", "onnxruntime")

#: folded into the exported function (pure functions of the observation, and
#: ``FrameStacker``, whose frames are part of the exported state)
OBSERVATION_TRANSFORMERS = (ObservationNormalizer, ImageScaleTransformer)
EXPORTED_TRANSFORMERS = OBSERVATION_TRANSFORMERS + (FrameStacker,)
#: left out: they do not change the observation the policy sees at prediction
IGNORED_TRANSFORMERS = (
    IdentityDataTransformer,
    UntransformedTimeStep,
    RewardClipping,
    RewardScaling,
    RewardNormalizer,
    HindsightExperienceTransformer,
)


def observation_transformers(algorithm) -> list:
    """The members of ``algorithm``'s data transformer folded into an export (in order).

    Raises:
        ExportError: a member that cannot be exported.
    """
    folded = []
    for member in algorithm.data_transformer.members:
        name = type(member).__name__
        if isinstance(member, EXPORTED_TRANSFORMERS):
            folded.append(member)
        elif not isinstance(member, IGNORED_TRANSFORMERS):
            raise ExportError(
                f"cannot export a policy with the data transformer {name}: it is not known to "
                "be a function of the observation and the exported state (supported: "
                + ", ".join(t.__name__ for t in EXPORTED_TRANSFORMERS + IGNORED_TRANSFORMERS)
                + ")"
            )
    return folded


def check_exportable(algorithm) -> list:
    """Raise ``ExportError`` unless ``algorithm``'s ``predict_step`` can be exported; return
    the data transformers to fold in."""
    name = getattr(algorithm, "name", type(algorithm).__name__)
    for attr in ("_epsilon_greedy", "_predict_epsilon"):
        epsilon = getattr(algorithm, attr, 0.0) or 0.0
        if epsilon > 0:
            raise ExportError(
                f"cannot export {name}: its predict_step takes a random action with "
                f"probability epsilon_greedy={epsilon}; export the greedy policy with "
                "--conf_param TrainerConfig.epsilon_greedy=0.0"
            )
    return observation_transformers(algorithm)


class ExportablePolicy(nn.Module):
    """The exported function (see the module doc): stateless,
    ``forward(*observation leaves) -> action leaf or tuple of leaves``; stateful,
    ``forward(*observation leaves, step_type, *state leaves) -> (*action leaves,
    *new state leaves)`` (``alf.export.stateful``).

    Args:
        algorithm: the ``RLAlgorithm`` (weights loaded); put in eval mode.
        observation_spec: the raw observation spec (the environment's).
        prev_action: whether the state carries the previous action (None: when
            ``predict_step`` reads it, ``stateful.uses_prev_action``).
    """

    def __init__(self, algorithm, observation_spec, prev_action: bool | None = None):
        super().__init__()
        algorithm.eval()
        self._transformers = check_exportable(algorithm)
        self.algorithm = algorithm
        self._observation_spec = observation_spec
        if prev_action is None:
            prev_action = uses_prev_action(algorithm, observation_spec, self._transformers)
        self.state = StateLayout(algorithm, self._transformers, prev_action)
        self.observation_names = leaf_names("observation", observation_spec)
        self.action_names = leaf_names("action", algorithm.action_spec)
        self.input_specs = nest.flatten(observation_spec)
        self.input_names = list(self.observation_names)
        self.output_names = list(self.action_names)
        self.output_specs = nest.flatten(algorithm.action_spec)
        if self.stateful:
            self.input_specs += [STEP_TYPE_SPEC] + self.state.specs
            self.input_names += ["step_type"] + self.state.names
            self.output_specs += self.state.specs
            self.output_names += ["new_" + name for name in self.state.names]

    @property
    def stateful(self) -> bool:
        """Whether the exported function carries a state (``alf.export.stateful``)."""
        return self.state.stateful

    @property
    def observation_specs(self) -> NamedSpecs:
        """The observation leaves' specs, named (``observation_names``)."""
        return NamedSpecs(nest.flatten(self._observation_spec), self.observation_names)

    def forward(self, *inputs):
        num = len(self.observation_names)
        observation = nest.pack_sequence_as(self._observation_spec, list(inputs[:num]))
        batch = inputs[0].shape[0]
        if self.stateful:
            step_type, state = inputs[num], self.state.pack(inputs[num + 1 :])
        else:
            step_type, state = torch.full((batch,), StepType.MID, dtype=torch.int32), {}
        first = step_type == StepType.FIRST
        new_state = {}
        time_step = time_step_of(observation, step_type, self.state.prev_action(state, first))
        time_step = self.state.transform(time_step, state, new_state)
        policy_state = self.state.policy_state(state, first, batch)
        step = self.algorithm.predict_step(time_step, policy_state)
        actions = nest.flatten(step.output)
        if not self.stateful:
            return actions[0] if len(actions) == 1 else tuple(actions)
        if "policy" in self.state.spec:
            new_state["policy"] = step.state
            if len(nest.flatten(step.state)) != len(nest.flatten(self.state.spec["policy"])):
                raise ExportError(
                    "cannot export: predict_step returns a state of another structure than "
                    f"its predict_state_spec ({self.algorithm.predict_state_spec})"
                )
        if self.state.uses_prev_action:
            new_state["prev_action"] = step.output
        new_state = {key: new_state[key] for key in self.state.spec}
        return tuple(actions + self.state.flatten(new_state))

    def example_inputs(self, batch_size: int = 3, seed: int = 0) -> tuple:
        """Inputs to trace with: random observations, mixed step types, random state."""
        inputs = sample_observations(self.observation_specs, batch_size, seed)
        if self.stateful:
            step_type = torch.arange(batch_size, dtype=torch.int32) % 3
            inputs += [step_type] + example_state(self.state, batch_size, seed)
        return tuple(inputs)

    def metadata(self) -> dict:
        """What ``alf.export.runtime`` needs to run the file: names, dtypes and shapes
        (without the batch dim) of the inputs and outputs, by role."""
        return {
            "format_version": METADATA_VERSION,
            "algorithm": getattr(self.algorithm, "name", type(self.algorithm).__name__),
            "stateful": self.stateful,
            "inputs": _describe(self.input_names, self.input_specs),
            "outputs": _describe(self.output_names, self.output_specs),
            "observation": self.observation_names,
            "step_type": "step_type" if self.stateful else None,
            "state": self.state.names,
            "action": self.action_names,
        }


def _describe(names, specs) -> list[dict]:
    return [
        {"name": n, "dtype": str(s.dtype).replace("torch.", ""), "shape": list(s.shape)}
        for n, s in zip(names, specs)
    ]


@contextlib.contextmanager
def quiet_exporters():
    """For the duration of the block: the ``EXPORTER_LOGGERS`` log only ERROR and above,
    and warnings are ignored unless an ``alf`` module issues them (but for the tracer's
    ``TracerWarning`` about alf's code: the exported file is checked against the policy
    anyway); both are restored after."""
    loggers = [logging.getLogger(name) for name in EXPORTER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.filterwarnings("default", module=r"alf(\.|$)")
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def export(policy: ExportablePolicy, path: str, fmt: str, example_batch: int = 3) -> None:
    """Write ``policy`` to ``path`` in the format ``fmt`` (``FORMATS``), batch size free,
    with its ``metadata`` embedded (``alf.export.runtime`` reads it; the exporters' own
    chatter silenced: ``quiet_exporters``)."""
    example = policy.example_inputs(example_batch)
    extra = {METADATA_KEY: json.dumps(policy.metadata())}
    with torch.no_grad(), quiet_exporters():
        if fmt == "torchscript":
            traced = torch.jit.trace(policy, example, check_trace=False)
            torch.jit.save(traced, path, _extra_files=extra)
            return
        program = _torch_export(policy, example)
        if fmt == "torch_export":
            torch.export.save(program, path, extra_files=extra)
            return
        _onnx_export(program, policy, path, extra)


def _torch_export(policy: ExportablePolicy, example: tuple):
    batch = torch.export.Dim("batch", min=1)
    dynamic = ({0: batch},) * len(example)
    try:
        return torch.export.export(policy, example, dynamic_shapes=(dynamic,), strict=False)
    except Exception as e:
        text = (str(e).strip() or type(e).__name__).splitlines()[0]
        raise ExportError(f"torch.export could not trace the policy: {text}") from e


def _onnx_export(program, policy: ExportablePolicy, path: str, extra: dict) -> None:
    try:
        import onnx
        import onnxscript  # noqa: F401
    except ImportError as e:
        raise ExportError(
            f"exporting ONNX needs {e.name}: pip install 'alf[onnx]' (or use --format "
            "torchscript / torch_export)"
        ) from e
    try:
        onnx_program = torch.onnx.export(
            program,
            f=None,
            input_names=policy.input_names,
            output_names=policy.output_names,
            dynamo=True,
            external_data=False,
            verbose=False,
        )
        model = onnx_program.model_proto
        onnx.helper.set_model_props(model, extra)
        onnx.save(model, path)
    except Exception as e:
        text = (str(e).strip() or type(e).__name__).splitlines()[0]
        raise ExportError(f"the ONNX exporter failed: {text}") from e


def compare(policy: ExportablePolicy, loaded, observations: list) -> float:
    """The largest difference between the actions of ``policy`` and of the exported file
    ``loaded`` (an ``ExportedPolicy``) on the observation leaves ``observations`` ``[N,
    ...]`` (``inf`` when shapes, dtype kinds or integer actions differ); a stateful policy
    is stepped through random episodes of them (``stateful.compare_sequences``)."""
    if policy.stateful:
        return compare_sequences(policy, loaded, observations)
    with torch.no_grad():
        expected = policy(*observations)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    return action_difference(expected, loaded(*(o.numpy() for o in observations)))
