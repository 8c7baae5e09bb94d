"""In-memory dataset: whole splits as tensors, mini-batches by indexing.

Images are kept as uint8 (N, C, H, W) and normalised per batch on the training device, so a
round never builds a DataLoader or touches PIL. Sequence data keeps int64 tokens.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch

from ...core.registry import Registry

# A loader takes (root, download) and returns an ArrayDataset.
DATASETS: Registry[Callable[..., "ArrayDataset"]] = Registry("dataset")

Augment = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


@dataclass
class ArrayDataset:
    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    mean: Optional[torch.Tensor] = None  # per channel, applied after /255 for uint8 images
    std: Optional[torch.Tensor] = None
    augment: Optional[Augment] = None  # train-time, on normalised float batches
    meta: dict = field(default_factory=dict)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.train_x.shape[1:])

    def to(self, device: torch.device | str) -> "ArrayDataset":
        move = lambda t: None if t is None else t.to(device)
        return ArrayDataset(
            self.name, move(self.train_x), move(self.train_y), move(self.test_x), move(self.test_y),
            self.num_classes, move(self.mean), move(self.std), self.augment, dict(self.meta),
        )

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.uint8:
            x = x.float().div_(255.0)
            if self.mean is not None:
                shape = (1, -1) + (1,) * (x.dim() - 2)
                x = (x - self.mean.view(shape)) / self.std.view(shape)
        return x

    def train_batch(self, idx: torch.Tensor, gen: Optional[torch.Generator] = None):
        x = self.normalise(self.train_x[idx])
        if self.augment is not None and gen is not None:
            x = self.augment(x, gen)
        return x, self.train_y[idx]

    def eval_batches(self, split: str = "test", batch_size: int = 2048, limit: Optional[int] = None):
        xs, ys = (self.test_x, self.test_y) if split == "test" else (self.train_x, self.train_y)
        n = len(ys) if limit is None else min(limit, len(ys))
        for s in range(0, n, batch_size):
            yield self.normalise(xs[s : min(s + batch_size, n)]), ys[s : min(s + batch_size, n)]


def load_dataset(name: str, root: str | Path = "data", download: bool = False) -> ArrayDataset:
    loader = DATASETS.get(name, key="dataset")
    return loader(root=Path(root), download=download)


def channel_stats(x_uint8: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean/std of a uint8 image tensor (N, C, H, W), on the [0, 1] scale."""
    x = x_uint8.float().div(255.0)
    dims = [0] + list(range(2, x.dim()))
    return x.mean(dims), x.std(dims).clamp_min(1e-6)


# Register the embedded dataset(s).
