"""The embedded default: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes).

Ships inside scikit-learn, so the default study needs no download. The split is a fixed,
stratified 80/20 train/test split (seed 0) so every run sees the same test set.
"""
from __future__ import annotations

import numpy as np
import torch

from .array_dataset import DATASETS, ArrayDataset, channel_stats

TEST_FRACTION = 0.2
SPLIT_SEED = 0


def stratified_split(y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        n_test = int(round(len(idx) * test_fraction))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


@DATASETS.register("digits")
def load_digits(root=None, download: bool = False) -> ArrayDataset:
    from sklearn.datasets import load_digits as sk_digits

    bunch = sk_digits()
    # pixel values are 0..16; store as uint8 on the 0..255 scale like every other image set
    x = np.round(bunch.images * (255.0 / 16.0)).astype(np.uint8)[:, None, :, :]
    y = bunch.target.astype(np.int64)
    tr, te = stratified_split(y, TEST_FRACTION, SPLIT_SEED)
    train_x = torch.from_numpy(x[tr])
    mean, std = channel_stats(train_x)
    return ArrayDataset(
        name="digits",
        train_x=train_x,
        train_y=torch.from_numpy(y[tr]),
        test_x=torch.from_numpy(x[te]),
        test_y=torch.from_numpy(y[te]),
        num_classes=10,
        mean=mean,
        std=std,
        augment=None,
        meta={"source": "sklearn.datasets.load_digits", "split_seed": SPLIT_SEED},
    )
