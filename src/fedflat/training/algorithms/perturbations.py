"""Where the local gradient is taken (perturbation / extrapolation parts).

Two shapes cover every method of the five papers:

* an *ascent* perturbation (SAM family): one pass gives g = ∇F_i(w; ζ); a direction d is built
  from g and whatever global information the part has (FedTOGA's κΔ, FedSMOO's −μ_i − s, a
  synthetic-data gradient); δ = ρ d/‖d‖; the update gradient is ∇F_i(w + δ; ζ) on the same
  mini-batch. Subclasses override `direction` (and `scale` for ASAM). Two passes per step.
* a *fixed* perturbation: δ is set once per round from state the client already has
  (FedLESAM's stale model, FedNSAM's momentum); one pass per step.

Every vector is flat over the trainable parameters, so δ is a per-parameter tensor by
construction (the FedLESAM repo indexes a flat vector per tensor and gets one scalar per layer).
"""
from __future__ import annotations

import torch

from ...core.registry import Registry
from .parts import AscentTerms, ClientContext, ConfigError, FusedForm, Param, Perturbation, safe_unit, sam_form
from .global_delta import DELTA_NORM, KEY as DELTA_KEY, init_delta, note_round, update_delta

PERTURBATIONS: Registry[type[Perturbation]] = Registry("perturbation")
SAM_EPS = 1e-12
RHO = Param(0.05, "perturbation radius ρ", low=0.0)
NP_PREV = "np_prev"  # ctx.scratch key of g̃_{k−1} (per round: scratch is new for every client visit)
NP_MODE = Param("off", "N-perturbation (FedTOGA Sec. 4.2): off; N: ascend along the previous step's perturbed "
                "gradient g̃_{k−1} (1 pass/step); fusion: along g_k + g̃_{k−1}", choices=("off", "N", "fusion"))


@PERTURBATIONS.register("none")
class NoPerturbation(Perturbation):
    """Plain gradient at the local iterate: g = ∇F_i(w; ζ)."""

    name = "none"

    def gradient(self, ctx, w, batch, grad_at):
        return grad_at(w, batch)

    def fused_form(self):
        return FusedForm("plain")


class AscentPerturbation(Perturbation):
    """Shared SAM skeleton: δ = ρ · scale(d)/‖·‖ with d = direction(g); gradient at w + δ.

    The loss reported is the one at w (before the ascent). δ = 0 when d = 0.
    """

    grad_evals = 2
    params = {"rho": RHO}

    def direction(self, ctx: ClientContext, w, g, batch, grad_at):
        """Ascent direction from the fresh local gradient g (already a private copy)."""
        return g

    def ascent(self, ctx: ClientContext, w, d):
        return safe_unit(d, SAM_EPS).mul_(self.rho)

    def after_ascent(self, ctx: ClientContext, delta) -> None:  # FedSMOO's dual update
        ...

    def neighbour_mode(self) -> str:
        """FedTOGA's N-perturbation (Sec. 4.2, App. A.3), pluggable into every ascent part:
        off: d from the fresh g_k (2 passes); N: from the previous step's perturbed gradient
        g̃_{k−1} instead (1 pass; g̃_{−1} = 0 at the start of each round, so δ_0 comes from the
        global terms only); fusion: from g_k + g̃_{k−1} (2 passes). The chosen g goes through
        `direction` as usual (FedSMOO's −μ_i − s, FedTOGA's +κΔ)."""
        return getattr(self, "np_mode", "off")

    def gradient(self, ctx, w, batch, grad_at):
        mode = self.neighbour_mode()
        if mode == "off":
            loss, g = grad_at(w, batch)
            if self.rho == 0.0:
                return loss, g
            g = g.clone()  # g's buffer is reused below
        else:
            prev = ctx.scratch.get(NP_PREV)
            if mode == "N":
                loss, g = None, torch.zeros_like(w) if prev is None else prev.clone()
            else:
                loss, g = grad_at(w, batch)
                g = g.clone() if prev is None else g.add(prev)
        d = self.direction(ctx, w, g, batch, grad_at)
        delta = self.ascent(ctx, w, d)
        self.after_ascent(ctx, delta)
        loss_p, g_pert = grad_at(w + delta, batch)
        if mode != "off":
            ctx.scratch[NP_PREV] = g_pert.clone()
        return (loss_p if loss is None else loss), g_pert  # N: no pass at w, loss at the perturbed point


@PERTURBATIONS.register("sam")
class SAMPerturbation(AscentPerturbation):
    """SAM (Foret et al.; FedSAM Eq. 3 in FedNSAM's notation): δ = ρ g/‖g‖ from the same
    mini-batch, g_SAM = ∇F_i(w+δ; ζ). Two forward/backward passes per step. np_mode=N/fusion
    swaps g for FedTOGA's neighbourhood gradient (AscentPerturbation.neighbour_mode; Fig. 5)."""

    name = "sam"
    params = {"rho": RHO, "np_mode": NP_MODE}

    def __init__(self, **hp):
        super().__init__(**hp)
        self.grad_evals = 1 if self.np_mode == "N" else 2

    def fused_form(self):
        return None if self.np_mode != "off" else sam_form(self.rho)


@PERTURBATIONS.register("asam")
class ASAMPerturbation(AscentPerturbation):
    """Adaptive SAM (Kwon et al. 2021, Eq. 8–9 / FedASAM, Caldarola et al. 2022):
    T_w = |w| + η (element-wise), δ = ρ T_w² g / ‖T_w g‖. η = 0 is the davda54/sam `adaptive`
    form FedSOL's code uses. T_w is applied to every parameter (Kwon's code leaves biases at 1)."""

    name = "asam"
    params = {"rho": Param(0.7, "ASAM radius ρ", low=0.0),
              "asam_eta": Param(0.2, "ASAM offset η in T_w = |w| + η", low=0.0)}

    def ascent(self, ctx, w, d):
        t = w.abs().add_(self.asam_eta)
        td = t * d
        n = td.norm()
        if n.item() == 0.0:
            return torch.zeros_like(w)
        return td.mul_(t).mul_(self.rho / (n + SAM_EPS))

    def fused_form(self):
        return sam_form(self.rho, asam_eta=float(self.asam_eta))


class _GlobalDeltaUser:
    """Mixin for parts that read FedTOGA's global update Δ (kept in global_delta.py)."""

    def init_server(self, srv):
        init_delta(srv)

    def downlink(self, srv):
        return {DELTA_KEY: srv.state[DELTA_KEY]}

    def client_begin(self, ctx):
        note_round(self, ctx)
        super().client_begin(ctx)

    def server_update(self, srv, rnd):
        update_delta(self, srv, rnd)


@PERTURBATIONS.register("toga")
class TOGAPerturbation(_GlobalDeltaUser, AscentPerturbation):
    """FedTOGA (Alg. 1 line 11 and Sec. 4.2). With Δ the server's global update (global_delta.py):

    G  (default): δ = ρ (g_k + κΔ)/‖g_k + κΔ‖, g_k fresh at w (2 passes per step);
    N           : δ = ρ (g̃_{k−1} + κΔ)/‖·‖, reusing the previous step's perturbed gradient
                  (1 pass per step; g̃_{−1} = 0 at the start of each round; FedTOGA Alg. 1 gives no value);
    fusion      : δ = ρ (g_k + g̃_{k−1} + κΔ)/‖·‖ (2 passes; the paper's mismatched denominator is
                  read as the norm of the full numerator; FedTOGA Sec. 4.2's denominator does not match).
    """

    name = "toga"
    params = {
        "rho": Param(0.1, "SAM radius ρ", low=0.0),
        "kappa": Param(1.0, "weight κ of the global update in the ascent direction", low=0.0),
        "toga_mode": Param("G", "G: fresh gradient; N: previous perturbed gradient; fusion: both",
                           choices=("G", "N", "fusion")),
        "delta_norm": DELTA_NORM,
    }

    def __init__(self, **hp):
        super().__init__(**hp)
        self.grad_evals = 1 if self.toga_mode == "N" else 2

    def neighbour_mode(self):  # N / fusion live in AscentPerturbation.gradient, shared with sam/smoo
        return "off" if self.toga_mode == "G" else self.toga_mode

    def direction(self, ctx, w, g, batch, grad_at):
        return g.add_(ctx.down[DELTA_KEY], alpha=self.kappa)

    def fused_form(self):
        return None if self.toga_mode != "G" else sam_form(self.rho, terms=self._fused_terms)

    def _fused_terms(self, ctx):
        return AscentTerms(c=ctx.down[DELTA_KEY] * self.kappa)


@PERTURBATIONS.register("smoo")
class SMOOPerturbation(AscentPerturbation):
    """FedSMOO (Sun et al. 2023; FedTOGA App. A.2, Alg. 2) dual-corrected perturbation.

    Per step: S = g − μ_i − s, ŝ = ρ S/‖S‖, μ_i ← μ_i + (ŝ − s), gradient at w + ŝ.
    After the round the client uploads s̃_i = μ_i − ŝ_last (Alg. 2; `smoo_upload=mu` uploads μ_i
    as FL-Simulator does); the server sets s = ρ · mean s̃_i / ‖mean s̃_i‖ and sends s down.
    State: μ_i per client, s on the server. Two passes per step.
    """

    name = "smoo"
    client_state = ("smoo_mu",)
    params = {"rho": Param(0.1, "SAM radius ρ", low=0.0),
              "smoo_upload": Param("paper", "paper: upload μ_i − ŝ_K (Alg. 2); mu: upload μ_i (FL-Simulator)",
                                   choices=("paper", "mu")),
              "np_mode": NP_MODE}

    def __init__(self, **hp):
        super().__init__(**hp)
        self.grad_evals = 1 if self.np_mode == "N" else 2

    def init_server(self, srv):
        srv.state.setdefault("smoo_s", srv.zeros())

    def downlink(self, srv):
        return {"smoo_s": srv.state["smoo_s"]}

    def client_begin(self, ctx):
        ctx.scratch["smoo_last"] = None

    def direction(self, ctx, w, g, batch, grad_at):
        return g.sub_(ctx.state["smoo_mu"]).sub_(ctx.down["smoo_s"])

    def after_ascent(self, ctx, delta):
        ctx.state["smoo_mu"].add_(delta).sub_(ctx.down["smoo_s"])
        ctx.scratch["smoo_last"] = delta

    def fused_form(self):
        return None if self.np_mode != "off" else sam_form(self.rho, terms=self._fused_terms)

    def _fused_terms(self, ctx):
        # the fused step writes each δ here; zeros until then, so a client with no step uploads μ_i as eager does
        ctx.scratch["smoo_last"] = last = torch.zeros_like(ctx.state["smoo_mu"])
        return AscentTerms(c=-ctx.down["smoo_s"], dual=ctx.state["smoo_mu"], last=last)

    def client_end(self, ctx, w):
        mu = ctx.state["smoo_mu"]
        last = ctx.scratch["smoo_last"]
        if self.smoo_upload == "mu" or last is None:
            return {"smoo_s": mu.clone()}
        return {"smoo_s": mu - last}

    def server_update(self, srv, rnd):
        srv.state["smoo_s"] = safe_unit(rnd.mean(lambda c: c.up["smoo_s"])).mul_(self.rho)


class FixedPerturbation(Perturbation):
    """δ fixed for the round (set in client_begin as scratch['delta']); one pass per step."""

    def gradient(self, ctx, w, batch, grad_at):
        return grad_at(w + ctx.scratch["delta"], batch)

    def fused_form(self):
        return FusedForm("shifted", shift=self._fused_shift)

    @staticmethod
    def _fused_shift(ctx):
        return ctx.scratch["delta"]


@PERTURBATIONS.register("momentum_direction")
class MomentumDirectionPerturbation(FixedPerturbation):
    """FedNSAM (Alg. 1 line 8): δ = −ρ m/‖m‖ with the server momentum m, fixed for the whole round.

    m is a descent displacement, so −m̂ points uphill (ascent, SAM-like); FedNSAM's Eq. 7 has the
    other sign; Alg. 1, Eq. 12 and the appendix have this one. δ = 0 while m = 0 (round 1: m⁰ = 0). One pass per step.
    """

    name = "momentum_direction"
    requires = ("m",)
    params = {"rho": Param(0.1, "perturbation radius ρ", low=0.0)}

    def client_begin(self, ctx: ClientContext) -> None:
        if "m" not in ctx.down:
            raise ConfigError("algorithm: momentum_direction perturbation needs a server that sends its momentum 'm'")
        ctx.scratch["delta"] = safe_unit(ctx.down["m"]).mul_(-self.rho)


@PERTURBATIONS.register("own_momentum_direction")
class OwnMomentumDirectionPerturbation(FixedPerturbation):
    """FedNSAM's perturbation with a momentum the part keeps itself, for servers that do not move
    by momentum (FedNSAM−Nesterov, FedNSAM-D): m ← λ m + mean_i Δ_i after every round (Alg. 1
    line 17), sent down; δ = −ρ m/‖m‖. With extrapolate=true the gradient is taken at
    w + λm + δ (Alg. 1 lines 7–9 per step); with false at w + δ (no Nesterov look-ahead).
    """

    name = "own_momentum_direction"
    params = {
        "rho": Param(0.1, "perturbation radius ρ", low=0.0),
        "lam": Param(0.85, "momentum coefficient λ", low=0.0, high=1.0, high_open=True),
        "extrapolate": Param(False, "also evaluate at the look-ahead w + λm (per-step Nesterov)"),
    }

    def init_server(self, srv):
        srv.state.setdefault("nsam_m", srv.zeros())

    def downlink(self, srv):
        return {"nsam_m": srv.state["nsam_m"]}

    def client_begin(self, ctx):
        m = ctx.down["nsam_m"]
        delta = safe_unit(m).mul_(-self.rho)
        if self.extrapolate:
            delta.add_(m, alpha=self.lam)
        ctx.scratch["delta"] = delta

    def server_update(self, srv, rnd):
        srv.state["nsam_m"].mul_(self.lam).add_(rnd.mean_delta)


@PERTURBATIONS.register("stale_direction")
class StaleDirectionPerturbation(FixedPerturbation):
    """FedLESAM's perturbation, fixed for the round, no ascent pass: δ = ρ d/‖d‖ with d a stale
    global model minus the current one θ^t. Two published readings, `lesam_dir`:

    - stale (Fan et al. 2024; FedTOGA Alg. 3): d = θ_i^old − θ^t, θ_i^old the global model client i
      received at its last participation (client state; θ_i^old ← θ^t at the end of the round).
      First participation (FedTOGA Alg. 3 leaves it open): lesam_first=zero gives δ = 0; init uses θ^old = θ^0.
      A never-written state vector is all zeros (a real model never is exactly zero).
    - global (FedSynSAM Alg. 1 line 9: g = w^{t−1} − w^t): d = θ^{t−1} − θ^t, the last global update,
      the same for every client (broadcast, counted as a downlink vector; FedLESAM's code also
      broadcasts it). δ = 0 in round 1. Equal to `stale` under full participation.
    """

    name = "stale_direction"
    client_state = ("lesam_old",)
    params = {"rho": Param(0.1, "perturbation radius ρ", low=0.0),
              "lesam_first": Param("zero", "first participation: zero (δ=0) or init (θ_old = θ^0)",
                                   choices=("zero", "init")),
              "lesam_dir": Param("stale", "d = θ_i^old − θ^t (stale: Fan et al.) or θ^{t−1} − θ^t (global: FedSynSAM)",
                                 choices=("stale", "global"))}

    def __init__(self, **hp):
        super().__init__(**hp)
        if self.lesam_dir == "global":
            self.client_state = ()  # the direction is the server's: no per-client memory

    def init_server(self, srv):
        self._theta0 = srv.theta.clone()  # the shared initialisation every client knows from the seed

    def downlink(self, srv):
        if self.lesam_dir == "global" and "lesam_prev" in srv.state:
            return {"lesam_global": srv.state["lesam_prev"] - srv.theta}
        return {}

    def client_begin(self, ctx):
        if self.lesam_dir == "global":
            d = ctx.down.get("lesam_global")
            ctx.scratch["delta"] = torch.zeros_like(ctx.theta) if d is None else safe_unit(d).mul_(self.rho)
            return
        old = ctx.state["lesam_old"]
        if not bool(old.any()):
            old = self._theta0 if self.lesam_first == "init" else ctx.theta
        ctx.scratch["delta"] = safe_unit(old - ctx.theta).mul_(self.rho)

    def client_end(self, ctx, w):
        if self.lesam_dir == "stale":
            ctx.state["lesam_old"].copy_(ctx.theta)
        return {}

    def server_update(self, srv, rnd):
        if self.lesam_dir == "global":  # runs before the server moves: θ^t becomes next round's θ^{t−1}
            srv.state["lesam_prev"] = srv.theta.clone()


# FedSOL's proximal-gradient perturbation needs the model (a second loss); it lives in losses.py
# with the other parts that compute global-model outputs.
