"""The ``'ray'`` backend: each sampler is a Ray actor (``pip install alf[ray]``).

``RayChannel.connect`` joins the cluster at ``SamplerConfig.ray_address`` (``ray.init(
address=...)``, one log line naming it) and nothing else: without one it starts its own local
cluster (``ray.init(address="local")``, node address 127.0.0.1, dashboard off, in a private
temporary directory), never a cluster found through ``RAY_ADDRESS`` or ``ray start``'s
``ray_current_cluster`` file (a ``RAY_ADDRESS`` in the environment is ignored, with a log line).
``disconnect`` shuts down a cluster it started and removes its directory (a joined one is left
running). Each sampler is an actor running ``SamplerWorker``; a request is one
actor call whose result is the reply, ``('ok', value)`` or ``('error', description)``,
as with the processes backend (both pickled into bytes by ``serialization.dumps``). An
actor that dies makes its pending call fail, which the pool sees as a dead sampler and
replaces. The actors get this alf on their ``PYTHONPATH`` (the conf file must be
readable at the same path on every node).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import traceback

from alf.samplers.errors import SamplerError
from alf.samplers.serialization import dumps, loads

logger = logging.getLogger(__name__)

# Ray's Unix sockets live at ``<temp dir>/session_<date>_<time>_<pid>/sockets/<name>`` (about
# 65 characters below the temp dir) and a socket path may have at most 107 characters.
_MAX_TEMP_DIR_LENGTH = 40


def _ray():
    try:
        import ray
    except ImportError:
        raise ValueError(
            "SamplerConfig.backend='ray' needs Ray: pip install 'alf[ray]' (or 'ray>=2.9')"
        ) from None
    return ray


def _private_temp_dir() -> str:
    """A new directory of this process's own for a local cluster (short enough for Ray's
    socket paths: under the system's temp dir, or ``/tmp`` when that is too long)."""
    parent = tempfile.gettempdir()
    if len(parent) + len("/alf-ray-12345678") > _MAX_TEMP_DIR_LENGTH:
        parent = "/tmp"
    return tempfile.mkdtemp(prefix="alf-ray-", dir=parent)


class _RaySampler:
    """The actor: builds a ``SamplerWorker`` and serves its requests."""

    def __init__(self, spec):
        import torch

        from alf.samplers.worker import SamplerWorker

        torch.set_num_threads(1)
        self._error = None
        try:
            self._worker = SamplerWorker(spec)
        except BaseException:
            self._error = {"traceback": traceback.format_exc(), "index": spec.index}

    def ready(self) -> bytes:
        if self._error is not None:
            return dumps(("error", self._error))
        return dumps(("ready", self._worker.description()))

    def handle(self, request: bytes) -> bytes:
        command, payload = loads(request)
        try:
            return dumps(("ok", self._worker.handle(command, payload)))
        except Exception:
            return dumps(("error", {"traceback": traceback.format_exc()}))

    def close(self):
        if self._error is None:
            self._worker.close()


class RayChannel:
    """The learner's end of one sampler actor (the interface of ``ProcessChannel``).

    Args:
        spec: the ``SamplerSpec`` it is started with.
    """

    _started_cluster = False
    _temp_dir = None
    _actor_class = None

    @classmethod
    def connect(cls, address: str | None) -> None:
        """Join the cluster at ``address``, or start a local one (see the module doc)."""
        ray = _ray()
        if ray.is_initialized():
            logger.info(
                "Ray samplers: using the Ray cluster this process is connected to already (%s)",
                ray.get_runtime_context().gcs_address,
            )
            return
        if address:
            cls._join(ray, address)
        else:
            cls._start_local(ray)

    @staticmethod
    def _join(ray, address: str) -> None:
        try:
            ray.init(address=address, log_to_driver=False)
        except ConnectionError as e:
            raise ValueError(
                f"SamplerConfig.ray_address={address!r}: {e} (a cluster with token "
                "authentication also needs RAY_AUTH_MODE=token in this process's "
                "environment and its token in ~/.ray/auth_token or RAY_AUTH_TOKEN)"
            ) from e
        logger.info(
            "Ray samplers: joined the Ray cluster at %s (SamplerConfig.ray_address=%r)",
            ray.get_runtime_context().gcs_address,
            address,
        )

    @classmethod
    def _start_local(cls, ray) -> None:
        ignored = os.environ.get("RAY_ADDRESS")
        if ignored:
            logger.info(
                "Ray samplers: RAY_ADDRESS=%r ignored (SamplerConfig.ray_address is not set): "
                "starting a local Ray cluster",
                ignored,
            )
        temp_dir = _private_temp_dir()
        try:
            ray.init(
                address="local",
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                _temp_dir=temp_dir,
                log_to_driver=False,
                configure_logging=False,
            )
        except BaseException:
            shutil.rmtree(temp_dir, ignore_errors=True)
            raise
        cls._started_cluster = True
        cls._temp_dir = temp_dir
        logger.info(
            "Ray samplers: started a local Ray cluster at %s (temp dir %s)",
            ray.get_runtime_context().gcs_address,
            temp_dir,
        )

    @classmethod
    def disconnect(cls) -> None:
        """Shut down the local cluster ``connect`` started and remove its directory
        (idempotent)."""
        if cls._started_cluster:
            ray = _ray()
            try:
                ray.shutdown(wait_for_processes=True)  # waits for its processes to end
            except TypeError:  # an older Ray: no such argument
                ray.shutdown()
            cls._started_cluster = False
            shutil.rmtree(cls._temp_dir, ignore_errors=True)
            cls._temp_dir = None

    @classmethod
    def _remote_class(cls):
        if cls._actor_class is None:
            cls._actor_class = _ray().remote(num_cpus=0)(_RaySampler)
        return cls._actor_class

    def __init__(self, spec):
        self.spec = spec
        import alf

        alf_root = os.path.dirname(os.path.dirname(os.path.abspath(alf.__file__)))
        path = os.pathsep.join([alf_root] + [p for p in sys.path if p and os.path.isdir(p)])
        runtime_env = {"env_vars": {"PYTHONPATH": path}}
        self._actor = self._remote_class().options(runtime_env=runtime_env).remote(spec)
        self._ref = self._actor.ready.remote()
        self._dead = None

    @property
    def pid(self) -> str:
        return f"ray actor {self._actor._actor_id.hex()[:8]}"

    def alive(self) -> bool:
        return self._dead is None

    def exit_description(self) -> str:
        return f"died ({self._dead or 'the Ray actor is gone'})"

    def send(self, command: str, payload) -> None:
        self._ref = self._actor.handle.remote(dumps((command, payload)))

    def ready(self) -> bool:
        done, _ = _ray().wait([self._ref], timeout=0)
        return bool(done)

    def receive(self):
        ray = _ray()
        try:
            return loads(ray.get(self._ref))
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as e:
            self._dead = type(e).__name__
            raise SamplerError(
                f"sampler {self.spec.index} ({self.pid}) is gone", self.spec.index
            ) from e

    def kill(self) -> None:
        _ray().kill(self._actor, no_restart=True)
        self._dead = self._dead or "killed"

    def close(self, grace: float = 5.0) -> None:
        self.kill()

    @staticmethod
    def wait(channels: list, timeout: float) -> list:
        """The channels among ``channels`` whose reply is in (or whose actor died)."""
        ray = _ray()
        by_ref = {channel._ref: channel for channel in channels}
        refs = list(by_ref)
        done, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if done:
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        return [by_ref[ref] for ref in done]

    @staticmethod
    def close_all(channels: list, grace: float = 5.0) -> None:
        """Stop the actors (their envs are closed by a last call, given ``grace`` seconds)."""
        ray = _ray()
        refs = [channel._actor.close.remote() for channel in channels if channel.alive()]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=grace)
        for channel in channels:
            channel.kill()
