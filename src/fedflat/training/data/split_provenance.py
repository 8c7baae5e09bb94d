"""What a data set's test split is, in the sentence every number measured on it carries (the leaderboard's
protocol line, every evidence record). Fashion-MNIST's matters most: offline, its test split is cut from the
official training set (../shared/data/real_data.py)."""
from __future__ import annotations

PROVENANCE = {
    "fmnist": ("Fashion-MNIST as shipped offline (shared/data/real_data.py): training split = the first 50,000 images "
               "of the official training set; test split = its last 10,000 images, held out from the training set "
               "(the official test file is not available offline)"),
    "mnist": "MNIST: the official 60,000 training / 10,000 test images",
    "cifar10": "CIFAR-10: the official 50,000 training / 10,000 test images",
    "digits": "scikit-learn digits (8x8), a stand-in at tiny scale",
}


def provenance(dataset: str) -> str:
    """The sentence for `dataset` (an augmentation variant such as fmnist-plain shares its base's)."""
    if dataset.startswith("digits"):
        return f"{PROVENANCE['digits']} ({dataset})"
    return PROVENANCE.get(dataset.split("-")[0], f"{dataset}: the data set's own test split")
