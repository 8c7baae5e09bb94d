"""Where the local gradient is taken (perturbation / extrapolation parts)."""
from __future__ import annotations

from ..registry import Registry
from .base import ClientContext, ConfigError, Param, Perturbation, safe_unit

PERTURBATIONS: Registry[type[Perturbation]] = Registry("perturbation")
SAM_EPS = 1e-12


@PERTURBATIONS.register("none")
class NoPerturbation(Perturbation):
    """Plain gradient at the local iterate: g = ∇F_i(w; ζ)."""

    name = "none"

    def gradient(self, ctx, w, batch, grad_at):
        return grad_at(w, batch)


@PERTURBATIONS.register("sam")
class SAMPerturbation(Perturbation):
    """SAM (Foret et al.; FedSAM Eq. 3): δ = ρ g/‖g‖ from the same mini-batch, g_SAM = ∇F_i(w+δ; ζ).

    Two forward/backward passes per step. The loss reported is the one at w (before the ascent).
    """

    name = "sam"
    grad_evals = 2
    params = {"rho": Param(0.05, "SAM radius ρ", low=0.0)}

    def gradient(self, ctx, w, batch, grad_at):
        loss, g = grad_at(w, batch)
        if self.rho == 0.0:
            return loss, g
        delta = safe_unit(g, SAM_EPS).mul_(self.rho)  # new tensor: g's buffer is reused below
        _, g_pert = grad_at(w + delta, batch)
        return loss, g_pert


@PERTURBATIONS.register("momentum_direction")
class MomentumDirectionPerturbation(Perturbation):
    """FedNSAM (Alg. 1 line 8): δ = −ρ m/‖m‖ with the server momentum m, fixed for the whole round.

    m is a descent displacement, so −m̂ points uphill (ascent, SAM-like); notes §8.4 resolve the sign
    of Eq. 7 in favour of Alg. 1. δ = 0 while m = 0 (round 1, notes §8.5). One pass per step.
    """

    name = "momentum_direction"
    requires = ("m",)
    params = {"rho": Param(0.1, "perturbation radius ρ", low=0.0)}

    def client_begin(self, ctx: ClientContext) -> None:
        if "m" not in ctx.down:
            raise ConfigError("algorithm: momentum_direction perturbation needs a server that sends its momentum 'm'")
        ctx.scratch["delta"] = safe_unit(ctx.down["m"]).mul_(-self.rho)

    def gradient(self, ctx, w, batch, grad_at):
        return grad_at(w + ctx.scratch["delta"], batch)
