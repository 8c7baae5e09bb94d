from __future__ import annotations

from typing import Callable

import torch.nn as nn

from ...core.registry import Registry

MODELS: Registry[Callable[..., nn.Module]] = Registry("model")


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, **kwargs) -> nn.Module:
    return MODELS.get(name, key="model")(input_shape=tuple(input_shape), num_classes=num_classes, **kwargs)


# Models whose local step is a few small GEMMs (FMNIST mlp2 at batch 128: 128x784x200): a second
# thread gains little, so their Snakemake jobs take one thread each and run side by side. Measured on
# 2 cores: one FedGAMMA mlp2 job on 2 threads 0.29 s per round; two 1-thread jobs at once 0.29-0.36 s
# per round each, i.e. ~1.8x the throughput (docs/reproduction.md).
SINGLE_THREAD_MODELS = frozenset({"linear", "mlp", "mlp2"})


def job_threads(model: str, threads: int) -> int:
    """Threads for one training job of `model` when the study asks for `threads` (threads_per_job)."""
    return 1 if model in SINGLE_THREAD_MODELS else threads


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
