"""Remote samplers: the training actor in other processes or Ray actors.

``SamplerConfig`` (``alf.samplers.config``) says where the actor runs; by default it
stays in the learner's process. ``docs/scale_out.md`` ("Remote samplers") describes
the design; the modules:

- ``config``: ``SamplerConfig``;
- ``worker``: ``SamplerWorker``, what each sampler runs (its envs, its policy copy);
- ``process_backend`` / ``ray_backend``: the transports (``ProcessChannel``, ``RayChannel``);
- ``pool``: ``SamplerPool``, starting, waiting for and replacing samplers;
- ``remote_unroller``: ``SamplerUnroller``, the learner's actor (``Unroll`` in, as in-process);
- ``server``: ``InferenceServer``, batched inference for ``inference='server'``;
- ``group``: ``create_samplers``, used by ``PolicyTrainer``.
"""

from alf.samplers.config import SamplerConfig
from alf.samplers.errors import SamplerError

__all__ = ["SamplerConfig", "SamplerError"]
