"""ResNet-18 / ResNet-10 (BasicBlock) with the normalisation and stem named in config.

  norm:  gn          GroupNorm(gn_groups=2, C) everywhere (FedDyn/FL-Simulator ResNet-18-GN; FedTOGA, FedSAGD)
         bn          BatchNorm2d everywhere (torchvision)
         bn_gnstem   GroupNorm(2, 64) in the stem, BatchNorm2d in blocks and shortcuts (FedNSAM resnet_bn.py)
         bn_nostats  BatchNorm2d(track_running_stats=False): batch statistics also at eval (FedSOL code)
  stem:  cifar       conv3x3 stride 1, no max-pool (FedNSAM, FedSOL)
         imagenet    conv7x7 stride 2 + max-pool 3x3/2 (torchvision; FedTOGA, FedSAGD "7x7 first conv")

ImageNet stem + GN + 10 classes: 11,181,642 parameters (torchvision resnet18 with a 10-way head).
"""
from __future__ import annotations

import torch.nn as nn

from ...core.errors import choice_error
from .model_registry import MODELS

NORMS = ("gn", "bn", "bn_gnstem", "bn_nostats")
STEMS = ("cifar", "imagenet")


def _norm(kind: str, c: int, groups: int) -> nn.Module:
    if kind == "gn":
        return nn.GroupNorm(groups, c)
    if kind == "bn_nostats":
        return nn.BatchNorm2d(c, track_running_stats=False)
    return nn.BatchNorm2d(c)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, norm):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.n1 = norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.n2 = norm(cout)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), norm(cout))
                         if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        out = self.relu(self.n1(self.conv1(x)))
        out = self.n2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, input_shape, num_classes, blocks=(2, 2, 2, 2), norm="gn", stem="cifar", gn_groups=2):
        super().__init__()
        block_norm = lambda c: _norm("bn" if norm == "bn_gnstem" else norm, c, gn_groups)
        stem_norm = nn.GroupNorm(2, 64) if norm == "bn_gnstem" else block_norm(64)
        cin = input_shape[0]
        if stem == "imagenet":
            self.stem = nn.Sequential(nn.Conv2d(cin, 64, 7, 2, 3, bias=False), stem_norm, nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
        else:
            self.stem = nn.Sequential(nn.Conv2d(cin, 64, 3, 1, 1, bias=False), stem_norm, nn.ReLU(inplace=True))
        layers, c = [], 64
        for i, n in enumerate(blocks):
            cout = 64 * 2 ** i
            for j in range(n):
                layers.append(BasicBlock(c, cout, 2 if (j == 0 and i > 0) else 1, block_norm))
                c = cout
        self.layers = nn.Sequential(*layers)
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c, num_classes)
        for m in self.modules():  # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        return self.head(self.pool(self.layers(self.stem(x))))


def _build(name, blocks, input_shape, num_classes, norm, stem, gn_groups):
    if norm not in NORMS:
        raise choice_error(f"model_params.{name}.norm", norm, NORMS)
    if stem not in STEMS:
        raise choice_error(f"model_params.{name}.stem", stem, STEMS)
    return ResNet(input_shape, num_classes, blocks, norm, stem, gn_groups)


@MODELS.register("resnet18")
def resnet18(input_shape, num_classes, norm: str = "gn", stem: str = "cifar", gn_groups: int = 2) -> nn.Module:
    return _build("resnet18", (2, 2, 2, 2), input_shape, num_classes, norm, stem, gn_groups)


@MODELS.register("resnet10")
def resnet10(input_shape, num_classes, norm: str = "gn", stem: str = "cifar", gn_groups: int = 2) -> nn.Module:
    return _build("resnet10", (1, 1, 1, 1), input_shape, num_classes, norm, stem, gn_groups)
