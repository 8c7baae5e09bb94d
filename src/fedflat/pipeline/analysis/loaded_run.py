"""Load a trained run and fixed evaluation subsets: the common input of every analysis command."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from ...core.errors import ConfigError
from ...core.spec import RunSpec
from ...core.util.safe_load import load_tensors
from ...training.data import ArrayDataset, load_dataset
from ...training.fl.flat import FlatModel
from ...training.fl.snapshots import global_snapshot
from ...training.models import build_model

_SUBSET_TAG = 0x4E55

Batches = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass
class LoadedRun:
    spec: RunSpec
    data: ArrayDataset
    fm: FlatModel
    theta: torch.Tensor
    buffers: torch.Tensor


def load_run(run_dir: str | Path, data_root: str | Path = "data", device: str = "cpu",
             download: bool = False, round: int = 0) -> LoadedRun:
    """The final global model of a run (model.pt), or with `round` its end-of-round snapshot, on its dataset,
    ready for analysis."""
    path = global_snapshot(run_dir, round) if round else Path(run_dir) / "model.pt"
    if not path.exists():
        why = "not in the run's training.snapshot_rounds, or the run is unfinished" if round else "train the run first"
        raise ConfigError(f"run model missing: {path} ({why})")
    ck = load_tensors(path, "run model", advice="train the run again", keys=("spec", "theta", "buffers"))
    spec = RunSpec.from_dict(ck["spec"])
    data = load_dataset(spec.dataset, data_root, download).to(device)
    module = build_model(spec.model, data.input_shape, data.num_classes, **spec.model_kwargs)
    fm = FlatModel(module, device)
    if ck["theta"].numel() != fm.numel:
        raise ConfigError(f"{path}: {ck['theta'].numel()} parameters but model {spec.model!r} has {fm.numel}")
    theta = ck["theta"].to(device=device, dtype=fm.flat.dtype)
    buffers = ck["buffers"].to(device)
    fm.load(theta, buffers)
    return LoadedRun(spec, data, fm, theta, buffers)


def subset_indices(n_total: int, n: int, seed: int) -> np.ndarray:
    """A fixed, seeded subset of a split (sorted; all samples when n <= 0 or n >= n_total)."""
    if n <= 0 or n >= n_total:
        return np.arange(n_total)
    rng = np.random.default_rng([seed, _SUBSET_TAG])
    return np.sort(rng.choice(n_total, size=n, replace=False))


def fixed_batches(data: ArrayDataset, split: str, n: int, seed: int, batch_size: int) -> Batches:
    """Non-augmented, normalised mini-batches of a fixed subset, in a fixed order (the operator
    must not change between power iterations: PyHessian, Yao et al. 2020, computes on fixed batches)."""
    if split not in ("train", "test"):
        raise ConfigError(f"split: {split!r} not allowed; allowed: train, test")
    if batch_size < 1:
        raise ConfigError(f"batch_size: must be >= 1, got {batch_size}")
    xs, ys = (data.train_x, data.train_y) if split == "train" else (data.test_x, data.test_y)
    idx = torch.as_tensor(subset_indices(len(ys), n, seed), device=ys.device)
    out = []
    for s in range(0, len(idx), batch_size):
        b = idx[s : s + batch_size]
        out.append((data.normalise(xs[b]), ys[b]))
    return out


def index_batches(data: ArrayDataset, idx: torch.Tensor, batch_size: int) -> Batches:
    """Non-augmented training batches over given indices (one client's data)."""
    return [(data.normalise(data.train_x[idx[s : s + batch_size]]), data.train_y[idx[s : s + batch_size]])
            for s in range(0, len(idx), batch_size)]


class eval_mode:
    """Context: module in eval mode (BN running statistics, no dropout), restored afterwards."""

    def __init__(self, module: torch.nn.Module):
        self.module = module

    def __enter__(self):
        self.was = self.module.training
        self.module.eval()
        return self.module

    def __exit__(self, *exc):
        self.module.train(self.was)


def mean_loss(fm: FlatModel, point: torch.Tensor, batches: Batches) -> float:
    """Sample-weighted mean cross-entropy at `point` over the batches (eval mode, no grad)."""
    fm.flat.copy_(point)
    total, n = 0.0, 0
    with eval_mode(fm.module), torch.no_grad():
        for x, y in batches:
            total += F.cross_entropy(fm.module(x), y, reduction="sum").item()
            n += len(y)
    return total / max(n, 1)


def mean_grad(fm: FlatModel, point: torch.Tensor, batches: Batches) -> tuple[float, torch.Tensor]:
    """Loss and flat gradient of the sample-weighted mean cross-entropy over all batches (eval mode):
    the full-batch gradient, accumulated batch by batch."""
    fm.flat.copy_(point)
    g = torch.zeros_like(point)
    total, n = 0.0, sum(len(y) for _, y in batches)
    with eval_mode(fm.module):
        for x, y in batches:
            fm.grad.zero_()
            loss = F.cross_entropy(fm.module(x), y, reduction="sum")
            loss.backward()
            g.add_(fm.grad)
            total += loss.item()
    fm.grad.zero_()
    return total / max(n, 1), g / max(n, 1)


def check_positive_int(key: str, v, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ConfigError(f"{key}: must be an integer >= {minimum}, got {v!r}")
    return v


def check_number(key: str, v, low: Optional[float] = None, low_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise ConfigError(f"{key}: expected a number, got {v!r}")
    if low is not None and (v <= low if low_open else v < low):
        raise ConfigError(f"{key}: must be {'>' if low_open else '>='} {low:g}, got {v!r}")
    return float(v)
