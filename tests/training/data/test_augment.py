"""Tensor-side augmentation: exact crop/flip/cutout semantics and determinism under a generator."""
from __future__ import annotations

import torch

from fedflat.training.data.augment import Augmenter, black_fill, crop_flip, cutout, random_crop, random_hflip

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)


def _x(n=6, c=3, h=8, w=8, seed=0):
    return torch.randn(n, c, h, w, generator=torch.Generator().manual_seed(seed))


def test_crop_output_is_a_window_of_the_padded_image_and_offsets_vary():
    x, pad = _x(), 2
    fill = torch.tensor([-1.0, -2.0, -3.0])
    out = random_crop(x, torch.Generator().manual_seed(1), pad, fill)
    xp = torch.nn.functional.pad(x, (pad,) * 4)
    border = torch.ones(1, 1, 12, 12); border[..., pad:-pad, pad:-pad] = 0
    xp = xp + border * fill.view(1, 3, 1, 1)
    offsets = []
    for i in range(len(x)):
        hits = [(oy, ox) for oy in range(2 * pad + 1) for ox in range(2 * pad + 1)
                if torch.equal(out[i], xp[i, :, oy:oy + 8, ox:ox + 8])]
        assert hits, f"sample {i} is not a crop of its padded image"
        offsets.append(hits[0])
    assert len(set(offsets)) > 1


def test_crop_border_is_normalised_black():
    # an all-black uint8 image normalises to -mean/std; any crop of it must stay exactly that
    black = ((torch.zeros(4, 3, 8, 8) - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1))
    aug = Augmenter(crop_pad=4, fill=black_fill(MEAN, STD))
    out = aug(black, torch.Generator().manual_seed(3))
    assert torch.allclose(out, black, atol=1e-6)


def test_reflect_padding_and_crop_probability():
    x = _x()
    out = random_crop(x, torch.Generator().manual_seed(0), 2, mode="reflect", p=0.0)
    assert torch.equal(out, x)  # p = 0: every sample keeps the centre offset
    out = random_crop(x, torch.Generator().manual_seed(0), 2, mode="reflect")
    xp = torch.nn.functional.pad(x, (2,) * 4, mode="reflect")
    for i in range(len(x)):
        assert any(torch.equal(out[i], xp[i, :, a:a + 8, b:b + 8]) for a in range(5) for b in range(5))


def test_hflip_per_sample():
    x = _x(n=32)
    out = random_hflip(x, torch.Generator().manual_seed(0), 0.5)
    flipped = [torch.equal(out[i], x[i].flip(2)) for i in range(32)]
    kept = [torch.equal(out[i], x[i]) for i in range(32)]
    assert all(f or k for f, k in zip(flipped, kept)) and 0 < sum(flipped) < 32
    assert torch.equal(random_hflip(x, torch.Generator().manual_seed(0), 1.0), x.flip(3))


def test_fused_crop_flip_is_a_window_or_its_mirror():
    x, pad = _x(n=24), 1
    fill = torch.tensor([0.5, -0.5, 2.0])
    out = crop_flip(x, torch.Generator().manual_seed(2), pad, fill, "constant", 1.0, 0.5)
    xp = torch.nn.functional.pad(x - fill.view(1, 3, 1, 1), (pad,) * 4) + fill.view(1, 3, 1, 1)
    kinds = []
    for i in range(len(x)):
        wins = [xp[i, :, a:a + 8, b:b + 8] for a in range(3) for b in range(3)]
        plain = any(torch.allclose(out[i], wv, atol=1e-6) for wv in wins)
        mirrored = any(torch.allclose(out[i], wv.flip(2), atol=1e-6) for wv in wins)
        assert plain or mirrored
        kinds.append(mirrored and not plain)
    assert 0 < sum(kinds) < len(x)


def test_cutout_zeroes_one_clipped_square():
    x = torch.ones(16, 1, 10, 10)
    out = cutout(x, torch.Generator().manual_seed(0), 4)
    for i in range(16):
        zero = (out[i, 0] == 0).nonzero()
        assert 0 < len(zero) <= 16
        rows, cols = zero[:, 0].unique(), zero[:, 1].unique()
        assert len(zero) == len(rows) * len(cols)  # a rectangle (a square clipped at the border)
        assert len(rows) <= 4 and len(cols) <= 4


def test_augmenter_deterministic_given_generator():
    x = _x(n=8, h=32, w=32)
    aug = Augmenter(crop_pad=4, flip_p=0.5, cutout=16, fill=black_fill(MEAN, STD))
    a = aug(x, torch.Generator().manual_seed(7))
    b = aug(x, torch.Generator().manual_seed(7))
    c = aug(x, torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == x.shape
