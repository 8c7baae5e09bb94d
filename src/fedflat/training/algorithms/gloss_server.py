"""FedGloSS's server (Caldarola, Cagnasso, Caputo, Ciccone, CVPR 2025, arXiv 2412.03752, Alg. 1):
SAM on the server, with the previous round's pseudo-gradient as the ascent direction.

    lines 4-5:  ε̃ = ρ Δ̃/‖Δ̃‖ (0 while Δ̃ = 0, i.e. in round 1),  clients start at w̃ = θ + ε̃
    lines 23-24: Δ̃ = Σ_S p_i (w̃ − w_i) = −mean_S Δ_i,  θ ← θ − η_g Δ̃ − βσ

The step is taken from θ, not from w̃, so ε̃ is removed again. With α = 1/β and σ ≡ h the local
ADMM step (lines 12-15), the client dual (line 19) and the server dual (line 22) are exactly the
`feddyn` correction's, which runs its server_update before `apply`, so h is already σ^{t+1} here
(line 24 needs the new σ). Δ̃ is computed from what the server received, so nothing extra is sent:
the downlink is w̃ alone."""
from __future__ import annotations

from .parts import Param, RoundResult, ServerOpt, ServerState, safe_unit
from .corrections import ALPHA
from .servers import SERVERS, _require_state

KEY = "gloss_pg"  # Δ̃, the last pseudo-gradient (server state)


@SERVERS.register("gloss")
class GlossServer(ServerOpt):
    """θ ← θ + η_g mean_S Δ_i − h/α from the SAM point w̃ = θ + ρ_s Δ̃/‖Δ̃‖ (η_g = 1 in Alg. 1)."""

    name = "gloss"
    params = {
        "server_rho": Param(0.15, "server SAM radius ρ (Alg. 1 line 4)", low=0.0),
        "alpha": ALPHA,  # shared with the feddyn correction: α = 1/β
        "server_lr": Param(1.0, "server learning rate η_g (1 in Alg. 1)", low=0.0, low_open=True),
    }
    shares = ("alpha",)  # the clients' FedDyn α: Alg. 1 uses one α = 1/β on both sides

    def init_server(self, srv: ServerState) -> None:
        _require_state(srv, "h", "gloss", "feddyn")
        srv.state.setdefault(KEY, srv.zeros())

    def start_point(self, srv: ServerState):
        if self.server_rho == 0.0:
            return srv.theta
        return srv.theta + self.server_rho * safe_unit(srv.state[KEY])

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        d = rnd.mean_delta  # mean_S (w_i − w̃) = −Δ̃
        srv.theta.add_(d, alpha=self.server_lr).sub_(srv.state["h"], alpha=1.0 / self.alpha)
        srv.state[KEY] = -d
