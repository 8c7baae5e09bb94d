"""Global sharpness (FedNSAM Fig. 2b, which plots it without a definition; read as SAM sharpness):

    S_ρ(θ) = F(θ + ρ ∇F(θ)/‖∇F(θ)‖) − F(θ)

F = mean cross-entropy of the global model on a fixed, non-augmented training subset, eval mode.
It is the first-order solution of SAM's inner max, so S_ρ ≈ ρ‖∇F‖ + O(ρ²) and ≥ 0 for small ρ.
"""
from __future__ import annotations

import torch

from ...training.fl.flat import FlatModel
from .loaded_run import Batches, mean_grad, mean_loss


def global_sharpness(fm: FlatModel, theta: torch.Tensor, batches: Batches, rho: float) -> dict:
    loss, g = mean_grad(fm, theta, batches)
    gn = float(g.norm())
    if gn == 0.0:  # a stationary point: no ascent direction, the first-order sharpness is 0
        return {"sharpness": 0.0, "sharpness_loss": loss, "sharpness_grad_norm": 0.0}
    pert = mean_loss(fm, theta + (rho / gn) * g, batches)
    fm.flat.copy_(theta)
    return {"sharpness": pert - loss, "sharpness_loss": loss, "sharpness_grad_norm": gn}
