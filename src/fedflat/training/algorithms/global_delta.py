"""FedTOGA's global update Δ and its dual correction βΔ (FedTOGA Alg. 1 lines 7a, 11, 12).

The server turns the round's mean client displacement into a gradient-scale estimate
    Δ^{t+1} = −mean_i(θ_{i,K} − θ_{i,0}) / (K_eff · η_l)  (delta_norm=fedcm: Sec. 4.1's Δ ≈ ∇f, as FedCM)
    Δ^{t+1} = −mean_i(θ_{i,K} − θ_{i,0}) / K              (delta_norm=step, Alg. 1 literally)
with Δ^0 = 0, and sends it down with θ (downlink 2×). The G-perturbation (perturbations.toga)
and the `global_delta` correction both read it; whichever part runs first in a round computes it.
K_i, the local momentum and η_l are settings the server knows; the parts note them when clients
start. fedcm is a gradient-scale estimate, so it divides by K_eff (= K for plain SGD, base.
effective_steps with local momentum) and, with per-client K_i, per client: −Σ p_i Δ_i/(K_eff,i·η_l).
step is Alg. 1's literal per-step displacement: −Σ p_i Δ_i/K_i (no momentum correction).
"""
from __future__ import annotations

from .parts import Correction, Param, RoundResult, ServerState
from .corrections import CORRECTIONS

KEY = "toga_delta"
DELTA_NORM = Param("fedcm", "scale of Δ: fedcm = /(K_eff·lr) (gradient scale), step = /K (Alg. 1 literal)",
                   choices=("fedcm", "step"))


def init_delta(srv: ServerState) -> None:
    srv.state.setdefault(KEY, srv.zeros())


def note_round(part, ctx) -> None:
    div = ctx.effective_steps * ctx.lr if part.delta_norm == "fedcm" else float(ctx.local_steps)
    part.__dict__.setdefault("_delta_div", {})[ctx.cid] = div


def update_delta(part, srv: ServerState, rnd: RoundResult) -> None:
    if srv.extra.get(KEY + "_round") == rnd.round:
        return
    d, k = rnd.mean_normalised_delta(part._delta_div)
    srv.state[KEY] = d.mul(-1.0 / k)
    srv.extra[KEY + "_round"] = rnd.round


@CORRECTIONS.register("global_delta")
class GlobalDeltaCorrection(Correction):
    """FedTOGA's dual correction (Alg. 1 line 12, Sec. 4.3): the local dual h_i is replaced by
    h_i − βΔ, i.e. the step adds +βΔ: g ← g + βΔ. No client state; Δ comes down with θ."""

    name = "global_delta"
    params = {"beta": Param(0.8, "dual-correction weight β on the global update Δ", low=0.0, high=1.0),
              "delta_norm": DELTA_NORM}
    shares = ("delta_norm",)  # FedTOGA's perturbation reads the same Δ (Alg. 1 lines 11-12)

    def init_server(self, srv):
        init_delta(srv)

    def downlink(self, srv):
        return {KEY: srv.state[KEY]}

    def client_begin(self, ctx):
        note_round(self, ctx)

    def adjust(self, ctx, w, g):
        return g.add(ctx.down[KEY], alpha=self.beta) if self.beta else g

    def fused_linear(self, ctx):
        return 1.0, 0.0, ctx.down[KEY] * self.beta if self.beta else None

    def server_update(self, srv, rnd):
        update_delta(self, srv, rnd)
