"""FedSynSAM's local step (Alg. 1 lines 7-13; Sec. IV-C, Eq. 14).

    g = ∇F(w; ξ)                                   t ≤ R  (exactly FedSAM: no D_syn yet)
    g = β ∇F(w; ξ) + (1 − β) ∇F(w; ζ)              t > R  (raw gradients mixed, then normalised)
    w̃ = w + ρ g/‖g‖,   step direction ∇F(w̃; ξ)     (descent on the local batch ξ only)

ξ: the local mini-batch (same for ascent and descent); ζ: the synthetic set D_syn, whole by default
(Eq. 11 uses the whole set; `syn_batch` draws a random subset per step instead). The perturbation is recomputed at
every local step. Three forward/backward passes per step once D_syn is in use, two before.
"""
from __future__ import annotations

import numpy as np
import torch

from ..algorithms.parts import Param, Perturbation, safe_unit, sam_form
from ..algorithms.perturbations import PERTURBATIONS, SAM_EPS
from ...core.errors import ConfigError
from .distill_settings import SYN_PARAMS
from .source import SyntheticSource

_ZETA_TAG = 0x2E7A


@PERTURBATIONS.register("synsam")
class SynSAMPerturbation(SyntheticSource, Perturbation):
    name = "synsam"
    grad_evals = 2
    broadcast = True
    round_thresholds = {"syn_round": "D_syn is never distilled nor used, so the run is FedSAM"}
    params = {
        "rho": Param(0.05, "SAM radius ρ", low=0.0),
        "beta": Param(0.9, "weight β of the local gradient in the ascent direction", low=0.0, high=1.0),
        "syn_batch": Param(0, "synthetic images per ascent step ζ (0: all of D_syn)", low=0),
        **SYN_PARAMS,
    }

    def __init__(self, **hp):
        super().__init__(**hp)
        if isinstance(self.syn_batch, bool) or not float(self.syn_batch).is_integer():
            raise ConfigError(f"algorithm.syn_batch: must be an integer, got {self.syn_batch!r}")
        self.syn_batch = int(self.syn_batch)
        self._seed = 0

    def bind(self, sim) -> None:
        super().bind(sim)
        self._seed = int(sim.spec.seed)

    def downlink(self, srv):
        out = super().downlink(srv)
        self.grad_evals = 3 if self.synthetic() is not None else 2
        return out

    def client_begin(self, ctx) -> None:
        syn = self.synthetic() if ctx.round > self.syn_round else None
        ctx.scratch["syn"] = syn
        if syn is not None and 0 < self.syn_batch < len(syn[1]):
            g = torch.Generator(device=syn[0].device)
            g.manual_seed(int(np.random.default_rng([self._seed, ctx.round, ctx.cid, _ZETA_TAG]).integers(0, 2**62)))
            ctx.scratch["syn_gen"] = g

    def _zeta(self, ctx):
        x, y = ctx.scratch["syn"]
        g = ctx.scratch.get("syn_gen")
        if g is None:
            return x, y
        idx = torch.randperm(len(y), generator=g, device=g.device)[: self.syn_batch]
        return x[idx], y[idx]

    def ascent(self, ctx, w, batch, grad_at):
        """(loss at w on ξ, the un-normalised ascent direction g); g is a new tensor."""
        loss, g = grad_at(w, batch)
        if ctx.scratch.get("syn") is None:
            return loss, g.clone()
        d = g.mul(self.beta)  # new tensor: grad_at's buffer is overwritten by the next call
        _, gs = grad_at(w, self._zeta(ctx))
        return loss, d.add_(gs, alpha=1.0 - self.beta)

    def fused_form(self):  # the same step as `gradient`, as one compiled graph (training/fl/fused.py FusedStep)
        return sam_form(self.rho, mix=self._fused_mix)

    def _fused_mix(self, ctx):
        """(β, ζ) of this step's mixed-in synthetic gradient once D_syn is in use, else None."""
        syn = ctx.scratch.get("syn")
        return None if syn is None else (self.beta, self._zeta(ctx))

    def gradient(self, ctx, w, batch, grad_at):
        if self.rho == 0.0:  # no ascent: plain SGD on the local batch
            return grad_at(w, batch)
        loss, d = self.ascent(ctx, w, batch, grad_at)
        delta = safe_unit(d, SAM_EPS).mul_(self.rho)
        _, g_pert = grad_at(w + delta, batch)
        return loss, g_pert
