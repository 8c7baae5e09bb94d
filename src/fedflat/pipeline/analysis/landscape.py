"""Loss landscapes along fixed directions: F(θ + Σ_k c_k d_k) on a grid of coefficients c
(Li et al. 2018; FedNSAM Fig. 1/7, FedSynSAM Fig. 1/4). Eval mode, non-augmented fixed subsets.

Grid points are evaluated `chunk` at a time: the parameters of a chunk of points are stacked and
the model runs once under torch.func.vmap (one larger job instead of many small ones). chunk=1
uses the ordinary forward, so the origin reproduces the model's loss bit for bit.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from ...core.errors import ConfigError
from ...training.fl.flat import FlatModel
from .loaded_run import Batches, eval_mode


def _stats_plain(fm: FlatModel, point: torch.Tensor, batches: Batches) -> tuple[np.ndarray, np.ndarray]:
    fm.flat.copy_(point)
    loss, correct = 0.0, 0
    for x, y in batches:
        logits = fm.module(x)
        loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += int((logits.argmax(1) == y).sum())
    return np.array([loss]), np.array([correct])


def _stats_vmap(fm: FlatModel, points: torch.Tensor, batches: Batches) -> tuple[np.ndarray, np.ndarray]:
    c = points.shape[0]
    params = {n: points[:, a:b].reshape(c, *p.shape) for n, (a, b), p in zip(fm.names, fm.slices, fm.params)}
    fwd = vmap(lambda ps, x: functional_call(fm.module, ps, (x,)), in_dims=(0, None))
    loss = torch.zeros(c, dtype=torch.float64, device=points.device)
    correct = torch.zeros(c, dtype=torch.long, device=points.device)
    for x, y in batches:
        logits = fwd(params, x)  # (c, B, classes)
        yy = y.expand(c, -1)
        loss += F.cross_entropy(logits.flatten(0, 1), yy.flatten(), reduction="none").view(c, -1).sum(1).double()
        correct += (logits.argmax(-1) == yy).sum(1)
    return loss.cpu().numpy(), correct.cpu().numpy()


@torch.no_grad()
def evaluate_points(fm: FlatModel, theta: torch.Tensor, dirs: list[torch.Tensor], coords: np.ndarray,
                    batches: Batches, chunk: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Mean loss and accuracy at θ + coords @ dirs for every row of coords (P, len(dirs))."""
    if chunk < 1:
        raise ConfigError(f"landscape.chunk: must be an integer >= 1, got {chunk!r}")
    n = sum(len(y) for _, y in batches)
    D = torch.stack(dirs)  # (k, numel)
    C = torch.as_tensor(coords, dtype=theta.dtype, device=theta.device)
    losses, accs = np.zeros(len(coords)), np.zeros(len(coords))
    with eval_mode(fm.module):
        for s in range(0, len(coords), chunk):
            pts = theta.unsqueeze(0) + C[s : s + chunk] @ D
            if len(pts) == 1:
                l, k = _stats_plain(fm, pts[0], batches)
            else:
                l, k = _stats_vmap(fm, pts, batches)
            losses[s : s + len(pts)] = l / n
            accs[s : s + len(pts)] = k / n
    fm.flat.copy_(theta)
    return losses, accs


def surface(fm: FlatModel, theta: torch.Tensor, dirs: list[torch.Tensor], axis: np.ndarray,
            batch_sets: dict[str, Batches], chunk: int = 16) -> dict[str, np.ndarray]:
    """1-D (one direction) or 2-D (two directions, grid axis x axis) surfaces for each data set.
    2-D arrays are indexed [j, i] = coefficient (axis[i], axis[j]) on (d1, d2), i.e. meshgrid 'xy'."""
    if len(dirs) == 1:
        coords = axis[:, None]
        shape = (len(axis),)
    elif len(dirs) == 2:
        X, Y = np.meshgrid(axis, axis)
        coords = np.stack([X.ravel(), Y.ravel()], 1)
        shape = (len(axis), len(axis))
    else:
        raise ConfigError(f"landscape: 1 or 2 directions, got {len(dirs)}")
    out: dict[str, np.ndarray] = {"axis": axis}
    for name, batches in batch_sets.items():
        loss, acc = evaluate_points(fm, theta, dirs, coords, batches, chunk)
        out[f"{name}_loss"] = loss.reshape(shape)
        out[f"{name}_acc"] = acc.reshape(shape)
    return out
