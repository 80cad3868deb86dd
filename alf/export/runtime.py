"""Run an exported policy (``alf-export``'s file) outside training: ``ExportedPolicy``.

::

    policy = ExportedPolicy.load("policy.onnx")      # or .pt (TorchScript), .pt2
    state = policy.initial_state(batch_size)
    action, state = policy.step(observation, step_type, state)   # once per env step

``ExportedPolicy`` runs the file with onnxruntime (``.onnx``; ``pip install 'alf[onnx]'``),
TorchScript (``torch.jit.load``) or ``torch.export`` (``torch.export.load``), on numpy
arrays in and out. It reads the metadata the exporter embeds in the file (a JSON text under
``METADATA_KEY``: the ONNX model's metadata properties, the TorchScript archive's extra
files, the ``torch.export`` archive's extra files) naming every input and output with its
dtype and shape and saying which are observation, step type, state and action leaves. A
file written before the metadata existed is a stateless policy with the input names the
file has.

A stateful policy (``alf.export.stateful``) resets its state inside the file where
``step_type`` is FIRST, so ``step`` only feeds back the state it returned; the state of
``initial_state`` (zeros) is any state, replaced at the episode's FIRST step.
``run_episodes`` plays an alf environment to the end of a number of episodes (the
environment resets itself after a LAST step, and the next step is FIRST) and reports each
episode's return and length as ``alf.bin.play`` does.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import torch

import alf.nest as nest
from alf.data_structures import StepType
from alf.export.export_formats import METADATA_KEY, ExportError, format_of


class ExportedPolicy:
    """An exported file loaded back (see the module doc).

    ``policy(*input arrays) -> [output arrays]`` runs the file's function as it is;
    ``step`` and ``run_episodes`` handle the state.

    Args:
        path: the exported file.
        fmt: its format (None: from the extension).
    """

    def __init__(self, path: str, fmt: str | None = None):
        self.format = format_of(path, fmt)
        self.path = path
        text = None
        if self.format == "onnx":
            text = self._load_onnx(path)
        elif self.format == "torchscript":
            files = {METADATA_KEY: ""}
            with warnings.catch_warnings():  # torch deprecates TorchScript; it still runs
                warnings.simplefilter("ignore", DeprecationWarning)
                self._module = torch.jit.load(path, _extra_files=files)
            text = files[METADATA_KEY] or None
        else:
            files = {METADATA_KEY: ""}
            self._module = torch.export.load(path, extra_files=files).module()
            text = files[METADATA_KEY] or None
        self.metadata = json.loads(text) if text else None
        self._set_roles()

    @classmethod
    def load(cls, path: str, fmt: str | None = None) -> ExportedPolicy:
        """The exported file at ``path`` (format from its extension unless ``fmt``)."""
        return cls(path, fmt)

    def _load_onnx(self, path: str):
        try:
            import onnxruntime
        except ImportError as e:
            raise ExportError(
                "running an ONNX policy needs onnxruntime: pip install 'alf[onnx]'"
            ) from e
        self._session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        return self._session.get_modelmeta().custom_metadata_map.get(METADATA_KEY)

    def _set_roles(self) -> None:
        meta = self.metadata
        if meta is None:  # a stateless file from before the metadata
            self.observation_names = list(getattr(self, "_inputs", ["observation"]))
            self.state_names, self.state_specs, self.stateful = [], [], False
            self.action_names = None
            return
        self.stateful = bool(meta["stateful"])
        self.observation_names = list(meta["observation"])
        self.action_names = list(meta["action"])
        self.state_names = list(meta["state"])
        by_name = {d["name"]: d for d in meta["inputs"]}
        self.state_specs = [
            (tuple(by_name[n]["shape"]), by_name[n]["dtype"]) for n in self.state_names
        ]
        self.observation_dtypes = [by_name[n]["dtype"] for n in self.observation_names]

    def __call__(self, *inputs) -> list[np.ndarray]:
        """The file's function on numpy arrays (inputs in the file's order)."""
        if self.format == "onnx":
            feed = {name: np.asarray(x) for name, x in zip(self._inputs, inputs)}
            return list(self._session.run(None, feed))
        with torch.no_grad():
            out = self._module(*(torch.as_tensor(np.asarray(x)) for x in inputs))
        outs = out if isinstance(out, (tuple, list)) else [out]
        return [o.numpy() for o in outs]

    def initial_state(self, batch_size: int) -> list[np.ndarray]:
        """The state leaves to start from, zeros ``[batch_size, ...]`` (``[]`` when
        stateless): the file replaces them at the first step, a FIRST one."""
        return [np.zeros((batch_size, *shape), dtype=dtype) for shape, dtype in self.state_specs]

    def _observation_leaves(self, observation) -> list[np.ndarray]:
        if isinstance(observation, (list, tuple)) and not hasattr(observation, "_fields"):
            leaves = list(observation)
        else:
            leaves = nest.flatten(observation)
        if len(leaves) != len(self.observation_names):
            raise ExportError(
                f"the policy takes {len(self.observation_names)} observation leaves "
                f"({', '.join(self.observation_names)}), got {len(leaves)}"
            )
        return [np.asarray(x.cpu() if isinstance(x, torch.Tensor) else x) for x in leaves]

    def step(self, observation, step_type=None, state=None):
        """One step of the policy on a batch.

        Args:
            observation: the observation ``[B, ...]``: an array, a nest of arrays (a dict
                observation: the environment's own) or the list of leaves in input order.
            step_type: ``[B]`` the ``StepType`` of each row (FIRST at an episode's first
                step); or a bool ``first`` flag ``[B]``. Ignored when stateless; required
                when stateful.
            state: the state leaves the previous step returned (None: ``initial_state``).

        Returns:
            ``(action, state)``: the action (an array, or the list of action leaves) and the
            state leaves to pass to the next step (``[]`` when stateless).
        """
        leaves = self._observation_leaves(observation)
        if not self.stateful:
            outputs = self(*leaves)
            return (outputs[0] if len(outputs) == 1 else outputs), []
        if step_type is None:
            raise ExportError(
                "a stateful exported policy needs the step_type (or first) of each row"
            )
        step_type = np.asarray(
            step_type.cpu() if isinstance(step_type, torch.Tensor) else step_type
        )
        if step_type.dtype == np.bool_:
            step_type = np.where(step_type, int(StepType.FIRST), int(StepType.MID))
        if state is None:
            state = self.initial_state(leaves[0].shape[0])
        outputs = self(*leaves, step_type.astype(np.int32), *state)
        num_actions = len(outputs) - len(self.state_names)
        actions = outputs[:num_actions]
        return (actions[0] if num_actions == 1 else actions), outputs[num_actions:]

    def run_episode(self, env) -> tuple:
        """``run_episodes(env, 1)[0]``: one episode's ``(return, length)``."""
        return self.run_episodes(env, 1)[0]

    def run_episodes(self, env, num_episodes: int, observe=None, on_step=None) -> list:
        """Play the alf environment ``env`` (batched; any batch size) until ``num_episodes``
        episodes have ended, the state carried from step to step (reset by the file at
        each FIRST).

        Args:
            env: a batched ``AlfEnvironment`` (reset here).
            num_episodes: number of episodes to finish.
            observe: called with every time step before it is acted on.
            on_step: called as ``on_step(time_step, action)`` with each step acted on.

        Returns:
            ``[(episode_return, length)]`` in the order the episodes ended: a return is
            the sum of the rewards after the FIRST step up to the LAST one (a float, or a
            list for a vector reward), as ``alf.bin.play`` reports it.
        """
        time_step = env.reset()
        batch = int(time_step.step_type.shape[0])
        state = self.initial_state(batch)
        returns, lengths = [0.0] * batch, [0] * batch
        episodes = []
        while True:
            if observe is not None:
                observe(time_step)
            for row in range(batch):
                episode = _count(time_step, row, returns, lengths)
                if episode is not None:
                    episodes.append(episode)
            if len(episodes) >= num_episodes:
                return episodes[:num_episodes]
            action, state = self.step(time_step.observation, time_step.step_type, state)
            if on_step is not None:
                on_step(time_step, action)
            leaves = action if isinstance(action, list) else [action]
            packed = nest.pack_sequence_as(env.action_spec(), [torch.as_tensor(a) for a in leaves])
            time_step = env.step(packed)


def _count(time_step, row: int, returns: list, lengths: list):
    """Add row ``row`` of ``time_step`` to its episode's return and length; the finished
    ``(return, length)`` at a LAST step, else None."""
    step_type = int(time_step.step_type[row])
    if step_type != StepType.FIRST:
        returns[row] = returns[row] + np.asarray(time_step.reward[row], dtype=np.float64)
        lengths[row] += 1
    if step_type != StepType.LAST:
        return None
    value = np.asarray(returns[row], dtype=np.float64)
    episode_return = float(value) if value.size == 1 else [float(x) for x in value.reshape(-1)]
    episode = (episode_return, lengths[row])
    returns[row], lengths[row] = 0.0, 0
    return episode
