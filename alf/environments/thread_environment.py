"""``ThreadEnvironment``: one unbatched env behind the batched interface, in this process.

ALF ran this env in a separate thread; here it simply runs in the calling
(main) thread, which is what ``create_environment(nonparallel=True)`` and
evaluation need: no subprocess, no thread, the env's own code on the stack of
every call (good for debugging), and the same batched torch interface as
``ParallelAlfEnvironment`` with ``batch_size == 1``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from alf.environments.alf_environment import AlfEnvironment
from alf.environments.step_guard import StepGuard


def _array_to_batched_tensor(array: np.ndarray) -> torch.Tensor:
    """``[...]`` numpy → ``[1, ...]`` torch, sharing memory when numpy allows it."""
    batched = array[None]
    if not batched.flags.writeable:
        batched = batched.copy()
    try:
        return torch.from_numpy(batched)
    except ValueError:  # negative strides
        return torch.from_numpy(batched.copy())


def to_batched_torch(value):
    """A numpy nest ``[...]`` as a torch nest ``[1, ...]`` (NamedTuples, dicts, tuples, lists).

    Each array becomes a ``[1, ...]`` view shared with numpy; only read-only or
    negatively strided arrays are copied.
    """
    if isinstance(value, np.ndarray):
        return _array_to_batched_tensor(value)
    if isinstance(value, dict):
        return {k: to_batched_torch(v) for k, v in value.items()}
    if isinstance(value, tuple):
        items = [to_batched_torch(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [to_batched_torch(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.unsqueeze(0)
    return _array_to_batched_tensor(np.asarray(value))


def _check_batch_of_one(value) -> None:
    if value.ndim == 0 or value.shape[0] != 1:
        raise ValueError(
            f"ThreadEnvironment takes actions shaped [1, ...], got shape {tuple(value.shape)}"
        )


def from_batched(value):
    """A ``[1, ...]`` nest of torch tensors or numpy arrays as a numpy nest ``[...]``."""
    if isinstance(value, torch.Tensor):
        _check_batch_of_one(value)
        return value.detach().cpu().numpy()[0]
    if isinstance(value, np.ndarray):
        _check_batch_of_one(value)
        return value[0]
    if isinstance(value, dict):
        return {k: from_batched(v) for k, v in value.items()}
    if isinstance(value, tuple):
        items = [from_batched(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [from_batched(v) for v in value]
    return from_batched(np.asarray(value))


class ThreadEnvironment(AlfEnvironment):
    """Run one unbatched ``AlfEnvironment`` in the main thread as a batched env of size 1.

    ``reset``/``step`` return ``TimeStep`` nests of torch CPU tensors ``[1, ...]``
    (views of the env's numpy arrays: no copy beyond ``torch.from_numpy``);
    ``step`` takes actions ``[1, ...]`` as torch tensors or numpy arrays. Specs
    are the env's (without batch dim). Auto reset is the wrapped env's: the step
    after a LAST returns its FIRST.

    Args:
        env_constructor: callable with no arguments returning an unbatched
            ``AlfEnvironment`` (e.g. ``functools.partial(suite_gym.load, 'CartPole-v1')``).
        step_timeout: seconds a ``reset``/``step`` may take before it is interrupted with
            ``EnvironmentStepTimeout`` (``alf.environments.step_guard``); None: no limit.
    """

    def __init__(
        self, env_constructor: Callable[[], AlfEnvironment], step_timeout: float | None = None
    ):
        super().__init__()
        env = env_constructor()
        if env.batched:
            raise ValueError(
                f"ThreadEnvironment needs an unbatched env, but {env} is batched "
                f"(batch_size={env.batch_size}); use it directly instead"
            )
        self._env = env
        self._guard = StepGuard(repr(env), step_timeout)

    @property
    def batched(self) -> bool:
        return True

    @property
    def batch_size(self) -> int:
        return 1

    @property
    def num_tasks(self) -> int:
        return self._env.num_tasks

    @property
    def env(self) -> AlfEnvironment:
        """The wrapped unbatched env."""
        return self._env

    def observation_spec(self):
        return self._env.observation_spec()

    def action_spec(self):
        return self._env.action_spec()

    def reward_spec(self):
        return self._env.reward_spec()

    def env_info_spec(self):
        return self._env.env_info_spec()

    def _reset(self):
        return to_batched_torch(self._guard.call(self._env.reset))

    def _step(self, action):
        return to_batched_torch(self._guard.call(self._env.step, from_batched(action)))

    def seed(self, seed: int) -> None:
        self._env.seed(seed)

    def render(self, mode: str = "rgb_array"):
        """The wrapped env's frame (unbatched, e.g. ``[H, W, 3]`` uint8)."""
        return self._env.render(mode)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None
