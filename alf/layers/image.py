"""Image augmentation layers with ALF's arguments: ``RandomCrop``, a crop drawn anew for each
image of a batch (unlike ``torchvision``'s, which crops a whole batch alike)."""

from __future__ import annotations

import torch
from torch import nn

import alf


@alf.configurable
@alf.repr_wrapper
class RandomCrop(nn.Module):
    """A random ``size`` window of each image of ``[B, C, H, W]``, the image first padded by
    ``padding`` with copies of its border pixels; each window position is equally likely.

    Args:
        size: ``(h, w)`` of the output, or an int for both.
        padding: ``(left, right, top, bottom)`` pixels added, or an int for all four.
    """

    def __init__(self, size: int | tuple[int, int], padding: int | tuple[int, ...] = 0):
        super().__init__()
        self._size = (size, size) if isinstance(size, int) else tuple(size)
        self._padding = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
        if len(self._size) != 2 or len(self._padding) != 4:
            raise ValueError(
                f"RandomCrop: size={size!r} must be an int or a pair, padding={padding!r} an "
                "int or (left, right, top, bottom)"
            )

    def forward(self, img):
        """``[B, C, H, W]`` -> ``[B, C, h, w]``."""
        if img.ndim != 4:
            raise ValueError(f"RandomCrop: input of shape {tuple(img.shape)}, expected 4 dims")
        (h, w), (left, right, top, bottom) = self._size, self._padding
        b, _, height, width = img.shape
        if h > height + top + bottom or w > width + left + right:
            raise ValueError(
                f"RandomCrop: a {h}x{w} window does not fit the padded {height}x{width} image"
            )
        device = img.device
        # the window's top-left corner in the unpadded image's coordinates
        y0 = torch.randint(-top, height + bottom - h + 1, (b, 1), device=device)
        x0 = torch.randint(-left, width + right - w + 1, (b, 1), device=device)
        # a padded pixel is a copy of the nearest border pixel: clamp the coordinates
        rows = (y0 + torch.arange(h, device=device)).clamp_(0, height - 1)  # [B, h]
        cols = (x0 + torch.arange(w, device=device)).clamp_(0, width - 1)  # [B, w]
        batch = torch.arange(b, device=device).view(b, 1, 1)
        # [C, B, h, w]: index the channels-first view, one gather for all channels
        crops = img.transpose(0, 1)[:, batch, rows.unsqueeze(2), cols.unsqueeze(1)]
        return crops.transpose(0, 1)
