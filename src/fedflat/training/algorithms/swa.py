"""FedSWA and FedMoSWA (Liu, Liu, Shang, Liu, Liu, Feng, ICML 2025, arXiv 2507.20016, Sec. 3).

FedSWA restarts the local lr every round and lets it fall linearly within it:
    η_k = η(1 − k/K) + (k/K)ρη = η·s_k,   s_k = 1 − (1 − ρ)k/K,   k = 0..K−1
The engine steps with one lr per round, so `swa_schedule` scales the step direction by s_k; it must
be the LAST correction, so that FedMoSWA's corrected direction g − c_i + m is scaled too. The
engine's weight decay is added after the corrections and is therefore not scaled (it differs from
η_k(g + wd·w) only when training.weight_decay > 0); with local momentum s_k scales what enters the
buffer.

FedMoSWA's momentum-based stochastic control (`moswa`):
    step:        w ← w − η_k (g − c_i + m)
    client end:  c_i⁺ = c_i − m + (θ − w_K)/Σ_k η_k      (option II with the schedule's Σ_k η_k)
                 upload u_i = c_i⁺ − m
    server:      m ← m + γ mean_S u_i                       (before θ ← θ + α(mean_S w_i − θ))
m is an EMA of the clients' c_i (fresh ones weighted more), where SCAFFOLD adds (1/N)Σ_S Δc_i.
moswa_warm=code is the official code's `apply_weights_SCAF`: m = mean_S u_i in the first round
(coefficient 1), then γ (0.4 there). docs/algorithms_2025.md lists every paper-vs-code difference."""
from __future__ import annotations

from .parts import ClientContext, Correction, Param
from .corrections import CORRECTIONS, _need

SUM_KEY = "swa_scale_sum"  # ctx.scratch: Σ_k s_k of this client's round (Σ_k η_k = lr·Σ_k s_k)
STEP_KEY = "swa_step"


def scale_sum(k: int, rho: float) -> float:
    """Σ_{k<K} s_k = K − (1 − ρ)(K − 1)/2."""
    return k - (1.0 - rho) * (k - 1) / 2.0


@CORRECTIONS.register("swa_schedule")
class SWASchedule(Correction):
    """g ← s_k g with s_k = 1 − (1 − ρ)k/K_i: the within-round linear lr decay of FedSWA (Sec. 3),
    K_i this client's own step count. ρ = 1: constant lr (FedAvg's local step)."""

    name = "swa_schedule"
    params = {"swa_rho": Param(0.1, "ratio ρ of the last to the first local lr within a round", low=0.0, high=1.0)}

    def client_begin(self, ctx: ClientContext) -> None:
        ctx.scratch[STEP_KEY] = 0
        ctx.scratch[SUM_KEY] = scale_sum(ctx.local_steps, self.swa_rho)

    def adjust(self, ctx, w, g):
        k = ctx.scratch[STEP_KEY]
        ctx.scratch[STEP_KEY] = k + 1
        s = 1.0 - (1.0 - self.swa_rho) * k / ctx.local_steps
        return g if s == 1.0 else g * s


@CORRECTIONS.register("moswa")
class MoSWACorrection(Correction):
    """FedMoSWA's control variates (see the module docstring). The divisor Σ_k η_k comes from a
    following `swa_schedule`; without one it is K_eff·lr (the official code's constant-lr path)."""

    name = "moswa"
    client_state = ("moswa_c",)
    params = {"moswa_gamma": Param(0.2, "server momentum step γ of m", low=0.0, high=1.0),
              "moswa_warm": Param("paper", "first round: paper m ← γ mean u_i; code m ← mean u_i (official)",
                                  choices=("paper", "code"))}

    def init_server(self, srv):
        srv.state.setdefault("moswa_m", srv.zeros())

    def downlink(self, srv):
        return {"moswa_m": srv.state["moswa_m"]}

    def adjust(self, ctx, w, g):
        return g - ctx.state["moswa_c"] + _need(ctx, "moswa_m", "moswa")

    def client_end(self, ctx, w):
        m, c = ctx.down["moswa_m"], ctx.state["moswa_c"]
        steps = ctx.scratch.get(SUM_KEY, ctx.effective_steps)
        new = c - m + (ctx.start - w) / (steps * ctx.lr)
        ctx.state["moswa_c"] = new
        return {"moswa_u": new - m}

    def server_update(self, srv, rnd):
        u = rnd.mean(lambda c: c.up["moswa_u"])
        if self.moswa_warm == "code" and not srv.extra.get("moswa_started"):
            srv.state["moswa_m"] = u
        else:
            srv.state["moswa_m"].add_(u, alpha=self.moswa_gamma)
        srv.extra["moswa_started"] = True
