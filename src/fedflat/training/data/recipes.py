"""Dataset recipes: one decoder per file format, registered under a base name plus augmentation
variants, so a config names e.g. `cifar10` (crop + flip), `cifar10-plain` or `cifar10-cutout`.

A decoder returns {"train_x", "train_y", "test_x", "test_y"} (uint8 NCHW images, int64 labels)
and is run once through training/data/cache.py; every variant of a base name shares that cache.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import torch

from .augment import Augmenter, black_fill
from .array_dataset import DATASETS, ArrayDataset, channel_stats
from .cache import cached

Decoder = Callable[[Path, bool], tuple[list[Path], Callable[[], dict]]]

# Named augmentation policies; `fill` is filled in per dataset from its normalisation.
POLICIES: dict[str, Optional[dict]] = {
    "plain": None,
    "crop-flip": dict(crop_pad=4, flip_p=0.5),                         # FedNSAM / FedSOL CIFAR, SVHN
    "crop-flip-cutout": dict(crop_pad=4, flip_p=0.5, cutout=16),      # FedSOL CIFAR-10, MNIST (code)
    "crop-flip-reflect": dict(crop_pad=4, flip_p=0.5, pad_mode="reflect"),  # FedSOL CINIC-10 (code)
    "half": dict(crop_pad=4, crop_p=0.5, flip_p=0.5),                  # FedDyn lineage: each with p=0.5
    "flip": dict(flip_p=0.5),                                          # FedSOL MedMNIST
}


def make_augmenter(policy: str, mean, std) -> Optional[Augmenter]:
    spec = POLICIES[policy]
    return None if spec is None else Augmenter(fill=black_fill(mean, std), **spec)


def register_image_dataset(base: str, num_classes: int, decoder: Decoder, mean, std,
                           default: str, variants: dict[str, str], source: str,
                           cache_name: Optional[str] = None) -> None:
    """Register `base` with policy `default` and `base-<suffix>` for each suffix -> policy."""

    def loader_for(name: str, policy: str):
        def load(root: Path = Path("data"), download: bool = False) -> ArrayDataset:
            root = Path(root)
            sources, build = decoder(root, download)
            if mean is None:  # no published statistics: the training split's own, computed once with the cache
                def build_with_stats(build=build):
                    out = build()
                    out["mean"], out["std"] = channel_stats(out["train_x"])
                    return out

                t = cached(root, cache_name or base, sources, build_with_stats)
                m, s = t["mean"], t["std"]
            else:
                t = cached(root, cache_name or base, sources, build)
                m, s = torch.tensor(mean, dtype=torch.float32), torch.tensor(std, dtype=torch.float32)
            aug = make_augmenter(policy, m.tolist(), s.tolist())
            return ArrayDataset(
                name=name, train_x=t["train_x"], train_y=t["train_y"], test_x=t["test_x"], test_y=t["test_y"],
                num_classes=num_classes, mean=m, std=s, augment=aug,
                meta={"source": source, "augment": policy, "augment_params": aug.describe() if aug else None,
                      "normalise": {"mean": m.tolist(), "std": s.tolist()}, "files": [str(p) for p in sources]},
            )

        load.__doc__ = f"{name}: {source}; augmentation {policy!r}."
        return load

    DATASETS.add(base, loader_for(base, default))
    for suffix, policy in variants.items():
        DATASETS.add(f"{base}-{suffix}", loader_for(f"{base}-{suffix}", policy))
