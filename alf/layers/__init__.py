"""ALF's layer language: layers that take and return tensors with a leading batch
dimension, each owning its activation and its initialization.

- parameterless (``elementwise``): ``Identity``, ``Cast``, ``Transpose``, ``Permute``,
  ``Reshape``, ``OneHot``, ``Lambda``, ``GetFields``, ``Sum``, ``AddN``, ``Detach``,
  ``Scale``, ``ScaleGradient``;
- fully connected (``dense``): ``FC`` and ``ParallelFC``; with learned factorised Gaussian
  weight noise (``noisy``, NoisyNet): ``NoisyFC``;
- convolutions (``conv``): ``Conv2D``, ``ConvTranspose2D`` and their parallel forms;
- ResNet blocks (``blocks``): ``ResidueBlock``, ``BottleneckBlock``;
- attention (``attention``): ``TransformerBlock``;
- BatchEnsemble (``ensemble``): ``FCBatchEnsemble``;
- causal convolution over time (``conv1d``): ``CausalConv1D``;
- layers with given parameters, for hypernetworks (``param``): ``ParamFC``, ``ParamConv2D``;
- image augmentation (``image``): ``RandomCrop``;
- batch renormalization (``norm``): ``BatchRenorm1d``;
- ALF's nest combiners (``alf.nest.utils``): ``NestConcat``, ``NestSum``, ``NestMultiply``,
  ``NestOuterProduct``.

``make_parallel(n)`` of a layer is the layer computing ``n`` independent copies of it at once
(an ensemble: one batched product, not a Python loop) on ``[B, n, ...]``;
``make_parallel_net`` (``parallel``) falls back to a loop for other modules.
"""

from alf.layers.attention import TransformerBlock
from alf.layers.blocks import BottleneckBlock, ResidueBlock
from alf.layers.conv import Conv2D, ConvTranspose2D, ParallelConv2D, ParallelConvTranspose2D
from alf.layers.conv1d import CausalConv1D
from alf.layers.dense import FC, ParallelFC
from alf.layers.elementwise import (
    AddN,
    Cast,
    Detach,
    ElementwiseLayerBase,
    GetFields,
    Identity,
    Lambda,
    OneHot,
    Permute,
    Reshape,
    Scale,
    ScaleGradient,
    Sum,
    Transpose,
)
from alf.layers.ensemble import FCBatchEnsemble
from alf.layers.image import RandomCrop
from alf.layers.noisy import NoisyFC
from alf.layers.norm import BatchRenorm1d
from alf.layers.parallel import (
    NaiveParallelLayer,
    make_parallel_input,
    make_parallel_net,
    make_parallel_spec,
    reset_parameters,
)
from alf.layers.param import ParamConv2D, ParamFC
from alf.nest.utils import NestConcat, NestMultiply, NestOuterProduct, NestSum

__all__ = [
    "BottleneckBlock",
    "ResidueBlock",
    "NaiveParallelLayer",
    "NestConcat",
    "NestMultiply",
    "NestOuterProduct",
    "NestSum",
    "NoisyFC",
    "make_parallel_input",
    "make_parallel_net",
    "make_parallel_spec",
    "reset_parameters",
    "FC",
    "AddN",
    "BatchRenorm1d",
    "Cast",
    "CausalConv1D",
    "Conv2D",
    "ConvTranspose2D",
    "Detach",
    "ElementwiseLayerBase",
    "FCBatchEnsemble",
    "GetFields",
    "Identity",
    "Lambda",
    "OneHot",
    "ParallelConv2D",
    "ParallelConvTranspose2D",
    "ParallelFC",
    "ParamConv2D",
    "ParamFC",
    "Permute",
    "RandomCrop",
    "Reshape",
    "Scale",
    "ScaleGradient",
    "Sum",
    "TransformerBlock",
    "Transpose",
]
