"""Small models for the embedded default and for tests."""
from __future__ import annotations

import math

import torch.nn as nn

from .model_registry import MODELS


@MODELS.register("mlp")
def mlp(input_shape, num_classes, hidden: int = 200, depth: int = 2) -> nn.Module:
    """MLP with `depth` hidden ReLU layers (FedSynSAM's 2-layer MLP has hidden 200)."""
    dims = [math.prod(input_shape)] + [hidden] * depth
    layers: list[nn.Module] = [nn.Flatten()]
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(dims[-1], num_classes))
    return nn.Sequential(*layers)


@MODELS.register("cnn_small")
def cnn_small(input_shape, num_classes, width: int = 16) -> nn.Module:
    """Two 3x3 conv blocks + linear head; sized for 8x8 digits, works for any HxW >= 4."""
    c, h, w = input_shape
    return nn.Sequential(
        nn.Conv2d(c, width, 3, padding=1), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(2 * width * (h // 2) * (w // 2), 64), nn.ReLU(),
        nn.Linear(64, num_classes),
    )


@MODELS.register("linear")
def linear(input_shape, num_classes) -> nn.Module:
    """Multinomial logistic regression: convex, used by tests with closed-form gradients."""
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), num_classes))
