"""``RandomCrop``: every crop is a window of the border-replicated padded image, windows vary
per image and cover every position, and the refusals."""

import pytest
import torch
import torch.nn.functional as F

import alf.layers as L


def _window_offsets(crop, padded, h, w):
    """The offsets at which ``crop`` is a window of ``padded``."""
    return [
        (i, j)
        for i in range(padded.shape[-2] - h + 1)
        for j in range(padded.shape[-1] - w + 1)
        if torch.equal(padded[:, i : i + h, j : j + w], crop)
    ]


def test_crops_are_windows_of_the_replicated_padding():
    torch.manual_seed(0)
    img = torch.randn(64, 2, 5, 6)
    crop = L.RandomCrop((4, 3), padding=(1, 2, 0, 1))
    out = crop(img)
    assert out.shape == (64, 2, 4, 3)
    padded = F.pad(img, (1, 2, 0, 1), mode="replicate")  # (left, right, top, bottom)
    seen = set()
    for b in range(64):
        offsets = _window_offsets(out[b], padded[b], 4, 3)
        assert offsets, b
        seen.update(offsets)
    # (5 + 1 - 4 + 1) * (6 + 3 - 3 + 1) = 3 * 7 positions; 64 draws reach most of them
    assert len(seen) >= 15


def test_full_size_without_padding_is_the_identity():
    img = torch.randn(3, 1, 4, 4)
    assert torch.equal(L.RandomCrop(4)(img), img)


def test_gradients_reach_the_cropped_pixels():
    torch.manual_seed(1)
    img = torch.randn(2, 1, 4, 4, requires_grad=True)
    L.RandomCrop(2)(img).sum().backward()
    assert img.grad.sum().item() == 2 * 2 * 2 and img.grad.max() == 1


def test_refusals():
    with pytest.raises(ValueError, match="does not fit"):
        L.RandomCrop(5, padding=0)(torch.zeros(1, 1, 4, 4))
    with pytest.raises(ValueError, match="expected 4 dims"):
        L.RandomCrop(2)(torch.zeros(1, 4, 4))
    with pytest.raises(ValueError, match="padding=\\(1, 2\\)"):
        L.RandomCrop(2, padding=(1, 2))
