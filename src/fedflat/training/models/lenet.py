"""LeNet-5 of FedNSAM / FedTOGA / FedSAGD (the FedDyn CIFAR CNN) and FedSOL's FedAvg CNN.

Convention for every model in this package: the final classifier layer is the module `head`,
so head-only parts (FedSOL's default perturbation) can select it by name.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .model_registry import MODELS


def _conv_out(size: int, k: int, pad: int) -> int:
    return (size + 2 * pad - k + 1) // 2  # conv (stride 1) then 2x2 max-pool


class ConvPoolNet(nn.Module):
    """Two conv(5x5) + ReLU + max-pool(2) blocks, then an MLP head; logits out."""

    def __init__(self, input_shape, num_classes, channels=(64, 64), hidden=(384, 192), pad=0, gray_to_rgb=False):
        super().__init__()
        c, h, w = input_shape
        self.gray_to_rgb = gray_to_rgb and c == 1
        cin = 3 if self.gray_to_rgb else c
        self.features = nn.Sequential(
            nn.Conv2d(cin, channels[0], 5, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels[0], channels[1], 5, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
        )
        fh, fw = _conv_out(_conv_out(h, 5, pad), 5, pad), _conv_out(_conv_out(w, 5, pad), 5, pad)
        dims = [channels[1] * fh * fw, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gray_to_rgb:
            x = x.expand(-1, 3, -1, -1)
        return self.head(self.body(self.features(x)))


@MODELS.register("lenet5")
def lenet5(input_shape, num_classes) -> nn.Module:
    """conv(C->64,5x5)-ReLU-pool2 -> conv(64->64,5x5)-ReLU-pool2 -> fc 1600-384-192-C (FedNSAM's and
    FedTOGA's LeNet, whose papers give no layers; = FedSAGD Table 5 CNN, 797,962 parameters for CIFAR-10). FedNSAM's code ends in
    log_softmax; logits are returned here (identical cross-entropy, see docs/datasets.md)."""
    return ConvPoolNet(input_shape, num_classes, (64, 64), (384, 192), pad=0)


MODELS.add("cnn_feddyn", lenet5)  # FedSAGD's name for the same network


@MODELS.register("cnn_fedavg")
def cnn_fedavg(input_shape, num_classes, gray_to_rgb: bool = False) -> nn.Module:
    """FedSOL's FedAvg CNN (McMahan et al.): conv(32,5x5,pad 2)-pool-conv(64,5x5,pad 2)-pool-fc512-C, no BN
    (FedSOL Sec. 4.1; layers from its code's FedAvgNetCIFAR/FedAvgNetMNIST). `gray_to_rgb` repeats 1-channel input to 3 channels
    as FedSOL's code does for MNIST/TissueMNIST."""
    return ConvPoolNet(input_shape, num_classes, (32, 64), (512,), pad=2, gray_to_rgb=gray_to_rgb)
