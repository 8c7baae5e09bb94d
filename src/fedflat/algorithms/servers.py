"""How the server moves the global model (aggregation parts)."""
from __future__ import annotations

from ..registry import Registry
from .base import Param, RoundResult, ServerOpt, ServerState

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
    which notes §2.1 show equals Alg. 1's per-step θ_k + λm), and m is sent down with θ, so
    the downlink is 2 vectors (notes §8.8). Without look-ahead this is FedAvgM.
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
