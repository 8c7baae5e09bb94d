"""FedTOGA's global update Δ and its dual correction βΔ (FedTOGA Alg. 1 lines 7a, 11, 12).

The server turns the round's mean client displacement into a gradient-scale estimate
    Δ^{t+1} = −mean_i(θ_{i,K} − θ_{i,0}) / (K · η_l)      (delta_norm=fedcm, notes §10.3 best reading)
    Δ^{t+1} = −mean_i(θ_{i,K} − θ_{i,0}) / K              (delta_norm=step, Alg. 1 literally)
with Δ^0 = 0, and sends it down with θ (downlink 2×). The G-perturbation (perturbations.toga)
and the `global_delta` correction both read it; whichever part runs first in a round computes it.
K and η_l are global settings the server knows; the parts note them when clients start.
"""
from __future__ import annotations

from .base import Correction, Param, RoundResult, ServerState
from .corrections import CORRECTIONS

KEY = "toga_delta"
DELTA_NORM = Param("fedcm", "scale of Δ: fedcm = /(K·lr) (gradient scale), step = /K (Alg. 1 literal)",
                   choices=("fedcm", "step"))


def init_delta(srv: ServerState) -> None:
    srv.state.setdefault(KEY, srv.zeros())


def note_round(part, ctx) -> None:
    part._delta_scale = ctx.local_steps * (ctx.lr if part.delta_norm == "fedcm" else 1.0)


def update_delta(part, srv: ServerState, rnd: RoundResult) -> None:
    if srv.extra.get(KEY + "_round") == rnd.round:
        return
    srv.state[KEY] = rnd.mean_delta.mul(-1.0 / part._delta_scale)
    srv.extra[KEY + "_round"] = rnd.round


@CORRECTIONS.register("global_delta")
class GlobalDeltaCorrection(Correction):
    """FedTOGA's dual correction (Alg. 1 line 12, Sec. 4.3): the local dual h_i is replaced by
    h_i − βΔ, i.e. the step adds +βΔ: g ← g + βΔ. No client state; Δ comes down with θ."""

    name = "global_delta"
    params = {"beta": Param(0.8, "dual-correction weight β on the global update Δ", low=0.0, high=1.0),
              "delta_norm": DELTA_NORM}

    def init_server(self, srv):
        init_delta(srv)

    def downlink(self, srv):
        return {KEY: srv.state[KEY]}

    def client_begin(self, ctx):
        note_round(self, ctx)

    def adjust(self, ctx, w, g):
        return g.add(ctx.down[KEY], alpha=self.beta) if self.beta else g

    def server_update(self, srv, rnd):
        update_delta(self, srv, rnd)
