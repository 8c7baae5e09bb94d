"""FedSOL's ablations and combinations as options of its parts (FedSOL Tables 1, 4 and 10; notes
002 §2.1, §2.6, §2.7, §8.3, §8.15). Equations and readings: docs/algorithms_sam.md "FedSOL variants".

* `kl_prox` (correction, loss term): L_p = β·KL(softmax(f_θ(x)/τ) ‖ softmax(f_w(x)/τ)), batchmean,
  no τ² (FedSOL's proximal loss used as an auxiliary term, Eq. 2; Table 1 "KL Base", Table 10 A5).
* `projection` (perturbation slot, no perturbation): Eq. 3 gradient projection,
  g_u = g_l − (g_l·g_p/‖g_p‖²) g_p if g_l·g_p < 0, else g_l; g_p = ∇L_p(w) over the whole model.
* `fedsol_general` (perturbation): FedSOL (Λ, head/body/full, τ as the `fedsol` part) with
    sol_prox     which proximal loss L_p gives g_p: kl (FedSOL), l2 (½‖w − θ‖²), or parts (the
                 proximal objective of the algorithm's other parts: Σ of the step terms of the
                 proximal corrections prox/scaffold/feddyn/feddc/hybrid_prox at w, which are exactly
                 ∇ of FedProx's (μ/2)‖w−θ‖², SCAFFOLD's ⟨c − c_i, w⟩,
                 FedDyn's −⟨h_i, w⟩ + (α/2)‖w−θ‖²,
                 plus ∇ of the loss terms of moon/ntd/kl_prox parts at w);
    sol_local_at where ∇L_local is taken: w | eps_p (w + ε_p, FedSOL) | eps_c (w + ε_c);
    sol_prox_at  where β∇L_p is added to the update: none (FedSOL) | w | eps_p | eps_c;
    sol_beta     β of the combined loss L_local + β L_p (Eq. 2/13);
    sol_prox_in_step  (parts only) false: the proximal parts' step terms / loss terms leave the update
                 and act only through ε (FedSOL Eq. 6; their state, uplink and server work stay);
                 true: they stay in the update as well.
  ε_p = ρ Λ ⊙ g_p/‖g_p‖ on the perturbed subset; ε_c = ρ Λ ⊙ (g_l + β g_p)/‖·‖ on the same subset
  (SAM on the combined loss, Eq. 13). Table 10: A1 = (eps_p, none), A2 = (w, eps_p),
  A3 = (eps_p, eps_p), A4 = (eps_c, eps_c), A5 = (w, w) (= `kl_prox`), A6 = (eps_p, w).
  The β∇L_p term of the update is over the whole model (it is a loss), ε only on the subset.

`fedsol_general` is a separate part (not new options of `fedsol`) so that the run ids of every
existing FedSOL run stay what they were; with its defaults it computes exactly what `fedsol` does.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from .parts import ConfigError, Correction, Param, Part, Perturbation
from .corrections import CORRECTIONS
from .losses import FedSOLPerturbation, LossTerm, as_params, forward_with, layout, logits_at, model_of
from .perturbations import PERTURBATIONS

PROX_SOURCES = ("kl", "l2", "parts")
POINTS = ("w", "eps_p", "eps_c")
# corrections whose step term is the gradient (in w) of a proximal objective: adjust(ctx, w, g) = g + ∇L_p(w)
PROXIMAL_CORRECTIONS = ("prox", "scaffold", "feddyn", "feddc", "hybrid_prox")
SOL_PROX = Param("kl", "proximal loss whose gradient g_p is used: kl (FedSOL), l2 (½‖w−θ‖²), parts "
                 "(the proximal objective of the algorithm's correction / loss-term parts)", choices=PROX_SOURCES)
SOL_TAU = Param(3.0, "softmax temperature τ of the proximal KL", low=0.0, low_open=True)


def kl_to_global(logits: torch.Tensor, global_logits: torch.Tensor, tau: float) -> torch.Tensor:
    """KL(softmax(z_θ/τ) ‖ softmax(z_w/τ)), batchmean, no τ² (FedSOL's L_p, Sec. 3.2, Eq. 5)."""
    q = F.softmax(global_logits / tau, dim=1)
    return F.kl_div(F.log_softmax(logits / tau, dim=1), q, reduction="batchmean")


@CORRECTIONS.register("kl_prox")
class KLProxLoss(LossTerm):
    """FedSOL's proximal KL as an auxiliary loss (Eq. 2 with L_p = KL, τ = 3; Table 1 "KL Base",
    Table 10 A5): β·KL(softmax(f_θ(x)/τ) ‖ softmax(f_w(x)/τ)), batchmean, no τ². β = 1 (β unstated; A5 prints L_local + L_p)."""

    name = "kl_prox"
    first_step_inert = "the proximal KL has no gradient at a round's start point"
    params = {"kl_beta": Param(1.0, "weight β of the proximal KL", low=0.0), "sol_tau": SOL_TAU}

    def loss_term(self, ctx, logits, x, y, model):
        if self.kl_beta == 0.0:
            return None
        return self.kl_beta * kl_to_global(logits, logits_at(model, ctx.theta, x), self.sol_tau)


def _step_without_term(ctx, w, g):
    return g


def _no_loss_term(ctx, logits, x, y, model):
    return None


class ProxSource:
    """g_p = ∇_w L_p for the three `sol_prox` sources, restricted to `targets` (zero elsewhere).
    The part's peers (the algorithm's other parts) come from `bind` (the engine calls it)."""

    peers: Optional[list] = None

    def bind(self, sim) -> None:
        self.peers = [p for p in sim.algo.parts if p is not self]
        if self.sol_prox == "parts":
            corr, terms = self._peer_parts()  # a composition without a proximal part fails before training
            if not getattr(self, "sol_prox_in_step", True):
                # FedSOL Eq. 6: the proximal objective acts only through ε. The peers keep their
                # state, uplink and server work; their step term / loss term leaves the update.
                for c in corr:
                    c.adjust = _step_without_term
                for t in terms:
                    t.loss_term = _no_loss_term

    def _peer_parts(self):
        if self.peers is None:
            raise ConfigError(f"algorithm: {self.name} with sol_prox=parts needs the algorithm's parts (bind)")
        corr = [p for p in self.peers if isinstance(p, Correction) and p.name in PROXIMAL_CORRECTIONS]
        terms = [p for p in self.peers if type(p).loss_term is not Part.loss_term]
        if not corr and not terms:
            raise ConfigError(f"algorithm.sol_prox: 'parts' needs a proximal part ({', '.join(PROXIMAL_CORRECTIONS)}, "
                              "moon, ntd or kl_prox) in the algorithm")
        return corr, terms

    def loss_grad(self, model, w, x, targets, loss_fn, stats=None) -> torch.Tensor:
        """Flat ∇_w loss_fn(logits at w) on `targets`, zero elsewhere (`stats`: losses.forward_with)."""
        params = as_params(model, w.detach())
        leaves = {n: params[n].detach().clone().requires_grad_(True) for n, _, _ in targets}
        params.update(leaves)
        out = torch.zeros_like(w)
        with torch.enable_grad():
            loss = loss_fn(forward_with(model, params, x, stats))
            if loss is None or not loss.requires_grad:
                return out
            grads = torch.autograd.grad(loss, [leaves[n] for n, _, _ in targets], allow_unused=True)
        for (n, s, _), g in zip(targets, grads):
            if g is not None:
                out[s] = g.reshape(-1)
        return out

    def prox_gradient(self, ctx, model, w, x, y, targets) -> torch.Tensor:
        theta = ctx.theta
        stats = ctx.scratch.get("running_stats")  # the local model's pass may be the step's first
        if self.sol_prox == "kl":
            zg = logits_at(model, theta, x)
            return self.loss_grad(model, w, x, targets, lambda z: kl_to_global(z, zg, self.sol_tau), stats)
        out = torch.zeros_like(w)
        if self.sol_prox == "l2":
            for _, s, _ in targets:
                out[s] = w[s] - theta[s]
            return out
        corr, terms = self._peer_parts()
        full = torch.zeros_like(w)
        for c in corr:  # the step term of a proximal correction is ∇ of its objective at w
            full = type(c).adjust(c, ctx, w, full)
        for _, s, _ in targets:
            out[s] = full[s]
        if terms:
            def total(z):
                vals = [v for p in terms if (v := type(p).loss_term(p, ctx, z, x, y, model)) is not None]
                return sum(vals) if vals else None
            out.add_(self.loss_grad(model, w, x, targets, total, stats))
        return out


@PERTURBATIONS.register("fedsol_general")
class GeneralFedSOL(ProxSource, FedSOLPerturbation):
    """FedSOL with a chosen proximal loss and evaluation points (module docstring; FedSOL Alg. 1,
    Eqs. 5-8, Eq. 13, App. F Table 10, Table 4)."""

    name = "fedsol_general"
    params = {
        **FedSOLPerturbation.params,
        "sol_prox": SOL_PROX,
        "sol_local_at": Param("eps_p", "where the local-loss gradient is taken (w, w+ε_p, w+ε_c)", choices=POINTS),
        "sol_prox_at": Param("none", "where β∇L_p is added to the update (none: FedSOL)",
                             choices=("none",) + POINTS),
        "sol_beta": Param(1.0, "weight β of the proximal loss in the combined loss", low=0.0),
        "sol_prox_in_step": Param(False, "sol_prox=parts: keep the proximal parts' own step/loss terms in the "
                                  "update (false: they act only through ε, FedSOL Eq. 6)"),
    }

    def __init__(self, **hp):
        super().__init__(**hp)
        uses = {self.sol_local_at, self.sol_prox_at}
        self.grad_evals = (1 + ("eps_p" in uses or "eps_c" in uses) + ("eps_c" in uses)
                           + (self.sol_prox_at != "none"))

    def _eps(self, ctx, model, w, x, y, targets, g_local: Optional[torch.Tensor]) -> torch.Tensor:
        """ε_p (g_local None) or ε_c (g_local = ∇L_local(w)), both ρΛ⊙d/‖d‖ on the subset."""
        if self.rho == 0.0:
            return torch.zeros_like(w)
        if g_local is None and torch.equal(w, ctx.theta) and (self.sol_adaptive or self.sol_prox != "parts"):
            return torch.zeros_like(w)  # Λ = 0 (and g_p = 0 for kl/l2) at the first step: ε = 0 (Eq. 7 at w = θ)
        d = self.prox_gradient(ctx, model, w, x, y, targets)
        if g_local is not None:
            d.mul_(self.sol_beta)
            for _, s, _ in targets:
                d[s] += g_local[s]
        return self.scaled(w, ctx.theta, d, targets)

    def gradient(self, ctx, w, batch, grad_at):
        x, y = batch[0], batch[1]
        model = model_of(ctx, self.name)
        targets = self._targets(model)
        uses = {self.sol_local_at, self.sol_prox_at}
        points = {"w": w}
        loss_w = g_w = None
        if "eps_p" in uses:
            points["eps_p"] = w + self._eps(ctx, model, w, x, y, targets, None)
        if "eps_c" in uses:
            loss_w, g = grad_at(w, batch)
            g_w = g.clone()
            points["eps_c"] = w + self._eps(ctx, model, w, x, y, targets, g_w)
        if self.sol_local_at == "w" and g_w is not None:
            loss, g = loss_w, g_w
        else:
            loss, g = grad_at(points[self.sol_local_at], batch)
        if self.sol_prox_at != "none" and self.sol_beta != 0.0:
            g = g + self.sol_beta * self.prox_gradient(ctx, model, points[self.sol_prox_at], x, y, layout(model))
        return loss, g


@PERTURBATIONS.register("projection")
class ProjectionPerturbation(ProxSource, Perturbation):
    """Proximal-gradient projection (FedSOL Sec. 2.3, Eq. 3; Table 1): one pass at w, then
    g_u = g_l − (g_l·g_p/‖g_p‖²) g_p when g_l·g_p < 0, else g_l, with g_p = ∇_w L_p(w) over the
    whole model (`sol_prox`: kl = FedSOL's KL, l2 = FedProx's distance; the projection does not
    depend on L_p's scale, so μ/β do not enter). No perturbation."""

    name = "projection"
    first_step_inert = "g_p is zero at a round's start point: nothing to project on"
    grad_evals = 2
    params = {"sol_prox": SOL_PROX, "sol_tau": SOL_TAU}

    def gradient(self, ctx, w, batch, grad_at):
        loss, g = grad_at(w, batch)
        if self.sol_prox != "parts" and torch.equal(w, ctx.theta):
            return loss, g  # g_p = 0 at w = θ (its computed value is round-off: no direction to project on)
        model = model_of(ctx, self.name)
        gp = self.prox_gradient(ctx, model, w, batch[0], batch[1], layout(model))
        dot = torch.dot(g, gp)
        if dot.item() >= 0.0:
            return loss, g
        return loss, g - (dot / torch.dot(gp, gp)) * gp
