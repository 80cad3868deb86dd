"""Optimizer specs: configurable descriptions of torch optimizers (see ``optimizers.py``;
``AdamTF``, Adam with TensorFlow's epsilon placement, is in ``adam_tf.py``)."""

from alf.optimizers.adam_tf import AdamTF
from alf.optimizers.optimizers import SGD, Adam, AdamW, OptimizerSpec

__all__ = ["Adam", "AdamTF", "AdamW", "OptimizerSpec", "SGD"]
