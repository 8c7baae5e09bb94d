"""FedSCAM (Rahil, Ahmad, Asif, arXiv 2601.00853, Dec 2025): a per-client SAM radius that shrinks with the
client's heterogeneity score, and an aggregation that favours clients aligned with the last global step.

What could be established (docs/algorithms_2025.md, FedSCAM): the abstract [P] states the two mechanisms;
the equations below are a third-party transcription of the paper's Sec. 3 / Alg. 1 [T] (thc1006/fl-oran-tmc
@ b8a126e, src/fl_oran/federated/algorithms/fedscam.py), not checked against the paper's text, which could
not be read. Readings of fedflat's own are marked (R).

  pilot (R: B = 1, the round's first mini-batch ζ_0 at the start point θ, whose gradient the first SAM
  ascent needs anyway):  h_i = ‖∇F_i(θ; ζ_0)‖,  v_i = −∇F_i(θ; ζ_0) (R: the "one-step update" reading)
  alignment:   c_i = cos(v_i, u),  u = (θ^t − θ^{t−1})/‖·‖ the last global step (0 in round 1)
  coupling:    h_i^adj = h_i · max(0, 1 − κ c_i)
  radius:      ρ_i = ρ_max / (1 + α_ρ h_i^adj); every local step is SAM with radius ρ_i
  aggregation: a_i = max(0, 1 + β c_i) / (1 + γ h_i^adj),  θ ← θ + Σ_S p_i a_i Δ_i / Σ_S p_j a_j
               (p_i the run's aggregation weights; back to p_i where every a_i is 0)
  next u:      u ← (θ^{t+1} − θ^t)/‖·‖

γ = β = 0 makes the aggregation FedAvg's, so FedSCAM at ρ = 0 is FedAvg, and with α_ρ = 0 too FedSAM."""
from __future__ import annotations

import math

import torch

from .parts import ConfigError, Param, Perturbation, RoundResult, ServerOpt, ServerState, safe_unit
from .perturbations import PERTURBATIONS, SAM_EPS
from .presets import preset
from .servers import SERVERS

U = "scam_u"  # downlink: the last global step's direction u
STATS = "scam_stats"  # uplink: (h_i^adj, c_i), two floats
RHO_I = "scam_rho_i"  # ctx.scratch: this client's radius for the round


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    den = a.norm().item() * b.norm().item()
    return 0.0 if den == 0.0 else float(a @ b) / den


@PERTURBATIONS.register("scam")
class ModulatedSAMPerturbation(Perturbation):
    """SAM with the client's radius ρ_i = ρ_max/(1 + α_ρ h_i^adj), set at the round's first step from that
    step's gradient at θ (the pilot); δ = ρ_i g/‖g‖, gradient at w + δ on the same mini-batch."""

    name = "scam"
    grad_evals = 2
    params = {
        "rho": Param(0.05, "largest SAM radius ρ_max ([T]: 0.05)", low=0.0),
        "scam_alpha": Param(1.0, "α_ρ: how fast the radius shrinks with h_i^adj ([T]: 1)", low=0.0),
        "scam_kappa": Param(1.0, "κ: how much alignment lowers the heterogeneity score ([T]: 1)", low=0.0),
    }

    def client_begin(self, ctx):
        if U not in ctx.down:
            raise ConfigError("algorithm: the 'scam' perturbation needs the 'scam' server (downlink 'scam_u')")
        ctx.scratch[RHO_I] = None
        ctx.scratch[STATS] = (0.0, 0.0)

    def _pilot(self, ctx, g) -> float:
        h = g.norm().item()
        c = _cos(-g, ctx.down[U])  # v_i = −g: the direction a step on ζ_0 would move the model
        h_adj = h * max(0.0, 1.0 - self.scam_kappa * c)
        ctx.scratch[STATS] = (h_adj, c)
        return self.rho / (1.0 + self.scam_alpha * h_adj)

    def gradient(self, ctx, w, batch, grad_at):
        loss, g = grad_at(w, batch)
        if ctx.scratch[RHO_I] is None:  # the first step: w is the start point θ
            ctx.scratch[RHO_I] = self._pilot(ctx, g)
        rho = ctx.scratch[RHO_I]
        if rho == 0.0:
            return loss, g
        return loss, grad_at(w + safe_unit(g, SAM_EPS).mul_(rho), batch)[1]

    def client_end(self, ctx, w):
        return {STATS: torch.tensor(ctx.scratch[STATS], dtype=w.dtype, device=w.device)}


@SERVERS.register("scam")
class AlignmentWeightedServer(ServerOpt):
    """θ ← θ + Σ p_i a_i Δ_i / Σ p_j a_j with a_i = max(0, 1 + β c_i)/(1 + γ h_i^adj); then u ← unit(step)."""

    name = "scam"
    params = {
        "scam_gamma": Param(1.0, "γ: the weight's penalty on h_i^adj ([T]: 1; tested 0, 1, 5)", low=0.0),
        "scam_beta": Param(0.8, "β: the weight's boost for alignment c_i ([T]: 0.8; tested 0, 0.8, 2)", low=0.0),
    }

    def init_server(self, srv: ServerState) -> None:
        srv.state.setdefault(U, srv.zeros())

    def downlink(self, srv):
        return {U: srv.state[U]}

    def weights(self, rnd: RoundResult) -> list[float]:
        """The aggregation weights p_i a_i / Σ p_j a_j (p_i where every a_i is 0)."""
        p = rnd.weights.tolist()
        if STATS not in rnd.clients[0].up:
            raise ConfigError("algorithm: the 'scam' server needs the 'scam' perturbation (uplink 'scam_stats')")
        raw = []
        for pi, c in zip(p, rnd.clients):
            h_adj, cos = c.up[STATS].tolist()
            raw.append(pi * max(0.0, 1.0 + self.scam_beta * cos) / (1.0 + self.scam_gamma * h_adj))
        total = math.fsum(raw)
        return p if total == 0.0 else [r / total for r in raw]

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        step = srv.zeros()
        for q, c in zip(self.weights(rnd), rnd.clients):
            step.add_(c.delta, alpha=q)
        srv.theta.add_(step)
        srv.state[U] = safe_unit(step)


preset("fedscam", "FedSCAM", "scam", "scam",
       "Rahil, Ahmad, Asif, arXiv 2601.00853 (2025): abstract [P] + Sec. 3 equations as transcribed by a "
       "third-party port [T] (the paper's text could not be read): ρ_i = ρ_max/(1 + α_ρ h_i^adj), weights "
       "max(0, 1 + βc_i)/(1 + γh_i^adj); [T] defaults ρ_max 0.05, α_ρ 1, κ 1, γ 1, β 0.8 (CIFAR-10/FMNIST)",
       defaults={"rho": 0.05})
