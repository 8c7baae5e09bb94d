"""Stand-ins for the papers' datasets and models: digits-sized ones for `tiny` scale (CI), and small
from-scratch ViTs for the pretrained transformers that no CPU can run at `reduced` scale.

`digits_as_<name>` is scikit-learn's digits (ships with a dependency, no download) with a fixed pixel
permutation seeded by the name, and `mlp_as_<name>` a one-hidden-layer MLP. Every paper dataset/model gets its own stand-in *name*, so the tiny DAG keeps the paper's
shape: a CIFAR-10 column and a CIFAR-100 column stay two sets of runs. Numbers produced with
stand-ins say nothing about the paper's numbers; the rendered tables state it.
"""
from __future__ import annotations

import dataclasses
import zlib

from ...training.data.array_dataset import DATASETS
from ...training.models.model_registry import MODELS

PAPER_DATASETS = ("cifar10", "cifar10-cutout", "cifar10-half", "cifar100", "cifar100-half", "mnist", "mnist-aug", "mnist-cutout",
                  "fmnist", "emnist-l10", "svhn", "cinic10", "tiny_imagenet", "pathmnist", "tissuemnist",
                  "shakespeare")
PAPER_MODELS = ("lenet5", "cnn_fedavg", "cnn_feddyn", "swin_s_pretrained", "swin_b_pretrained", "vit_b16_pretrained", "convnet_synsam", "mlp2", "vgg11", "resnet18", "resnet10", "char_lstm",
                "vit_small", "linear")
STANDIN_HIDDEN = 32


def standin_name(name: str) -> str:
    return f"digits_as_{name}"


def standin_model(name: str) -> str:
    return f"mlp_as_{name}"


_DIGITS = []  # decoded once per process: tiny-scale test suites load it hundreds of times


def _dataset_standin(original: str):
    def load(root=None, download: bool = False):
        import torch

        if not _DIGITS:
            _DIGITS.append(DATASETS.get("digits")(root=root, download=False))
        d = _DIGITS[0]
        # a fixed pixel permutation per stand-in: same difficulty, different task, so two stand-ins
        # (CIFAR-10's and CIFAR-100's) give different numbers instead of identical columns
        seed = zlib.crc32(original.encode())
        n = d.train_x[0].numel()
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
        shuffle = lambda x: x.reshape(len(x), -1)[:, perm].reshape(x.shape)
        return dataclasses.replace(d, name=standin_name(original), train_x=shuffle(d.train_x), test_x=shuffle(d.test_x),
                                   meta={**d.meta, "standin_for": original, "pixel_permutation_seed": seed})

    return load


def _model_standin(original: str):
    def build(input_shape, num_classes, **_ignored):
        return MODELS.get("mlp")(input_shape=input_shape, num_classes=num_classes, hidden=STANDIN_HIDDEN, depth=1)

    return build


# Reduced scale: FedNSAM Table 3's ImageNet-22k-pretrained Swin-S/Swin-B/ViT-B at 224 px cost ~15 GFLOPs a
# forward pass. `vit_as_<name>` is the small ViT of training/models/vit.py trained from scratch at the dataset's own
# resolution, one name per paper model so the table keeps its columns; the catalog's
# `scales.reduced.model_params` sizes each one (and its note says so).
PRETRAINED_TRANSFORMERS = ("swin_s_pretrained", "swin_b_pretrained", "vit_b16_pretrained")


def reduced_transformer(name: str) -> str:
    return f"vit_as_{name}"


NATURAL_STANDIN_GROUPS = 100  # Shakespeare's 100 roles


def _natural_standin(original: str, groups: int = NATURAL_STANDIN_GROUPS):
    """The digits stand-in of a dataset with natural clients (Shakespeare roles): the same permuted
    digits, with `groups` label-skewed natural clients (training samples sorted by label, cut into
    `groups` contiguous runs, so each "role" holds one or two classes), so the `natural` partition
    works at tiny scale exactly as on the real data."""
    base = _dataset_standin(original)

    def load(root=None, download: bool = False):
        import numpy as np
        import torch

        d = base(root, download)
        order = np.argsort(d.train_y.numpy(), kind="stable")
        train_groups = np.empty(len(order), np.int64)
        for g, chunk in enumerate(np.array_split(order, groups)):
            train_groups[chunk] = g
        test_groups = np.arange(len(d.test_y)) % groups
        return dataclasses.replace(d, meta={**d.meta, "train_groups": torch.from_numpy(train_groups),
                                            "test_groups": torch.from_numpy(test_groups),
                                            "clients": [f"role{g}" for g in range(groups)], "natural_partition": True})

    return load


if standin_name("shakespeare") not in DATASETS:
    DATASETS.add(standin_name("shakespeare"), _natural_standin("shakespeare"))

for _d in PAPER_DATASETS:
    if standin_name(_d) not in DATASETS:
        DATASETS.add(standin_name(_d), _dataset_standin(_d))
for _m in PAPER_MODELS:
    if standin_model(_m) not in MODELS:
        MODELS.add(standin_model(_m), _model_standin(_m))
for _m in PRETRAINED_TRANSFORMERS:
    if reduced_transformer(_m) not in MODELS:
        MODELS.add(reduced_transformer(_m), MODELS.get("vit_small"))
