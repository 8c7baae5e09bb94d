"""Trajectory-matching distillation (FedSynSAM Sec. IV-B, Eqs. 9-13; Alg. 1 lines 21-27; MTT).

From the recorded global models W = (w_0, …, w_n) learn images X (labels Y fixed, class-balanced)
and a scalar step size α so that s full-batch GD steps on {X, Y} from w_r land near w_{r+s}:

    ŵ_0 = w_r,  ŵ_{j+1} = ŵ_j − α ∇F(ŵ_j; X, Y)   (j < s),   L = ‖ŵ_s − w_{r+s}‖² [/ ‖w_r − w_{r+s}‖²]
    X ← X − η_x ∇_X L,   α ← α − η_α ∇_α L        (r uniform in {0, …, n−s}, M iterations)

Gradients flow through the s unrolled steps (second order: create_graph=True). Pure functions of a
`forward(w_flat, x) -> logits`, so they are tested without the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from .distill_settings import DistillConfig

Forward = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
_SEG_TAG = 0x5E6
_INIT_TAG = 0x1417


def flat_forward(module: torch.nn.Module, names, slices, shapes) -> Forward:
    """logits = module(x) with the trainable parameters taken from a flat vector (differentiably).
    Buffers are passed as copies, so BatchNorm statistics of the real module are never touched."""
    buffers = dict(module.named_buffers())

    def forward(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        params = {n: w[a:b].view(shape) for n, (a, b), shape in zip(names, slices, shapes)}
        params.update({n: b.clone() for n, b in buffers.items()})
        return torch.func.functional_call(module, params, (x,))

    return forward


def init_synthetic(ipc: int, num_classes: int, input_shape, seed: int, device="cpu", dtype=torch.float32):
    """Gaussian-noise images in the model's (normalised) input space and hard, class-balanced labels."""
    g = torch.Generator(device="cpu")
    g.manual_seed(int(np.random.default_rng([seed, _INIT_TAG]).integers(0, 2**62)))
    x = torch.randn((ipc * num_classes, *input_shape), generator=g, dtype=dtype).to(device)
    y = torch.arange(num_classes, device=device).repeat_interleave(ipc)
    return x, y


def segment_loss(forward: Forward, traj: torch.Tensor, r: int, x, y, alpha, steps: int, kind: str,
                 create_graph: bool = True) -> torch.Tensor:
    """L for the segment w_r → w_{r+s} (differentiable in x and alpha when create_graph)."""
    w = traj[r].detach().clone().requires_grad_(True)
    with torch.enable_grad():
        for _ in range(steps):
            loss = F.cross_entropy(forward(w, x), y)
            (g,) = torch.autograd.grad(loss, w, create_graph=create_graph)
            w = w - alpha * g
        target = traj[r + steps]
        out = ((w - target) ** 2).sum()
        if kind == "normalized":
            out = out / ((traj[r] - target) ** 2).sum().clamp_min(torch.finfo(traj.dtype).tiny)
    return out


def matching_loss(forward: Forward, traj: torch.Tensor, x, y, alpha: float, steps: int, kind: str) -> float:
    """Mean of L over every segment of the trajectory (an evaluation, no graph kept)."""
    a = torch.as_tensor(alpha, dtype=traj.dtype, device=traj.device)
    vals = [segment_loss(forward, traj, r, x.detach(), y, a, steps, kind, create_graph=False).item()
            for r in range(traj.shape[0] - steps)]
    return float(np.mean(vals))


@dataclass
class DistillResult:
    x: torch.Tensor
    y: torch.Tensor
    alpha: float
    losses: list = field(default_factory=list)  # L of the sampled segment, per iteration


def distill(forward: Forward, traj: torch.Tensor, x0: torch.Tensor, y: torch.Tensor, alpha0: float,
            cfg: DistillConfig, seed: int) -> DistillResult:
    n = traj.shape[0]
    if n < cfg.steps + 1:
        raise ValueError(f"trajectory of {n} models is shorter than syn_steps + 1 = {cfg.steps + 1}")
    rng = np.random.default_rng([seed, _SEG_TAG])
    x = x0.detach().clone().requires_grad_(True)
    alpha = torch.tensor(float(alpha0), dtype=traj.dtype, device=traj.device, requires_grad=True)
    if cfg.optim == "adam":
        opt_x = torch.optim.Adam([x], lr=cfg.lr_img)
    else:
        opt_x = torch.optim.SGD([x], lr=cfg.lr_img, momentum=cfg.momentum)
    opt_a = torch.optim.SGD([alpha], lr=cfg.lr_lr, momentum=cfg.momentum)
    losses = []
    for _ in range(cfg.iters):
        r = int(rng.integers(0, n - cfg.steps))  # start in {0, …, n−1−s}
        loss = segment_loss(forward, traj, r, x, y, alpha, cfg.steps, cfg.loss)
        opt_x.zero_grad(set_to_none=True)
        opt_a.zero_grad(set_to_none=True)
        loss.backward()
        opt_x.step()
        opt_a.step()
        losses.append(loss.item())
    return DistillResult(x.detach(), y, float(alpha.detach()), losses)
