"""``create_algorithm``: the algorithm of a ``TrainerConfig`` for an environment.

Training (``PolicyTrainer``), a local-inference sampler's policy copy (``alf.samplers``)
and ``alf.bin.play`` build the algorithm the same way, with this one function; it lives
below the trainers and the samplers so that both can import it (importable from
``alf.trainers.policy_trainer`` as before).
"""

from __future__ import annotations

from alf.algorithms.config import TrainerConfig
from alf.data_transformers import create_data_transformer


def create_algorithm(config: TrainerConfig, env, device=None):
    """Build ``config.algorithm_ctor`` for ``env``, as training does.

    The data transformers from ``config.data_transformer_ctor`` are built on
    ``env``'s observation spec and stored as ``config.data_transformer`` (where the
    algorithm finds them); the algorithm sees the transformed observation spec.

    Args:
        config: the ``TrainerConfig``.
        env: the batched environment the algorithm acts on.
        device: where the algorithm's parameters go (None: leave them where built).

    Returns:
        the ``RLAlgorithm``.
    """
    transformer = create_data_transformer(config.data_transformer_ctor, env.observation_spec())
    config.data_transformer = transformer
    algorithm = config.algorithm_ctor(
        observation_spec=transformer.transformed_observation_spec,
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config,
    )
    return algorithm if device is None else algorithm.to(device)
