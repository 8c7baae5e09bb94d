from __future__ import annotations

from typing import Callable

import torch.nn as nn

from ..registry import Registry

MODELS: Registry[Callable[..., nn.Module]] = Registry("model")


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, **kwargs) -> nn.Module:
    return MODELS.get(name, key="model")(input_shape=tuple(input_shape), num_classes=num_classes, **kwargs)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


from . import small  # noqa: E402,F401  (registers the models)
from . import lenet, resnet, vgg, convnet, lstm, vit, pretrained  # noqa: E402,F401  (paper models)
