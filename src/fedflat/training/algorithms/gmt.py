"""FedGMT (Li, Liu, Cui, Hu, Li, "One Arrow, Two Hawks", ICML 2025): the global model trajectory
as a distillation target, with an ADMM-style dual. docs/algorithms_2025.md has the equations' source.

    EMA trajectory:  e ← α e + (1−α) θ after every server step, e⁰ = θ⁰
    local loss:      CE(w) + γτ² KL(softmax(f_e(x)/τ) ‖ softmax(f_w(x)/τ))   (batchmean, e detached)
    local step:      w ← w − η(∇loss + D_i/β),  D_i = Σ_{past rounds}(w_{i,K} − θ) (the dual u_i = −D_i/β)
    client end:      D_i ← D_i + (w_K − θ)
    server:          gmt_agg=active (paper): θ ← mean_S (w_i + D_i)          (= w_i − β u_i⁺)
                     gmt_agg=all (official code): θ ← mean_S w_i + (1/N)Σ_all D_j
Unlike FedDyn there is no proximal (w − θ) term, only the linear dual."""
from __future__ import annotations

import torch.nn.functional as F

from .parts import ConfigError, Param, RoundResult, ServerState
from .corrections import CORRECTIONS, _need
from .losses import LossTerm, logits_at
from .servers import SERVERS, DriftCorrectedMean

EMA = "gmt_e"
GMT_AGG = Param("active", "dual aggregation: active (paper, D_i of the sampled clients sent up) or all "
                "(official code: (1/N) Σ over every client's D_j, kept by the server)", choices=("active", "all"))


@CORRECTIONS.register("gmt")
class GMTCorrection(LossTerm):
    """The KL-to-trajectory loss term and the dual term D_i/β of FedGMT's local step."""

    name = "gmt"
    client_state = ("gmt_d",)
    params = {"gmt_gamma": Param(1.0, "weight γ of the KL to the EMA model", low=0.0),
              "gmt_tau": Param(3.0, "softmax temperature τ", low=0.0, low_open=True),
              "gmt_beta": Param(10.0, "dual step β (u_i = −D_i/β)", low=0.0, low_open=True),
              "gmt_agg": GMT_AGG}
    shares = ("gmt_agg",)  # the server reads the same switch: it decides whether D_i is sent up

    def downlink(self, srv):
        if EMA not in srv.state:
            raise ConfigError("algorithm: the 'gmt' correction needs the 'gmt' server (server state 'gmt_e')")
        return {EMA: srv.state[EMA]}

    def loss_term(self, ctx, logits, x, y, model):
        if self.gmt_gamma == 0.0:
            return None
        target = F.softmax(logits_at(model, _need(ctx, EMA, "gmt"), x) / self.gmt_tau, dim=1)
        kl = F.kl_div(F.log_softmax(logits / self.gmt_tau, dim=1), target, reduction="batchmean")
        return self.gmt_gamma * self.gmt_tau ** 2 * kl

    def adjust(self, ctx, w, g):
        return g + ctx.state["gmt_d"] / self.gmt_beta

    def client_end(self, ctx, w):
        ctx.state["gmt_d"] = ctx.state["gmt_d"] + (w - ctx.start)
        return {"gmt_d": ctx.state["gmt_d"]} if self.gmt_agg == "active" else {}


@SERVERS.register("gmt")
class GMTServer(DriftCorrectedMean):
    """θ from the dual-corrected models (FedDC's aggregation, module docstring), then the trajectory
    e ← αe + (1−α)θ."""

    name = "gmt"
    params = {"gmt_alpha": Param(0.95, "EMA coefficient α of the trajectory", low=0.0, high=1.0, high_open=True),
              "gmt_agg": GMT_AGG}
    agg_param, up_key, state_key, partner = "gmt_agg", "gmt_d", "gmt_H", "gmt"

    def init_server(self, srv: ServerState) -> None:
        srv.state.setdefault(EMA, srv.theta.clone())
        super().init_server(srv)

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        super().apply(srv, rnd)
        srv.state[EMA].mul_(self.gmt_alpha).add_(srv.theta, alpha=1.0 - self.gmt_alpha)
