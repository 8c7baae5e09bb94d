"""Train-time augmentation on normalised float batches (N, C, H, W), on the batch's device.

All randomness comes from the passed torch.Generator (one per client and round, see
training/fl/batches.py), so a batch is a deterministic function of (seed, round, client). The ops match
torchvision's PIL-side transforms: RandomCrop(size, padding) pads with black pixels, which after
normalisation is `(0 - mean) / std` per channel, so `fill` is that value, not 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F

PAD_MODES = ("constant", "reflect")


def _rand(n: int, gen: torch.Generator, device) -> torch.Tensor:
    return torch.rand(n, generator=gen, device=device)


def random_crop(x: torch.Tensor, gen: torch.Generator, pad: int, fill: Optional[torch.Tensor] = None,
                mode: str = "constant", p: float = 1.0) -> torch.Tensor:
    """Pad by `pad` on each side (constant `fill` per channel, or reflect), crop back to (H, W) at a
    uniform offset per sample; with p < 1 a sample keeps offset (pad, pad), i.e. no crop."""
    return crop_flip(x, gen, pad, fill, mode, p, 0.0)


def random_hflip(x: torch.Tensor, gen: torch.Generator, p: float = 0.5) -> torch.Tensor:
    flip = _rand(x.shape[0], gen, x.device) < p
    return torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)


def cutout(x: torch.Tensor, gen: torch.Generator, size: int) -> torch.Tensor:
    """DeVries & Taylor Cutout: zero a size x size square (clipped at the border) centred uniformly."""
    n, _, h, w = x.shape
    dev = x.device
    cy = torch.randint(0, h, (n,), generator=gen, device=dev)
    cx = torch.randint(0, w, (n,), generator=gen, device=dev)
    ys = torch.arange(h, device=dev)[None, :]
    xs = torch.arange(w, device=dev)[None, :]
    in_y = (ys >= (cy[:, None] - size // 2)) & (ys < (cy[:, None] + size - size // 2))
    in_x = (xs >= (cx[:, None] - size // 2)) & (xs < (cx[:, None] + size - size // 2))
    mask = in_y[:, :, None] & in_x[:, None, :]
    return x.masked_fill(mask[:, None], 0.0)


_GRIDS: dict = {}


def _grid(n: int, device) -> torch.Tensor:
    key = (n, str(device))
    if key not in _GRIDS:  # cached: no per-batch arange allocation
        _GRIDS[key] = torch.arange(n, device=device)
    return _GRIDS[key]


def crop_flip(x: torch.Tensor, gen: torch.Generator, pad: int, fill: Optional[torch.Tensor], mode: str = "constant",
              crop_p: float = 1.0, flip_p: float = 0.0) -> torch.Tensor:
    """random_crop then random_hflip as one gather: the flip is folded into the column index, so a
    batch costs one padded copy and one gather (the data path is launch-bound on a GPU)."""
    n, c, h, w = x.shape
    dev = x.device
    hp, wp = h + 2 * pad, w + 2 * pad
    if pad == 0:
        xp = x
    elif mode == "reflect":
        xp = F.pad(x, (pad, pad, pad, pad), mode="reflect")
    else:
        xp = (fill.view(1, c, 1, 1) if fill is not None else x.new_zeros(1, c, 1, 1)).expand(n, c, hp, wp).clone()
        xp[:, :, pad:pad + h, pad:pad + w] = x
    off = torch.randint(0, 2 * pad + 1, (2, n), generator=gen, device=dev)
    if crop_p < 1.0:
        off = torch.where(torch.rand(n, generator=gen, device=dev) >= crop_p, pad, off)
    cols = _grid(w, dev)[None, :]
    if flip_p > 0:
        flip = torch.rand(n, generator=gen, device=dev) < flip_p
        cols = torch.where(flip[:, None], (w - 1) - cols, cols)
    flat = (off[0][:, None, None] + _grid(h, dev)[None, :, None]) * wp + (off[1][:, None, None] + cols[:, None, :])
    out = xp.reshape(n, c, hp * wp).gather(2, flat.reshape(n, 1, h * w).expand(n, c, h * w))
    return out.view(n, c, h, w)


@dataclass(frozen=True)
class Augmenter:
    """Crop (pad `crop_pad`, probability `crop_p`) -> horizontal flip (p `flip_p`) -> Cutout.

    `fill` is the per-channel border value in normalised units (see module docstring).
    """
    crop_pad: int = 0
    crop_p: float = 1.0
    pad_mode: str = "constant"
    flip_p: float = 0.0
    cutout: int = 0
    fill: Optional[tuple[float, ...]] = None

    def __post_init__(self):
        if self.pad_mode not in PAD_MODES:
            raise ValueError(f"pad_mode must be one of {PAD_MODES}")
        object.__setattr__(self, "_fills", {})

    def _fill(self, x: torch.Tensor) -> Optional[torch.Tensor]:
        if self.fill is None:
            return None
        key = (str(x.device), x.dtype)
        if key not in self._fills:  # one host->device copy per device, not per batch
            self._fills[key] = torch.tensor(self.fill, dtype=x.dtype, device=x.device)
        return self._fills[key]

    def __call__(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        pad = self.crop_pad if self.crop_p > 0 else 0
        if pad > 0 or self.flip_p > 0:
            x = crop_flip(x, gen, pad, self._fill(x), self.pad_mode, self.crop_p, self.flip_p)
        if self.cutout > 0:
            x = cutout(x, gen, self.cutout)
        return x

    def describe(self) -> dict:
        return {"crop_pad": self.crop_pad, "crop_p": self.crop_p, "pad_mode": self.pad_mode,
                "flip_p": self.flip_p, "cutout": self.cutout}


def black_fill(mean, std) -> tuple[float, ...]:
    return tuple(float(-m / s) for m, s in zip(mean, std))
