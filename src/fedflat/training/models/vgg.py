"""VGG-11 without batch norm (configuration A: 8 conv layers, 64|128|256x2|512x2|512x2, max-pool
after each block), with the classifier of the paper named by `variant`:

  fednsam  512 -> h -> C with h = 100 for <= 10 classes, 256 otherwise (FedNSAM's code; the paper names VGG-11 only)
  fedsol   512 -> 512 -> 512 -> C (FedSOL App. B.1); inputs smaller than 32x32 are upsampled to 32
"""
from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

from ...core.errors import choice_error
from .model_registry import MODELS

CFG11 = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
VARIANTS = ("fednsam", "fedsol")


class VGG(nn.Module):
    def __init__(self, input_shape, num_classes, hidden: tuple[int, ...], min_size: int = 32):
        super().__init__()
        c, h, w = input_shape
        self.min_size = min_size
        h, w = max(h, min_size), max(w, min_size)  # forward() upsamples small inputs
        layers: list[nn.Module] = []
        for v in CFG11:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
                h, w = h // 2, w // 2
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers, nn.Flatten())
        dims = [512 * h * w, *hidden]
        body: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            body += [nn.Linear(a, b), nn.ReLU(inplace=True)]
        self.body = nn.Sequential(*body)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        if x.shape[-1] < self.min_size or x.shape[-2] < self.min_size:
            x = F.interpolate(x, size=(max(x.shape[-2], self.min_size), max(x.shape[-1], self.min_size)),
                              mode="bilinear", align_corners=False)
        return self.head(self.body(self.features(x)))


@MODELS.register("vgg11")
def vgg11(input_shape, num_classes, variant: str = "fednsam") -> nn.Module:
    if variant not in VARIANTS:
        raise choice_error("model_params.vgg11.variant", variant, VARIANTS)
    hidden = ((100,) if num_classes <= 10 else (256,)) if variant == "fednsam" else (512, 512)
    return VGG(input_shape, num_classes, hidden)
