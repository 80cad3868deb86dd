"""``create_algorithm``: the algorithm of a ``TrainerConfig`` for an environment.

Training (``PolicyTrainer``), a local-inference sampler's policy copy (``alf.samplers``)
and ``alf.bin.play`` build the algorithm the same way, with this one function; it lives
below the trainers and the samplers so that both can import it (importable from
``alf.trainers.policy_trainer`` as before).
"""

from __future__ import annotations

from alf.algorithms.config import TrainerConfig
from alf.data_transformers import create_data_transformer
from alf.utils import common


def create_algorithm(config: TrainerConfig, env, device=None, run=None):
    """Build ``config.algorithm_ctor`` for ``env``, as training does.

    The data transformers from ``config.data_transformer_ctor`` are built on ``env``'s
    observation spec; the algorithm is built on their transformed observation spec and
    given them (``RLAlgorithm.set_data_transformer``). ``config`` is not changed.

    Args:
        config: the ``TrainerConfig``.
        env: the batched environment the algorithm acts on.
        device: where the algorithm's parameters go (None: leave them where built).
        run: the trainer's ``RunState`` (anything with ``mini_batch_size``): its learner
            trains on this rank's share of the minibatch. None: as configured.

    Returns:
        the ``RLAlgorithm``.
    """
    transformer = create_data_transformer(config.data_transformer_ctor, env.observation_spec())
    common.set_global_env_specs(
        env.observation_spec(),
        transformer.transformed_observation_spec,
        env.action_spec(),
        env.reward_spec(),
    )
    algorithm = config.algorithm_ctor(
        observation_spec=transformer.transformed_observation_spec,
        action_spec=env.action_spec(),
        reward_spec=env.reward_spec(),
        env=env,
        config=config,
    )
    algorithm.set_data_transformer(transformer)
    if run is not None and algorithm.learner is not None:
        algorithm.learner.set_mini_batch_size(run.mini_batch_size)
    return algorithm if device is None else algorithm.to(device)
