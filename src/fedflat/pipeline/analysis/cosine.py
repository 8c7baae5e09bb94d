"""Perturbation cosine (FedSynSAM Fig. 2, Sec. IV-A; FedSOL Fig. 3b):

    cos(δ_alg, ∇F(w))   with  w = the start point every client receives for the next round,

δ_alg = what the algorithm's perturbation part adds to w on the client's first mini-batch: it is
captured by calling the part's `gradient` with a recording grad_at and taking the first evaluation
point that differs from w (SAM: w + ρg/‖g‖; FedNSAM: w − ρm/‖m‖; ...). ∇F is the gradient of the
full training objective at the same w in eval mode: F = (1/N) Σ_i F_i over all clients' full local
data (`target: clients`, the federated objective; sample-weighted when training.aggregation is
`samples`) or the mean loss over the whole training split (`target: train`). The true global SAM
perturbation ρ∇F/‖∇F‖ has the direction of ∇F, so ρ does not enter.

Everything runs on copies (algorithm parts, server state, client state): a measurement never
changes the training trajectory. An algorithm without perturbation gives NaN (no δ to compare).
"""
from __future__ import annotations

import copy
import math
from dataclasses import replace

import torch

from ...training.algorithms import Part
from ...training.fl.batches import torch_generator
from .loaded_run import index_batches, mean_grad


def captured_perturbation(sim, cid: int, t: int, full_batch: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(w, δ) for client `cid` at the start of round t, without side effects on `sim`."""
    algo = copy.deepcopy(sim.algo)
    srv = replace(sim.srv, theta=sim.srv.theta.clone(), buffers=sim.srv.buffers.clone(),
                  state={k: v.clone() for k, v in sim.srv.state.items()}, extra=copy.deepcopy(sim.srv.extra), round=t)
    fm, spec = sim.fm, sim.spec
    start = algo.server.start_point(srv).clone()
    down: dict = {}
    for p in algo.parts:
        down.update(p.downlink(srv))
    idx = sim.client_idx[cid]
    state = {k: v.clone() for k, v in sim.store.get(cid).items()}
    ctx = replace(sim.client_context(cid, t, start, down, sim.lr_at(t), state), theta=srv.theta)
    if srv.buffers.numel():
        fm.set_buffers(srv.buffers)
    for p in algo.parts:
        p.client_begin(ctx)
    if full_batch:
        x, y = sim.data.train_batch(idx)
    else:
        x, y = sim.data.train_batch(sim.client_stream(cid, t).next(), torch_generator(spec.seed, t, cid, sim.device))
    loss_parts = [p for p in algo.parts if type(p).loss_term is not Part.loss_term]  # as the engine does

    def extra(logits, xx, yy):
        terms = [v for p in loss_parts if (v := p.loss_term(ctx, logits, xx, yy, fm.module)) is not None]
        return sum(terms) if terms else logits.new_zeros(())

    points: list[torch.Tensor] = []

    def recording_grad_at(point, batch):
        points.append(point.detach().clone())
        return fm.grad_at(point, batch[0], batch[1], extra if loss_parts else None)

    w = start.clone()
    algo.perturbation.gradient(ctx, w, (x, y), recording_grad_at)
    for p in points:
        d = p - start
        if bool((d != 0).any()):
            return start, d
    return start, torch.zeros_like(start)


def global_gradient(sim, w: torch.Tensor, target: str = "clients", batch_size: int = 1024) -> torch.Tensor:
    fm = sim.fm
    fm.load(w, sim.srv.buffers)
    if target == "train":
        n = len(sim.data.train_y)
        return mean_grad(fm, w, index_batches(sim.data, torch.arange(n, device=sim.device), batch_size))[1]
    g = torch.zeros_like(w)
    sizes = torch.tensor([len(i) for i in sim.client_idx], dtype=torch.float64)
    wts = sizes / sizes.sum() if sim.spec.aggregation == "samples" else torch.full_like(sizes, 1 / len(sizes))
    for idx, a in zip(sim.client_idx, wts.tolist()):
        g.add_(mean_grad(fm, w, index_batches(sim.data, idx, batch_size))[1], alpha=a)
    return g


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    na, nb = float(a.norm()), float(b.norm())
    if na == 0.0 or nb == 0.0:
        return math.nan
    return float(torch.dot(a, b)) / (na * nb)
