"""How the server moves the global model (aggregation parts)."""
from __future__ import annotations

import torch

from ...core.errors import ConfigError
from ...core.registry import Registry
from .parts import Param, RoundResult, ServerOpt, ServerState
from .corrections import ALPHA, FEDDC_AGG

SERVERS: Registry[type[ServerOpt]] = Registry("server")


@SERVERS.register("mean")
class MeanServer(ServerOpt):
    """FedAvg: θ ← θ + η_g · mean_i Δ_i (η_g = 1 is plain averaging)."""

    name = "mean"
    params = {"server_lr": Param(1.0, "server learning rate η_g", low=0.0, low_open=True)}

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        srv.theta.add_(rnd.mean_delta, alpha=self.server_lr)


@SERVERS.register("momentum")
class MomentumServer(ServerOpt):
    """Heavy-ball server momentum: m ← λ m + mean Δ, θ ← θ + m (m⁰ = 0).

    With lookahead=true clients start from θ + λm (FedACG; FedNSAM's Nesterov extrapolation,
    equivalent to FedNSAM Alg. 1's per-step θ_k + λm, lines 7-10), and m is sent down with θ, so
    the downlink is 2 vectors (FedNSAM Table 1's "1×" counts the uplink only). Without look-ahead this is FedAvgM.
    """

    name = "momentum"
    params = {
        "lam": Param(0.85, "server momentum / look-ahead coefficient λ", low=0.0, high=1.0, high_open=True),
        "lookahead": Param(False, "start clients at θ + λm"),
    }

    def init_server(self, srv: ServerState) -> None:
        srv.state.setdefault("m", srv.zeros())

    def downlink(self, srv):
        return {"m": srv.state["m"]} if self.lookahead or "m" in self.requested else {}

    def start_point(self, srv):
        return srv.theta + self.lam * srv.state["m"] if self.lookahead else srv.theta

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        m = srv.state["m"]
        m.mul_(self.lam).add_(rnd.mean_delta)
        srv.theta.add_(m)


# ------------------------------------------------------------------------------------------------
# Baseline servers (issue 3, part A). Equations and sources: docs/algorithms_baselines.md.


def _require_state(srv: ServerState, key: str, server: str, part: str) -> None:
    if key not in srv.state:
        raise ConfigError(f"algorithm: the {server!r} server needs the {part!r} correction (server state {key!r})")


@SERVERS.register("feddyn")
class FedDynServer(ServerOpt):
    """FedDyn (Acar et al. 2021, Alg. 1 last line): θ ← (1/|S|)Σ_S w_i − h/α, with h kept by the
    `feddyn` correction (which runs first, so h is this round's). dyn_server_dual=false drops the
    −h/α term (plain mean), which with α→0 makes FedDyn FedAvg."""

    name = "feddyn"
    params = {"alpha": ALPHA, "dyn_server_dual": Param(True, "subtract h/α from the mean model")}
    shares = ("alpha",)  # the clients' FedDyn α (Alg. 1 uses one α on both sides)

    def init_server(self, srv):
        _require_state(srv, "h", "feddyn", "feddyn")

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        theta = rnd.mean(lambda c: c.end)
        if self.dyn_server_dual:
            theta.sub_(srv.state["h"], alpha=1.0 / self.alpha)
        srv.theta.copy_(theta)


class _AdaptiveServer(ServerOpt):
    """FedOpt (Reddi et al. 2021, Alg. 2) on the pseudo-gradient Δ = mean_S Δ_i:
        m ← β1 m + (1−β1)Δ,   v ← (second moment, below),   θ ← θ + η_g m/(√v + τ)
    m⁰ = 0, v⁰ = τ² (Alg. 2: v_{−1} ≥ τ²; adam_v0=zero starts at 0). No bias correction (as in Alg. 2)."""

    params = {
        "server_lr": Param(0.01, "server learning rate η_g", low=0.0, low_open=True),
        "beta1": Param(0.9, "first-moment decay β1", low=0.0, high=1.0, high_open=True),
        "beta2": Param(0.99, "second-moment decay β2", low=0.0, high=1.0, high_open=True),
        "tau": Param(1e-3, "adaptivity τ", low=0.0, low_open=True),
        "adam_v0": Param("tau2", "initial second moment: τ² or 0", choices=("tau2", "zero")),
    }

    def init_server(self, srv):
        srv.state.setdefault("opt_m", srv.zeros())
        srv.state.setdefault("opt_v", srv.zeros() + (self.tau ** 2 if self.adam_v0 == "tau2" else 0.0))

    def second_moment(self, v, d2):
        raise NotImplementedError

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        d = rnd.mean_delta
        m, v = srv.state["opt_m"], srv.state["opt_v"]
        m.mul_(self.beta1).add_(d, alpha=1.0 - self.beta1)
        srv.state["opt_v"] = v = self.second_moment(v, d * d)
        srv.theta.add_(self.server_lr * m / (v.sqrt() + self.tau))


@SERVERS.register("adam")
class AdamServer(_AdaptiveServer):
    """FedAdam: v ← β2 v + (1−β2)Δ²."""

    name = "adam"

    def second_moment(self, v, d2):
        return v.mul_(self.beta2).add_(d2, alpha=1.0 - self.beta2)


@SERVERS.register("yogi")
class YogiServer(_AdaptiveServer):
    """FedYogi: v ← v − (1−β2)Δ² sign(v − Δ²)."""

    name = "yogi"

    def second_moment(self, v, d2):
        return v.sub_((1.0 - self.beta2) * d2 * torch.sign(v - d2))


@SERVERS.register("nova")
class NovaServer(ServerOpt):
    """FedNova (Wang et al. 2020, Eq. 6-7 and Sec. 4 "momentum"): normalised averaging
        a_i = ‖a_i‖₁ = (τ_i − ρ(1−ρ^τ_i)/(1−ρ))/(1−ρ)   (= τ_i for plain SGD)
        θ ← θ + η_g · τ_eff · Σ_S p_i Δ_i / a_i,   τ_eff = Σ_S p_i a_i
    τ_i = the client's own local steps (E·⌈n_i/B⌉ with training.local_epochs; the server assigns
    them, so nothing extra is sent) and ρ = training.local_momentum, the clients' heavy-ball
    coefficient (the paper's a_i is defined by the local solver; FedSOL's code reads it from the
    client optimizer). With equal τ_i (training.local_steps) FedNova equals FedAvg."""

    name = "nova"
    params = {"server_lr": Param(1.0, "server learning rate η_g", low=0.0, low_open=True)}

    def __init__(self, **hp):
        super().__init__(**hp)
        self._a: dict[int, float] = {}

    def client_begin(self, ctx):
        self._a[ctx.cid] = ctx.effective_steps  # base.effective_steps is FedNova's ‖a_i‖₁

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        a = self._a
        tau_eff = sum(p * a[c.cid] for p, c in zip(rnd.weights.tolist(), rnd.clients))
        srv.theta.add_(rnd.mean(lambda c: c.delta / a[c.cid]), alpha=self.server_lr * tau_eff)


class DriftCorrectedMean(ServerOpt):
    """The mean of the clients' drift-corrected models (FedDC Alg. 1; FedGMT's dual aggregation):
    agg=active: θ ← mean_S (w_i + h_i), h_i sent up by the partner correction;
    agg=all:    θ ← mean_S w_i + H, H = (1/N)Σ_all h_i kept here as H ← H + (1/N)Σ_S Δ_i.
    A subclass names its switch (`agg_param`), the uplink key of h_i, its state key and its partner part."""

    agg_param = up_key = state_key = partner = ""

    @property
    def agg(self) -> str:
        return getattr(self, self.agg_param)

    def init_server(self, srv):
        if self.agg == "all":
            srv.state.setdefault(self.state_key, srv.zeros())

    def server_update(self, srv, rnd):
        if self.agg == "all":
            for c in rnd.clients:
                srv.state[self.state_key].add_(c.delta, alpha=1.0 / srv.num_clients)

    def apply(self, srv: ServerState, rnd: RoundResult) -> None:
        if self.agg == "active":
            if self.up_key not in rnd.clients[0].up:
                raise ConfigError(f"algorithm: the '{self.name}' server needs the '{self.partner}' correction "
                                  f"(uplink '{self.up_key}')")
            srv.theta.copy_(rnd.mean(lambda c: c.end + c.up[self.up_key]))
        else:
            srv.theta.copy_(rnd.mean(lambda c: c.end) + srv.state[self.state_key])


@SERVERS.register("feddc")
class FedDCServer(DriftCorrectedMean):
    """FedDC (Gao et al. 2022, Alg. 1): the server averages the drift-corrected local models."""

    name = "feddc"
    params = {"feddc_agg": FEDDC_AGG}
    shares = ("feddc_agg",)  # the `feddc` correction sends h_i up exactly when this server averages it
    agg_param, up_key, state_key, partner = "feddc_agg", "dc_h", "dc_H", "feddc"
