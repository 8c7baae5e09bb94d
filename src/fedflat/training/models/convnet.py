"""FedSynSAM's models: the dataset-distillation ConvNet-3 (CIFAR-10, CINIC-10) and a 2-layer MLP
(Fashion-MNIST), FedSynSAM Sec. VI-A ("we follow [30, 41] and adopt ConvNet"; "a two-layer MLP", width not
stated)."""
from __future__ import annotations

import math

import torch.nn as nn

from ...core.errors import choice_error
from .model_registry import MODELS

NORMS = ("instance", "none")


class ConvNet(nn.Module):
    """depth x [conv3x3(width, pad 1) -> instance norm (GroupNorm(width, width), affine) -> ReLU -> avgpool 2]
    -> linear head. No running statistics, so averaging and trajectory matching stay clean."""

    def __init__(self, input_shape, num_classes, width=128, depth=3, norm="instance"):
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}")
        c, h, w = input_shape
        layers: list[nn.Module] = []
        for i in range(depth):
            layers.append(nn.Conv2d(c if i == 0 else width, width, 3, padding=1))
            if norm == "instance":
                layers.append(nn.GroupNorm(width, width, affine=True))
            layers += [nn.ReLU(), nn.AvgPool2d(2)]
            h, w = h // 2, w // 2
        self.features = nn.Sequential(*layers, nn.Flatten())
        self.head = nn.Linear(width * h * w, num_classes)

    def forward(self, x):
        return self.head(self.features(x))


@MODELS.register("convnet_synsam")
def convnet_synsam(input_shape, num_classes, width: int = 128, depth: int = 3, norm: str = "instance") -> nn.Module:
    """320,010 parameters on 3x32x32 with 10 classes (DynaFed's ConvNet, which Sec. VI-A follows: 3 x [conv 3x3, 128, instance norm, ReLU, avg-pool 2])."""
    if norm not in NORMS:
        raise choice_error("model_params.convnet_synsam.norm", norm, NORMS)
    return ConvNet(input_shape, num_classes, width, depth, norm)


@MODELS.register("mlp2")
def mlp2(input_shape, num_classes, hidden: int = 200) -> nn.Module:
    """784-200-200-10 (FedAvg's mnist_2NN): the reading of Sec. VI-A's "two-layer MLP", whose width and depth are
    not stated, that the paper's Table II numbers support over 784-200-10 (a reading test written before its runs,
    docs/reproduction_methods.md#fedsynsam-mlp-reading): 199,210 parameters on 28x28."""
    return MLP(input_shape, num_classes, (hidden, hidden))


class MLP(nn.Module):
    def __init__(self, input_shape, num_classes, hidden=(200, 200)):
        super().__init__()
        dims = [math.prod(input_shape), *hidden]
        layers: list[nn.Module] = [nn.Flatten()]
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        return self.head(self.body(x))
