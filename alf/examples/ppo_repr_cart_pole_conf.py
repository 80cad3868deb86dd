"""PPO on CartPole-v1 on a learned latent: ``ppo_cart_pole_conf.py`` with a
``PredictiveRepresentationLearner`` in front of PPO.

``Agent`` composes the two: the learner encodes the observation into a latent
:math:`z_t` (one tanh layer of 64), which PPO's actor and value networks (the base conf's)
read as their observation. Besides PPO's gradient, the latent is trained to predict, from
:math:`z_t` and from the dynamics net's :math:`\\hat z_t = f(z_{t-1}, a_{t-1})`, the row's
reward and discount (CartPole pays 1 every step, so it is the discount, 0 where the pole
fell, that carries information), and :math:`\\hat z_t` to point like :math:`z_t`
(self-prediction). ``Agent.optimizer`` (the base conf's Adam) trains both.
``--conf_param Agent.representation_learner_cls=None`` gives back the base conf's PPO.

Measured (seeds 0-2, the full 100,000 env steps, evaluation every 20 iterations): the
first evaluation (5,120 steps) 319, 136, 500 (PPO alone: 156, 123, 234), the last 467,
500, 500 (PPO alone: 500, 500, 488). The learner trains in each of PPO's 20 updates per
iteration: one core's CPU time per env step is about 2.5 times PPO alone's (382-411 µs
against 149-160 µs, 40 iterations after 2 of warm-up, ``benchmarks/harness/steady.py``).
"""

import functools

import torch

import alf
from alf.algorithms.agent import Agent
from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.algorithms.predictive_representation_learner import (
    PredictiveRepresentationLearner,
    SimpleDecoder,
)
from alf.networks.encoding_networks import EncodingNetwork
from alf.optimizers import Adam
from alf.tensor_specs import TensorSpec

alf.import_config("ppo_cart_pole_conf.py")

LATENT = 64


def decoder(target_field):
    """A ``SimpleDecoder`` of the scalar ``target_field`` (one ReLU layer of 64)."""
    return functools.partial(
        SimpleDecoder,
        target_field=target_field,
        decoder_net_ctor=functools.partial(
            EncodingNetwork,
            fc_layer_params=(64,),
            last_layer_size=1,
            output_tensor_spec=TensorSpec(()),
        ),
    )


alf.config(
    "PredictiveRepresentationLearner",
    num_unroll_steps=1,
    encoding_net_ctor=functools.partial(
        EncodingNetwork, fc_layer_params=(LATENT,), activation=torch.tanh
    ),
    decoder_ctor=[decoder("reward"), decoder("discount")],
    latent_prediction_loss_weight=1.0,
)
alf.config(
    "Agent",
    rl_algorithm_cls=PPOAlgorithm,
    representation_learner_cls=PredictiveRepresentationLearner,
    optimizer=Adam(lr=[(0, 1e-3), (1, 0.0)], eps=1e-5, gradient_clipping=0.5),
)
alf.config("TrainerConfig", algorithm_ctor=Agent)
