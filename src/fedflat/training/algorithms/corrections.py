"""What is added to the local step (correction parts).

Each part maps the local gradient g (after perturbation and clipping) to the direction the
local SGD step uses; the engine then adds weight decay and steps w ← w − lr·g. The server-side
bookkeeping of a correction (control variates, duals, global momenta) lives in its
`server_update`, which the engine runs before the server part moves θ.

Anchors: the proximal-type terms pull towards ctx.start, the point local training starts from.
That is θ for FedProx/SCAFFOLD/FedDyn/FedDC and the look-ahead point θ+λm for FedACG (FedACG's
prox is to the look-ahead model); `prox_anchor: theta` switches FedProx to the received θ.
All equations and their sources are in docs/algorithms_baselines.md.
"""
from __future__ import annotations

import torch

from ...core.errors import ConfigError
from ...core.registry import Registry
from .parts import ClientContext, Correction, Param, RoundResult, ServerState

CORRECTIONS: Registry[type[Correction]] = Registry("correction")


def _note_schedule(part, ctx: ClientContext) -> None:
    """The server sets lr, K_i and the local momentum, so it knows them; parts that turn a
    displacement into a gradient-scale estimate note, when a client starts, the round's lr and that
    client's divisor K_eff,i·lr (K_eff = K for plain SGD; base.effective_steps)."""
    part._lr = ctx.lr
    part.__dict__.setdefault("_divisor", {})[ctx.cid] = ctx.effective_steps * ctx.lr


def _mean_step_direction(part, rnd: RoundResult) -> tuple[torch.Tensor, float]:
    """(D, k) with −D/k = −Σ_S p_i Δ_i/(K_eff,i·lr): the round's mean local step direction
    (gradient scale), whatever each client's K_i and the local momentum."""
    return rnd.mean_normalised_delta(part._divisor)


def _need(ctx: ClientContext, key: str, who: str) -> torch.Tensor:
    if key not in ctx.down:
        raise ConfigError(f"algorithm: the {who} correction needs the server to send {key!r}; "
                          "use it with its own server part")
    return ctx.down[key]


def _sum_over_sampled(rnd: RoundResult, get) -> torch.Tensor:
    """Σ_{i∈S} get(i): the plain (unweighted) sum, for state that must average over all N clients."""
    out = torch.zeros_like(get(rnd.clients[0]))
    for c in rnd.clients:
        out.add_(get(c))
    return out


# ------------------------------------------------------------------------------------- FedProx
@CORRECTIONS.register("prox")
class ProxCorrection(Correction):
    """FedProx (Li et al. 2020, Eq. 2): local objective F_i(w) + (μ/2)‖w − w⁰‖², so g ← g + μ(w − w⁰).
    w⁰ = ctx.start (θ, or FedACG's look-ahead point); prox_anchor=theta uses the received θ."""

    name = "prox"
    first_step_inert = "the proximal term μ(w − w⁰) is zero at a round's start point"
    params = {"mu": Param(0.01, "proximal weight μ", low=0.0),
              "prox_anchor": Param("start", "point the proximal term pulls to", choices=("start", "theta"))}

    def adjust(self, ctx, w, g):
        if self.mu == 0.0:
            return g
        anchor = ctx.start if self.prox_anchor == "start" else ctx.theta
        return g + self.mu * (w - anchor)

    def fused_linear(self, ctx):
        anchor = ctx.start if self.prox_anchor == "start" else ctx.theta
        return (1.0, 0.0, None) if self.mu == 0.0 else (1.0, self.mu, anchor * -self.mu)


# ------------------------------------------------------------------------------------- SCAFFOLD
@CORRECTIONS.register("scaffold")
class ScaffoldCorrection(Correction):
    """SCAFFOLD option II (Karimireddy et al. 2020, Alg. 1 lines 10, 12, 17):
        step:       g ← g + c − c_i
        client end: c_i⁺ = c_i − c + (x − y_K)/(K_eff·lr),  uplink Δc_i = c_i⁺ − c_i
        server:     c ← c + (1/N) Σ_{i∈S} Δc_i   (= (|S|/N)·mean Δc_i)
    c starts at 0 and is sent down with θ (downlink 2×, uplink 2×). K_eff = K for plain SGD; with
    local momentum m it is (K − m(1−m^K)/(1−m))/(1−m) (base.effective_steps), so c_i stays the mean
    local gradient (option II's intent) instead of ~1/(1−m) times it: FedSOL's official SCAFFOLD
    (`adaptive_divison`, github.com/Lee-Gihun/FedSOL). K is the client's own step count."""

    name = "scaffold"
    client_state = ("c_i",)

    def init_server(self, srv: ServerState) -> None:
        srv.state.setdefault("c", srv.zeros())

    def downlink(self, srv):
        return {"c": srv.state["c"]}

    def adjust(self, ctx, w, g):
        return g + (_need(ctx, "c", "scaffold") - ctx.state["c_i"])

    def fused_linear(self, ctx):
        return 1.0, 0.0, _need(ctx, "c", "scaffold") - ctx.state["c_i"]

    def client_end(self, ctx, w):
        c_i = ctx.state["c_i"]
        new = c_i - ctx.down["c"] + (ctx.start - w) / (ctx.effective_steps * ctx.lr)
        dc = new - c_i
        ctx.state["c_i"] = new
        return {"dc": dc}

    def server_update(self, srv, rnd):
        srv.state["c"].add_(_sum_over_sampled(rnd, lambda c: c.up["dc"]), alpha=1.0 / srv.num_clients)


# ------------------------------------------------------------------------------------- FedDyn
ALPHA = Param(0.01, "dynamic-regulariser weight α", low=0.0, low_open=True)
DYN_SCALE = Param("num_clients", "FedDyn server dual: h ← h − α·(1/N)Σ_S Δ_i (num_clients, Acar et al. Alg. 1) "
                  "or α·(1/|S|)Σ_S Δ_i (sampled)", choices=("num_clients", "sampled"))


@CORRECTIONS.register("feddyn")
class FedDynCorrection(Correction):
    """FedDyn (Acar et al. 2021, Alg. 1): local objective F_i(w) − ⟨h_i, w⟩ + (α/2)‖w − θ‖², so
        step:       g ← g − h_i + α(w − θ)
        client end: h_i ← h_i − α(w_K − θ)
        server:     h ← h − α·(1/N) Σ_{i∈S} (w_i − θ)   (active clients, divided by all N)
    and the `feddyn` server sets θ ← mean_S w_i − h/α. θ here is ctx.start (= θ without look-ahead)."""

    name = "feddyn"
    client_state = ("h_i",)
    params = {"alpha": ALPHA, "dyn_scale": DYN_SCALE}

    def init_server(self, srv):
        srv.state.setdefault("h", srv.zeros())

    def adjust(self, ctx, w, g):
        return g - ctx.state["h_i"] + self.alpha * (w - ctx.start)

    def fused_linear(self, ctx):
        return 1.0, self.alpha, -ctx.state["h_i"] - self.alpha * ctx.start

    def client_end(self, ctx, w):
        ctx.state["h_i"] = ctx.state["h_i"] - self.alpha * (w - ctx.start)
        return {}

    def server_update(self, srv, rnd):
        n = srv.num_clients if self.dyn_scale == "num_clients" else len(rnd.clients)
        srv.state["h"].sub_(_sum_over_sampled(rnd, lambda c: c.delta), alpha=self.alpha / n)


@CORRECTIONS.register("feddyn_sent")
class FedDynSentCorrection(FedDynCorrection):
    """FedDyn whose dynamic correction is sent up as a second uplink vector: FedSynSAM Sec. VI-A counts FedLESAM-D
    as 2x uplink ("extra uplink communication overhead of transmitting the control variate or the dynamic
    correction is required in ... FedLESAM-D"), "transmitted with the same compressor used for gradient
    compression". The correction sent is the client's dual increment, and the server's dual sums what it receives:
        client end: Δh_i = h_i⁺ − h_i = −α(w_K − θ), uplink "dh" (compressed by the engine, Simulation.send_up)
        server:     h ← h + (1/N) Σ_{i∈S} Q(Δh_i)
    Uncompressed this is FedDyn's dual exactly (h − α(1/N)Σ_S Δ_i, Acar et al. Alg. 1); under a compressor the dual
    moves by the received correction, not by α times the received model update. The client's own h_i keeps its
    exact increment (it knows it). The local step and the server's θ are FedDyn's (`feddyn`), so the fused step
    applies unchanged. Why the increment and not h_i itself: the server's h is a running sum of increments, and
    sending h_i would need the server to hold every client's h_i to keep it (FedLESAM's code keeps them there)."""

    name = "feddyn_sent"

    def client_end(self, ctx, w):
        dh = -self.alpha * (w - ctx.start)
        ctx.state["h_i"] = ctx.state["h_i"] + dh
        return {"dh": dh}

    def server_update(self, srv, rnd):
        n = srv.num_clients if self.dyn_scale == "num_clients" else len(rnd.clients)
        srv.state["h"].add_(_sum_over_sampled(rnd, lambda c: c.up["dh"]), alpha=1.0 / n)


# ------------------------------------------------------------------------------- FedCM / MoFedSAM
@CORRECTIONS.register("momentum_mix")
class MomentumMixCorrection(Correction):
    """FedCM (Xu et al. 2021, Alg. 1 line 8) / MoFedSAM (Qu et al. 2022): g ← α g + (1−α) d with
    d = −mean_S Δ_i /(K·lr) the previous round's average update as a gradient estimate (lr of the
    round that produced it), d⁰ = 0, sent down as "d" (downlink 2×). With per-client K_i or local
    momentum: d = −Σ_S p_i Δ_i/(K_eff,i·lr), the same mean-direction estimate."""

    name = "momentum_mix"
    params = {"cm_alpha": Param(0.1, "weight α of the local gradient", low=0.0, high=1.0, low_open=True)}

    def init_server(self, srv):
        srv.state.setdefault("d", srv.zeros())

    def downlink(self, srv):
        return {"d": srv.state["d"]}

    def client_begin(self, ctx):
        _note_schedule(self, ctx)

    def adjust(self, ctx, w, g):
        return self.cm_alpha * g + (1.0 - self.cm_alpha) * _need(ctx, "d", "momentum_mix")

    def fused_linear(self, ctx):
        return self.cm_alpha, 0.0, (1.0 - self.cm_alpha) * _need(ctx, "d", "momentum_mix")

    def server_update(self, srv, rnd):
        d, k = _mean_step_direction(self, rnd)
        srv.state["d"] = d * (-1.0 / k)


# ---------------------------------------------------------------------------- FedSAGD / FedANAG
BETA = Param(0.9, "momentum coefficient β", low=0.0, high=1.0, high_open=True)


class _GlobalMomentum(Correction):
    """Server momentum v used inside the local step: g ← a·g + b·v, v fixed during the round.
    Server (FedSAGD Alg. 1 line 15, Lemma D.6): v ← β/(1+β)·v − mean_S Δ_i /((1+β)·lr·K), v⁰ = 0
    (mean_S Δ_i/K → Σ_S p_i Δ_i/K_eff,i with per-client K_i or local momentum, as `momentum_mix`)."""

    coef: tuple  # (a(β), b(β))
    params = {"beta": BETA}

    def init_server(self, srv):
        srv.state.setdefault("v", srv.zeros())

    def downlink(self, srv):
        return {"v": srv.state["v"]}

    def client_begin(self, ctx):
        _note_schedule(self, ctx)

    def adjust(self, ctx, w, g):
        a, b = self.coef(self.beta)
        return a * g + b * _need(ctx, "v", self.name)

    def fused_linear(self, ctx):
        a, b = self.coef(self.beta)
        return a, 0.0, b * _need(ctx, "v", self.name)

    def server_update(self, srv, rnd):
        b = self.beta
        v = srv.state["v"]
        d, k = _mean_step_direction(self, rnd)
        v.mul_(b / (1.0 + b)).sub_(d, alpha=1.0 / ((1.0 + b) * k))


@CORRECTIONS.register("sagd_momentum")
class SAGDMomentum(_GlobalMomentum):
    """FedSAGD Alg. 1 lines 9-10: m = βv + g (the gradient part of the local step)."""

    name = "sagd_momentum"
    coef = staticmethod(lambda b: (1.0, b))


@CORRECTIONS.register("anag_momentum")
class ANAGMomentum(_GlobalMomentum):
    """FedANAG (FedSAGD App. C.10): step (1+β)g + β²m. Its server rule is not written in the paper;
    the FedANAG code's (v ← βv + (Δ + Kβ²lr·v)/(K(1+β)lr), descent sign) is algebraically FedSAGD's
    line 15 in the gradient-sign convention used here."""

    name = "anag_momentum"
    coef = staticmethod(lambda b: (1.0 + b, b * b))


@CORRECTIONS.register("hybrid_prox")
class HybridProxCorrection(Correction):
    """FedSAGD's hybrid proximal term (Alg. 1 line 10, §3.2): (1/(2(λ+μ)))‖(λ+μ)w − λθ‖², i.e.
    (λ/2)‖w − θ‖² + (μ/2)‖w‖² + const, so g ← g + (λ+μ)w − λθ (θ = ctx.start)."""

    name = "hybrid_prox"
    params = {"prox_lam": Param(0.01, "proximal weight λ (pull to θ)", low=0.0),
              "decay_mu": Param(0.001, "decay weight μ (pull to 0): the run's only weight decay", low=0.0)}
    decay_param = "decay_mu"  # "combining the proximal term with weight decay" (§3.2): μ replaces the engine's

    def adjust(self, ctx, w, g):
        return g + (self.prox_lam + self.decay_mu) * w - self.prox_lam * ctx.start

    def fused_linear(self, ctx):
        return 1.0, self.prox_lam + self.decay_mu, ctx.start * -self.prox_lam


# ------------------------------------------------------------------------------------- FedLNAG
@CORRECTIONS.register("local_nesterov")
class LocalNesterovCorrection(Correction):
    """FedLNAG (Yu et al. 2019 as FedSAGD App. C.5 writes it): y_k = x_k − lr·β m_k,
    m_{k+1} = βm_k + (1−β)∇F(y_k), x_{k+1} = x_k − lr·m_{k+1}. The engine's iterate is y (the point
    the gradient is taken at, PyTorch's nesterov=True form), which turns the rule into a correction:
        m⁺ = βm + (1−β)g,   g ← (1+β)m⁺ − βm.
    lnag_share=true: clients start each round from the server's mean momentum buffer ("m_loc" down)
    and send theirs up (2× both ways, FedSAGD Table 1); false: buffers reset to 0 every round."""

    name = "local_nesterov"
    params = {"beta": BETA, "lnag_share": Param(True, "average local momentum buffers at the server")}

    def init_server(self, srv):
        if self.lnag_share:
            srv.state.setdefault("m_loc", srv.zeros())

    def downlink(self, srv):
        return {"m_loc": srv.state["m_loc"]} if self.lnag_share else {}

    def client_begin(self, ctx):
        ctx.scratch["m_loc"] = ctx.down["m_loc"].clone() if self.lnag_share else torch.zeros_like(ctx.start)

    def adjust(self, ctx, w, g):
        m = ctx.scratch["m_loc"]
        new = self.beta * m + (1.0 - self.beta) * g
        out = (1.0 + self.beta) * new - self.beta * m
        ctx.scratch["m_loc"] = new
        return out

    def client_end(self, ctx, w):
        return {"m_loc": ctx.scratch["m_loc"]} if self.lnag_share else {}

    def server_update(self, srv, rnd):
        if self.lnag_share:
            srv.state["m_loc"] = rnd.mean(lambda c: c.up["m_loc"])


# ------------------------------------------------------------------------------------ MimeLite
@CORRECTIONS.register("mimelite")
class MimeLiteCorrection(Correction):
    """MimeLite (Karimireddy et al. 2021, Alg. 1; FedSAGD App. C.8): g ← (1−β)g + βm with the server
    momentum m fixed during the round; the client sends a gradient at the received model and the
    server sets m ← (1−β)·mean_S ∇F_i(x) + βm (m⁰ = 0). Uplink and downlink 2×.
    mime_grad: first_batch = the first local mini-batch gradient, taken at x (no extra pass; Mime
    uses the full local batch there); local_mean = the mean of the K local gradients."""

    name = "mimelite"
    params = {"beta": Param(0.2, "server momentum β", low=0.0, high=1.0, high_open=True),
              "mime_grad": Param("first_batch", "client gradient sent for the server momentum",
                                 choices=("first_batch", "local_mean"))}

    def init_server(self, srv):
        srv.state.setdefault("mime_m", srv.zeros())

    def downlink(self, srv):
        return {"mime_m": srv.state["mime_m"]}

    def client_begin(self, ctx):
        ctx.scratch["mime_g"] = None
        ctx.scratch["mime_n"] = 0

    def adjust(self, ctx, w, g):
        n = ctx.scratch["mime_n"]
        if n == 0:
            ctx.scratch["mime_g"] = g.clone()
        elif self.mime_grad == "local_mean":
            ctx.scratch["mime_g"].add_(g)
        ctx.scratch["mime_n"] = n + 1
        return (1.0 - self.beta) * g + self.beta * _need(ctx, "mime_m", "mimelite")

    def client_end(self, ctx, w):
        g = ctx.scratch["mime_g"]
        if self.mime_grad == "local_mean":
            g = g / ctx.scratch["mime_n"]
        return {"mime_g": g}

    def server_update(self, srv, rnd):
        m = srv.state["mime_m"]
        m.mul_(self.beta).add_(rnd.mean(lambda c: c.up["mime_g"]), alpha=1.0 - self.beta)


# --------------------------------------------------------------------------------------- FedDC
FEDDC_AGG = Param("active", "FedDC server: active = mean_S(w_i + h_i) (paper); "
                  "all = mean_S w_i + mean over all N of h_i (official code)", choices=("active", "all"))


@CORRECTIONS.register("feddc")
class FedDCCorrection(Correction):
    """FedDC's drift decoupling (Gao et al. 2022, Eq. 6-8): penalty (α/2)‖w + h_i − θ‖², so
        step:       g ← g + α(w + h_i − θ)
        client end: h_i ← h_i + (w_K − θ)
    The gradient-correction term ⟨w, g − g_i⟩/(ηK) of FedDC is SCAFFOLD's c − c_i: compose with
    `scaffold`. feddc_agg=active sends h_i up so the `feddc` server can average w_i + h_i."""

    name = "feddc"
    client_state = ("dc_h",)
    params = {"alpha": ALPHA, "feddc_agg": FEDDC_AGG}

    def adjust(self, ctx, w, g):
        return g + self.alpha * (w + ctx.state["dc_h"] - ctx.start)

    def fused_linear(self, ctx):
        return 1.0, self.alpha, self.alpha * (ctx.state["dc_h"] - ctx.start)

    def client_end(self, ctx, w):
        ctx.state["dc_h"] = ctx.state["dc_h"] + (w - ctx.start)
        return {"dc_h": ctx.state["dc_h"]} if self.feddc_agg == "active" else {}
