"""FedSOL's local-learning measurements (FedSOL Sec. 4.2 Fig. 3b; Sec. 3.3 Eq. 7, Fig. 5b), as round hooks.

sol_cosine (Fig. 3b): cos(g_u, g_p) during local learning, where g_u = ∇L_local(w + ε) is the
  update gradient the FedSOL part returns (before momentum/weight decay) and g_p = ∇_w L_p(w; θ)
  the proximal-KL gradient at the unperturbed local weights, restricted to the perturbed subset
  (head by default). The hook reads every local gradient (RoundHook.local_gradient) and, on measured
  rounds, recomputes g_p with the part's own `prox_grad` (one extra head-only backward per step; models
  without dropout keep exactly the same trajectory). Steps with w = θ (the first step of a round,
  g_p = 0) are skipped. Columns: sol_cos (over the perturbed subset), sol_cos_full (g_u over all
  parameters; g_p is zero outside the subset), sol_cos_std (across steps and clients); the mean
  is over every local step of every sampled client of the round. Fig. 3a uses the existing
  `proximal_loss` hook (KL(global ‖ local), τ = 3, averaged over the round's local models).

lambda_layers (Fig. 5b): the layer-wise mean of FedSOL's adaptive scaling Λ (Eq. 7:
  λ[i] = |w_k[i] − w_g[i]| / ‖w_k − w_g‖ per parameter tensor; `normalizer: dim0` gives the
  official code's F.normalize(dim=0)) for each sampled client's end-of-round model against the
  round's start, pooled over the tensors of one module (weight and bias of a layer) and averaged
  across the clients, at one round: ⌈fraction · T⌉ (fraction 2/3 = the paper's round 200 of 300;
  reduced scale 20 of 30, tiny the last round). Λ is computed for every layer, whatever the
  perturbed subset. Columns lambda:<module name>.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ...core.errors import ConfigError
from ...training.algorithms.losses import FedSOLPerturbation, layout
from ...training.algorithms.parts import safe_unit
from .analysis_hooks import AnalysisHook, _choice, _int, _num, register

LAMBDA_PREFIX = "lambda:"


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    na, nb = a.norm(), b.norm()
    if na.item() == 0.0 or nb.item() == 0.0:
        return math.nan
    return float(a.dot(b) / (na * nb))


@register("sol_cosine")
class SOLCosineHook(AnalysisHook):
    PARAMS = {"every": (5, _int(1))}

    def on_start(self, sim) -> None:
        part = sim.algo.perturbation
        if not isinstance(part, FedSOLPerturbation):
            raise ConfigError(f"analysis.hooks.sol_cosine: needs a FedSOL perturbation; algorithm "
                              f"{sim.spec.algorithm!r} uses {part.name!r}")
        self._rec: list[tuple[float, float]] = []

    def local_gradient(self, sim, ctx, w, batch, loss, g):
        """g_u as the FedSOL part returned it; g_p recomputed at w on measured rounds (RoundHook.local_gradient)."""
        if self.due(sim, ctx.round) and not torch.equal(w, ctx.theta):
            self._rec.append(self.measure(sim.algo.perturbation, ctx, w, batch, g))
        return g

    @staticmethod
    def measure(part, ctx, w, batch, g_u) -> tuple[float, float]:
        model = ctx.scratch["model"]
        targets = part._targets(model)
        g_p = part.prox_grad(model, w, ctx.theta, batch[0], targets)
        idx = torch.cat([torch.arange(s.start, s.stop, device=w.device) for _, s, _ in targets])
        return _cos(g_u[idx], g_p[idx]), _cos(g_u, g_p)

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if not self.due(sim, t):
            return {}
        rec = np.array([r for r in getattr(self, "_rec", []) if np.isfinite(r[0])]).reshape(-1, 2)
        self._rec = []
        if not len(rec):
            return {"sol_cos": math.nan, "sol_cos_full": math.nan, "sol_cos_std": math.nan}
        return {"sol_cos": float(rec[:, 0].mean()), "sol_cos_full": float(np.nanmean(rec[:, 1])),
                "sol_cos_std": float(rec[:, 0].std())}


def lambda_vector(model, w: torch.Tensor, theta: torch.Tensor, normalizer: str = "tensor") -> torch.Tensor:
    """FedSOL's Λ over every trainable tensor (Eq. 7 per tensor, or the code's dim-0 normalisation)."""
    lam = torch.zeros_like(w)
    for _, s, shape in layout(model):
        a = (w[s] - theta[s]).abs()
        lam[s] = safe_unit(a) if normalizer == "tensor" else F.normalize(a.view(shape), p=2, dim=0, eps=1e-12).reshape(-1)
    return lam


def layer_means(model, lam: torch.Tensor) -> dict[str, float]:
    """Mean of Λ's entries per module (the tensors of one layer pooled), in parameter order."""
    groups: dict[str, list[torch.Tensor]] = {}
    for name, s, _ in layout(model):
        groups.setdefault(name.rsplit(".", 1)[0] if "." in name else name, []).append(lam[s])
    return {k: float(torch.cat(v).mean()) for k, v in groups.items()}


@register("lambda_layers")
class LambdaLayersHook(AnalysisHook):
    PARAMS = {"fraction": (2.0 / 3.0, _num(0.0, True)), "normalizer": ("auto", _choice("auto", "tensor", "dim0"))}

    def round_of(self, sim) -> int:
        T = sim.spec.rounds
        return max(1, min(T, math.ceil(self.fraction * T - 1e-9)))

    def on_round_end(self, sim, t, rnd, row) -> dict:
        if t != self.round_of(sim):
            return {}
        mode = self.normalizer if self.normalizer != "auto" else sim.algo.hp.get("sol_lambda", "tensor")
        model = sim.fm.module
        per = [layer_means(model, lambda_vector(model, c.end, c.end - c.delta, mode)) for c in rnd.clients]
        return {f"{LAMBDA_PREFIX}{k}": float(np.mean([p[k] for p in per])) for k in per[0]}
