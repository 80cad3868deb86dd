"""ALF's ``ImageEncodingNetwork`` (a stack of ``Conv2D``) and ``ImageDecodingNetwork`` (FC
layers, a reshape to an image, a stack of ``ConvTranspose2D``), as ``alf.nn.Sequential``
containers of ``alf.layers``: their ``make_parallel(n)`` is the batched one.

``same_padding=True`` replaces each layer's padding by ``(kernel_size - 1) // 2`` per
dimension: a stride-1 layer with an odd kernel keeps the image size (as TF's ``same``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import alf
from alf.layers import FC, Conv2D, ConvTranspose2D, Reshape
from alf.networks.containers import _Sequential
from alf.tensor_specs import TensorSpec


def _pair(x) -> tuple[int, int]:
    return (x, x) if isinstance(x, int) else tuple(x)


def _layer_params(name: str, arg: str, params, same_padding: bool) -> tuple:
    """``(filters, kernel_size, strides, padding)`` of one entry of ``arg``."""
    if not isinstance(params, (tuple, list)) or not 3 <= len(params) <= 4:
        raise ValueError(
            f"{name}: each {arg} entry is (filters, kernel_size, strides[, padding]), "
            f"got {params!r}"
        )
    filters, kernel_size, strides = params[:3]
    padding = params[3] if len(params) > 3 else 0
    if same_padding:
        padding = tuple((k - 1) // 2 for k in _pair(kernel_size))
    return filters, kernel_size, strides, padding


def _nonempty(name: str, arg: str, value) -> tuple:
    if not isinstance(value, (tuple, list)) or not value:
        raise ValueError(f"{name}: {arg} must be a non-empty tuple, got {value!r}")
    return tuple(value)


def _refuse_batch_ensemble(name: str, use_batch_ensemble: bool) -> None:
    if use_batch_ensemble:
        raise ValueError(
            f"{name}: use_batch_ensemble=True is not supported: alf has no Conv2DBatchEnsemble"
        )


@alf.configurable
class ImageEncodingNetwork(_Sequential):
    """``[B, C, H, W]`` images through ``Conv2D`` layers: ``[B, C', H', W']``, or
    ``[B, C' * H' * W']`` with ``flatten_output``.

    Args:
        input_channels: the images' channels ``C``.
        input_size: ``(H, W)`` (or one int for both).
        conv_layer_params: non-empty tuple of ``(filters, kernel_size, strides[, padding])``.
        use_batch_ensemble, ensemble_size: ALF's BatchEnsemble option (``True`` is refused).
        same_padding: module doc.
        activation: activation of every layer.
        kernel_initializer: ``init(weight)`` of every layer (``Conv2D``'s default if None).
        flatten_output: flatten each output image into a vector.
        name: name of the network.
    """

    def __init__(
        self,
        input_channels: int,
        input_size,
        conv_layer_params: tuple,
        use_batch_ensemble: bool = False,
        ensemble_size: int = 10,
        same_padding: bool = False,
        activation: Callable = torch.relu_,
        kernel_initializer: Callable | None = None,
        flatten_output: bool = False,
        name: str = "ImageEncodingNetwork",
    ):
        _refuse_batch_ensemble(name, use_batch_ensemble)
        spec = TensorSpec((input_channels, *_pair(input_size)))
        layers = []
        for params in _nonempty(name, "conv_layer_params", conv_layer_params):
            filters, kernel_size, strides, padding = _layer_params(
                name, "conv_layer_params", params, same_padding
            )
            layers.append(
                Conv2D(
                    input_channels,
                    filters,
                    kernel_size,
                    activation=activation,
                    strides=strides,
                    padding=padding,
                    kernel_initializer=kernel_initializer,
                )
            )
            input_channels = filters
        if flatten_output:
            layers.append(Reshape(-1))
        super().__init__(layers, input_tensor_spec=spec, name=name)


@alf.configurable
class ImageDecodingNetwork(_Sequential):
    """``[B, input_size]`` vectors to images: ``FC`` layers, one to
    ``start_decoding_channels * H0 * W0`` units reshaped to ``[B, C0, H0, W0]``, then
    ``ConvTranspose2D`` layers (``output_padding`` 0), the last with ``output_activation``.

    Args:
        input_size: the input vectors' size.
        transconv_layer_params: non-empty tuple of ``(filters, kernel_size, strides[,
            padding])``.
        start_decoding_size: ``(H0, W0)`` (or one int for both).
        start_decoding_channels: ``C0``.
        same_padding: module doc.
        preprocess_fc_layer_params: sizes of FC layers before the one to the first image.
        activation: activation of the hidden layers.
        kernel_initializer: ``init(weight)`` of every layer.
        output_activation: activation of the last layer.
        name: name of the network.
    """

    def __init__(
        self,
        input_size: int,
        transconv_layer_params: tuple,
        start_decoding_size,
        start_decoding_channels: int,
        same_padding: bool = False,
        preprocess_fc_layer_params: tuple[int, ...] | None = None,
        activation: Callable = torch.relu_,
        kernel_initializer: Callable | None = None,
        output_activation: Callable = torch.tanh,
        name: str = "ImageDecodingNetwork",
    ):
        params = _nonempty(name, "transconv_layer_params", transconv_layer_params)
        spec = TensorSpec((input_size,))
        layers, size = [], input_size
        for out in preprocess_fc_layer_params or ():
            layers.append(
                FC(size, out, activation=activation, kernel_initializer=kernel_initializer)
            )
            size = out
        start = (start_decoding_channels, *_pair(start_decoding_size))
        start_units = start[0] * start[1] * start[2]
        layers.append(
            FC(size, start_units, activation=activation, kernel_initializer=kernel_initializer)
        )
        layers.append(Reshape(start))
        channels = start_decoding_channels
        for i, entry in enumerate(params):
            filters, kernel_size, strides, padding = _layer_params(
                name, "transconv_layer_params", entry, same_padding
            )
            layers.append(
                ConvTranspose2D(
                    channels,
                    filters,
                    kernel_size,
                    activation=output_activation if i == len(params) - 1 else activation,
                    strides=strides,
                    padding=padding,
                    kernel_initializer=kernel_initializer,
                )
            )
            channels = filters
        super().__init__(layers, input_tensor_spec=spec, name=name)
