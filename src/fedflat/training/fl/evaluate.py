"""Global-model evaluation: inference mode, large batches, eval-mode normalisation layers."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from ..data.array_dataset import ArrayDataset
from .flat import FlatModel


@torch.inference_mode()
def evaluate(fm: FlatModel, theta: torch.Tensor, buffers: torch.Tensor, data: ArrayDataset,
             split: str = "test", batch_size: int = 1024, limit: Optional[int] = None,
             num_classes: Optional[int] = None) -> dict:
    fm.load(theta, buffers)
    was_training = fm.module.training
    fm.module.eval()
    loss_sum, correct, n = 0.0, 0, 0
    k = num_classes or data.num_classes
    per_class_correct = torch.zeros(k, dtype=torch.long)
    per_class_total = torch.zeros(k, dtype=torch.long)
    for x, y in data.eval_batches(split, batch_size, limit):
        logits = fm.module(x)
        loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
        hit = logits.argmax(1) == y
        correct += int(hit.sum())
        n += len(y)
        per_class_total += torch.bincount(y.cpu(), minlength=k)
        per_class_correct += torch.bincount(y[hit].cpu(), minlength=k)
    fm.module.train(was_training)
    return {
        "loss": loss_sum / max(n, 1),
        "acc": correct / max(n, 1),
        "n": n,
        "class_acc": (per_class_correct.float() / per_class_total.clamp_min(1).float()).tolist(),
    }
