"""The Nature-CNN (Mnih et al. 2015) of the Atari confs (``ppo_breakout_conf.py``,
``dqn_breakout_conf.py``): three ReLU convolutions and one ReLU fully-connected layer
on a ``[4, 84, 84]`` stack of frames, as Stable-Baselines3's ``NatureCNN``.

Not a conf: the confs import it (``from alf.examples.atari_networks import ...``).
"""

import functools

from alf.initializers import orthogonal_init
from alf.networks.encoding_networks import EncodingNetwork

#: (filters, kernel size, stride) of the three convolutions
NATURE_CNN_CONV_LAYER_PARAMS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
#: the fully-connected layer after them
NATURE_CNN_FC_LAYER_PARAMS = (512,)

#: ``ctor(input_tensor_spec=)`` → the Nature-CNN as an encoder (output ``[B, 512]``), with
#: SB3 PPO's orthogonal init (gain sqrt 2, biases 0)
nature_cnn_encoder = functools.partial(
    EncodingNetwork,
    conv_layer_params=NATURE_CNN_CONV_LAYER_PARAMS,
    fc_layer_params=NATURE_CNN_FC_LAYER_PARAMS,
    kernel_initializer=orthogonal_init,
    name="NatureCNN",
)
