"""FedGF (Lee & Yoon, "Rethinking the Flat Minima Searching in Federated Learning", ICML 2024, PMLR
235:27037): client SAM whose perturbed point is pulled toward a globally perturbed model, as far as the
clients' recent divergence asks. Only the abstract of the paper could be read; the rule is the official
code's (hwan-sig/Official-FedGF @ 36233b7, fedlab/contrib/algorithm/fedgf.py), docs/algorithms_2025.md:

  server, after round t (θ^t the model the clients received, w_i what they sent back):
    D^t   = (1/|S|) Σ_S ‖θ^t − w_i‖                      divergence (unweighted, calc_c)
    c     = mean of 1[D > T_D] over the last W rounds     (append_grad_norm; c = 0 before any round)
    θ^{t+1} = the FedAvg aggregate                        (`mean` server)
    Δ̃     = θ^t − θ^{t+1},  w̃ = θ^{t+1} + ρ Δ̃/‖Δ̃‖      globally perturbed model (calc_perturbation)
  client, each local step on a mini-batch ζ (round 1: w̃ does not exist yet, plain SAM):
    g = ∇F_i(w; ζ),  w_l = w + ρ g/‖g‖,  w̄ = c·w̃ + (1 − c)·w_l,  w ← w − η ∇F_i(w̄; ζ)

The interpolation is between two *models* (w̃ does not move with w), so at ρ = 0 the gradient is still
taken at c·θ + (1 − c)·w: FedGF is FedAvg only where c ≡ 0. W = 0 (fedflat's addition: an empty window)
keeps c at 0, which makes FedGF exactly FedSAM, and FedAvg at ρ = 0 (training/algorithms/reductions.py)."""
from __future__ import annotations

import math

from .parts import ConfigError, Param, Perturbation, safe_unit
from .perturbations import PERTURBATIONS, RHO, SAM_EPS
from .presets import preset

TILDE = "gf_tilde"  # downlink: w̃, from round 2 on
PREV = "gf_prev"  # server state: θ^t, kept before the server moves, for Δ̃ = θ^t − θ^{t+1}
WINDOW = "gf_window"  # srv.extra: the last W indicators 1[D > T_D]
DIVERGENCE = "gf_divergence"  # srv.extra: the last round's D (a record; nothing reads it back)


@PERTURBATIONS.register("gf")
class GlobalFlatnessPerturbation(Perturbation):
    """Gradient at w̄ = c·w̃ + (1 − c)(w + ρ g/‖g‖) (official fedgf.py `weighted_sum`); the server side
    (D, the window, w̃) lives here too, on the server's hooks, as the stale-direction part does."""

    name = "gf"
    grad_evals = 2
    params = {
        "rho": RHO,  # one radius for both perturbations: the official g_rho defaults to rho (tools/Lib/algorithms.py)
        # T_D has no published value (the official default is None): 0.5 is the median D met in the leaderboard's
        # screen setting at lr 0.1 (docs/algorithms_2025.md, FedGF), a reading, not the paper's
        "gf_td": Param(0.5, "divergence threshold T_D on D = mean_S ‖θ − w_i‖", low=0.0),
        "gf_window": Param(30, "window W of rounds whose indicators 1[D > T_D] average to c (0: c = 0)", low=0),
    }

    def __init__(self, **hp):
        super().__init__(**hp)
        if isinstance(self.gf_window, bool) or not float(self.gf_window).is_integer():
            raise ConfigError(f"algorithm.gf_window: must be an integer, got {self.gf_window!r}")
        self.gf_window = int(self.gf_window)
        self._c = 0.0

    # ------------------------------------------------------------------ server side
    def init_server(self, srv):
        srv.extra.setdefault(WINDOW, [])

    def downlink(self, srv):
        window = srv.extra[WINDOW]
        self._c = math.fsum(window) / len(window) if window else 0.0  # one scalar, sent with θ
        if PREV not in srv.state:  # round 1: no global update yet
            return {}
        return {TILDE: srv.theta + self.rho * safe_unit(srv.state[PREV] - srv.theta)}

    def server_update(self, srv, rnd):
        """Runs before the server moves: srv.theta is still θ^t."""
        d = math.fsum((c.end - srv.theta).norm().item() for c in rnd.clients) / len(rnd.clients)
        srv.extra[DIVERGENCE] = d
        if self.gf_window:
            srv.extra[WINDOW] = (srv.extra[WINDOW] + [1 if d > self.gf_td else 0])[-self.gf_window:]
        srv.state[PREV] = srv.theta.clone()

    # ------------------------------------------------------------------ client side
    def client_begin(self, ctx):
        ctx.scratch[TILDE] = ctx.down.get(TILDE)

    def gradient(self, ctx, w, batch, grad_at):
        loss, g = grad_at(w, batch)
        tilde = ctx.scratch[TILDE]
        c = self._c if tilde is not None else 0.0
        if self.rho == 0.0 and c == 0.0:
            return loss, g
        point = w + safe_unit(g, SAM_EPS).mul_(self.rho)  # w_l (g's buffer is reused by the next call)
        if c:
            point = point.mul_(1.0 - c).add_(tilde, alpha=c)
        return loss, grad_at(point, batch)[1]


preset("fedgf", "FedGF", "gf", "mean",
       "Lee & Yoon, ICML 2024 (PMLR 235:27037) FedGF; rule from the official code (hwan-sig/Official-FedGF @ "
       "36233b7, fedgf.py), the paper's body being unreadable: client SAM point pulled toward w̃ = θ + ρΔ̃/‖Δ̃‖ by "
       "c = windowed share of rounds with divergence > T_D; ρ 0.05 (official script grid 0.02-0.1), W 30 "
       "(official script), T_D: no source gives one (docs/algorithms_2025.md)",
       defaults={"rho": 0.05})
