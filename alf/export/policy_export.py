"""Export a trained deterministic policy as a standalone file: ONNX, TorchScript or
``torch.export``.

The exported function maps a batch of raw observations (as the environment gives them)
to the action ``predict_step`` takes (the policy used for evaluation and ``play``):

    observation [B, ...] -> observation data transformers -> predict_step -> action [B, ...]

with the batch size ``B`` free. The data transformers that change the observation and
are pure functions of it are folded in with their statistics as constants:
``ObservationNormalizer`` (its running mean and variance as of the checkpoint) and
``ImageScaleTransformer``; the ones that do not touch the observation at prediction
(``UntransformedTimeStep``, the reward transformers, ``HindsightExperienceTransformer``)
are left out. Everything else is refused with one line (``ExportError``):

* a recurrent policy (a non-empty ``predict_state_spec``: LSTM / GRU networks);
* ``FrameStacker`` (it keeps the last frames: a state across steps);
* a data transformer this module does not know to be a pure function of the observation;
* a random ``predict_step`` (``epsilon_greedy`` > 0; the greedy policy is exported with
  ``--conf_param TrainerConfig.epsilon_greedy=0.0``).

An observation that is a nest (a dict of tensors) becomes one input per leaf, named
``observation.<path>`` in ``nest.flatten`` order (``observation`` for a single tensor);
an action nest one output per leaf, ``action`` / ``action.<path>``.

While ``export`` runs, the exporting libraries' own chatter (their log records below
ERROR, e.g. ``torchvision is not installed``, and the warnings they issue, e.g. a
``FutureWarning`` of torch's pytree) is silenced (``quiet_exporters``); alf's messages and
every error still show.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

import numpy as np
import torch
import torch.nn as nn

import alf.nest as nest
from alf.data_structures import StepType, TimeStep
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
    ExportError,
    format_of,
)
from alf.tensor_specs import BoundedTensorSpec

#: the loggers of the libraries an export runs (their records below ERROR are silenced)
EXPORTER_LOGGERS = ("torch", "onnx", "onnx_ir", "onnxscript", "onnxruntime")

#: folded into the exported function (pure functions of the observation)
OBSERVATION_TRANSFORMERS = (ObservationNormalizer, ImageScaleTransformer)
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
        if isinstance(member, FrameStacker):
            raise ExportError(
                "cannot export a policy with FrameStacker: it keeps the last frames (a state "
                "across steps); stack the frames in the environment instead"
            )
        if isinstance(member, OBSERVATION_TRANSFORMERS):
            folded.append(member)
        elif not isinstance(member, IGNORED_TRANSFORMERS):
            raise ExportError(
                f"cannot export a policy with the data transformer {name}: it is not known to "
                "be a pure function of the observation (supported: "
                + ", ".join(t.__name__ for t in OBSERVATION_TRANSFORMERS + IGNORED_TRANSFORMERS)
                + ")"
            )
    return folded


def check_exportable(algorithm) -> list:
    """Raise ``ExportError`` unless ``algorithm``'s ``predict_step`` can be exported; return
    the observation transformers to fold in."""
    name = getattr(algorithm, "name", type(algorithm).__name__)
    if algorithm.is_stateful("predict"):
        raise ExportError(
            f"cannot export {name}: its predict_step keeps a recurrent state (an RNN "
            "network); only stateless policies can be exported"
        )
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
    """``forward(*observation leaves) -> action leaf or tuple of leaves`` (see the module doc).

    Args:
        algorithm: the ``RLAlgorithm`` (weights loaded); put in eval mode.
        observation_spec: the raw observation spec (the environment's).
    """

    def __init__(self, algorithm, observation_spec):
        super().__init__()
        algorithm.eval()
        self._transformers = check_exportable(algorithm)
        self.algorithm = algorithm
        self._observation_spec = observation_spec
        self.input_specs = nest.flatten(observation_spec)
        self.input_names = _names("observation", observation_spec)
        self.output_names = _names("action", algorithm.action_spec)
        self.output_specs = nest.flatten(algorithm.action_spec)

    def forward(self, *observations):
        observation = nest.pack_sequence_as(self._observation_spec, list(observations))
        batch = observations[0].shape[0]
        step_type = torch.full((batch,), StepType.MID, dtype=torch.int32)
        time_step = TimeStep(
            step_type=step_type,
            reward=torch.zeros((batch,), dtype=torch.float32),
            discount=torch.ones((batch,), dtype=torch.float32),
            observation=observation,
        )
        for transformer in self._transformers:
            time_step, _ = transformer.transform_timestep(time_step, ())
        state = self.algorithm.get_initial_predict_state(batch)
        actions = nest.flatten(self.algorithm.predict_step(time_step, state).output)
        return actions[0] if len(actions) == 1 else tuple(actions)


def _names(prefix: str, spec) -> list[str]:
    if not nest.is_nested(spec):
        return [prefix]
    return [f"{prefix}.{path}" for path, _ in nest.flatten_with_path(spec)]


def sample_observations(specs: list, batch_size: int, seed: int = 0) -> list[torch.Tensor]:
    """Random observation leaves ``[batch_size, ...]`` for ``specs``: uniform within finite
    bounds up to 1e4 wide, else standard normal clipped to the bounds; integers uniform."""
    generator = torch.Generator().manual_seed(seed)
    result = []
    for spec in specs:
        if not spec.dtype.is_floating_point:
            result.append(spec.sample((batch_size,), generator=generator))
            continue
        x = torch.randn((batch_size, *spec.shape), dtype=torch.float64, generator=generator)
        if isinstance(spec, BoundedTensorSpec):
            low = torch.as_tensor(np.broadcast_to(spec.minimum, tuple(spec.shape)).copy())
            high = torch.as_tensor(np.broadcast_to(spec.maximum, tuple(spec.shape)).copy())
            narrow = torch.isfinite(low) & torch.isfinite(high) & (high - low <= 1e4)
            u = torch.rand(x.shape, dtype=torch.float64, generator=generator)
            uniform = low.double() + u * (high - low).double().where(narrow, torch.zeros(()))
            x = torch.where(narrow, uniform, x.clamp(low.double(), high.double()))
        result.append(x.to(spec.dtype))
    return result


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
    """Write ``policy`` to ``path`` in the format ``fmt`` (``FORMATS``), batch size free
    (the exporters' own chatter silenced: ``quiet_exporters``)."""
    example = tuple(sample_observations(policy.input_specs, example_batch))
    with torch.no_grad(), quiet_exporters():
        if fmt == "torchscript":
            traced = torch.jit.trace(policy, example, check_trace=False)
            torch.jit.save(traced, path)
            return
        program = _torch_export(policy, example)
        if fmt == "torch_export":
            torch.export.save(program, path)
            return
        _onnx_export(program, policy, path)


def _torch_export(policy: ExportablePolicy, example: tuple):
    batch = torch.export.Dim("batch", min=1)
    dynamic = ({0: batch},) * len(example)
    try:
        return torch.export.export(policy, example, dynamic_shapes=(dynamic,), strict=False)
    except Exception as e:
        text = (str(e).strip() or type(e).__name__).splitlines()[0]
        raise ExportError(f"torch.export could not trace the policy: {text}") from e


def _onnx_export(program, policy: ExportablePolicy, path: str) -> None:
    try:
        import onnx  # noqa: F401
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
        onnx_program.save(path, external_data=False)
    except Exception as e:
        text = (str(e).strip() or type(e).__name__).splitlines()[0]
        raise ExportError(f"the ONNX exporter failed: {text}") from e


class LoadedPolicy:
    """An exported file loaded back: ``policy(*observation leaves) -> [action leaves]``
    (numpy arrays in, numpy arrays out), with onnxruntime, TorchScript or ``torch.export``.

    Args:
        path: the exported file.
        fmt: its format (None: from the extension).
    """

    def __init__(self, path: str, fmt: str | None = None):
        self.format = format_of(path, fmt)
        if self.format == "onnx":
            try:
                import onnxruntime
            except ImportError as e:
                raise ExportError(
                    "running an ONNX policy needs onnxruntime: pip install 'alf[onnx]'"
                ) from e
            self._session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            self._inputs = [i.name for i in self._session.get_inputs()]
        elif self.format == "torchscript":
            self._module = torch.jit.load(path)
        else:
            self._module = torch.export.load(path).module()

    def __call__(self, *observations) -> list[np.ndarray]:
        if self.format == "onnx":
            feed = {name: np.asarray(x) for name, x in zip(self._inputs, observations)}
            return list(self._session.run(None, feed))
        with torch.no_grad():
            out = self._module(*(torch.as_tensor(np.asarray(x)) for x in observations))
        outs = out if isinstance(out, (tuple, list)) else [out]
        return [o.numpy() for o in outs]


def compare(policy: ExportablePolicy, loaded: LoadedPolicy, observations: list) -> float:
    """The largest difference between the actions of ``policy`` and of the exported file
    ``loaded`` on the observation leaves ``observations`` (``inf`` when shapes, dtypes
    kinds or integer actions differ)."""
    with torch.no_grad():
        expected = policy(*observations)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    got = loaded(*(o.numpy() for o in observations))
    worst = 0.0
    for e, g in zip(expected, got):
        e = e.numpy()
        if e.shape != g.shape or e.dtype.kind != g.dtype.kind:
            return float("inf")
        if e.dtype.kind in "iub":
            if not np.array_equal(e, g):
                return float("inf")
            continue
        worst = max(worst, float(np.max(np.abs(e.astype(np.float64) - g), initial=0.0)))
    return worst
