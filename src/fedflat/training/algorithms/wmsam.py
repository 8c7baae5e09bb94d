"""FedWMSAM (Li, Huang, Jiang, Liu, Xie, Du, Wang, Wu, NeurIPS 2025, arXiv 2511.22080): a
momentum-guided perturbation with one backward pass per step, on SCAFFOLD's control variates.
Equations from the authors' poster (§§A-D, in the official repository); docs/algorithms_2025.md.

    A  personalised momentum:  m_i = m + α/(1−α)(c − c_i)
    B  at local step b:        d_b = (θ + b·m_i) − w_b,  δ_b = ρ d_b/‖d_b‖ (0 where d_b = 0),
                               g_b = ∇F_i(w_b + δ_b)
       step:                   w ← w − η(α g_b + (1−α) m_i) = w − η(α(g_b + c − c_i) + (1−α) m)
    C  agreement:              a = mean_S[cos(Δ_i, m) + 1] (0 where a norm is 0), m the momentum
                               the clients used; α ← (1−λ)α + λ·clip(a, 0.1, 0.9)
    D  m ← −mean_S Δ_i/(K_eff·η), c as SCAFFOLD option II (the `scaffold` correction)

The step is built from parts: `scaffold` (g + c − c_i), then `wmsam_mix` (α·that + (1−α)m); the
perturbation `momentum_target` reads m_i from ctx.scratch, where `wmsam_mix` puts it."""
from __future__ import annotations

import math

from .parts import ClientContext, ConfigError, Correction, Param, Perturbation, safe_unit
from .corrections import CORRECTIONS, _mean_step_direction, _need, _note_schedule
from .perturbations import PERTURBATIONS, RHO, SAM_EPS

MI_KEY = "wmsam_m_i"  # ctx.scratch: this client's personalised momentum m_i
STEP_KEY = "wmsam_step"
ALPHA_KEY = "wm_alpha"  # srv.extra: the adaptive mixing weight α (a scalar the server sends with θ)


@PERTURBATIONS.register("momentum_target")
class MomentumTargetPerturbation(Perturbation):
    """δ_b = ±ρ·unit(θ + b·m_i − w_b), gradient at w_b + δ_b: an ascent toward where the global
    model is predicted to be after b steps (poster §B). One pass per step; b counts the round's
    steps. wm_sign=descent is the official code's sign (WMSAM.py `e_w = -...`)."""

    name = "momentum_target"
    first_step_inert = "FedWMSAM's perturbation is zero at a round's first step (d_0 = θ − w_0 = 0)"
    params = {"rho": RHO,
              "wm_sign": Param("ascent", "sign of δ: ascent (poster §B) or descent (official code)",
                               choices=("ascent", "descent"))}

    def client_begin(self, ctx: ClientContext) -> None:
        ctx.scratch[STEP_KEY] = 0

    def gradient(self, ctx, w, batch, grad_at):
        b = ctx.scratch[STEP_KEY]
        ctx.scratch[STEP_KEY] = b + 1
        if self.rho == 0.0 or b == 0:  # d_0 = θ − w_0 = 0
            return grad_at(w, batch)
        m_i = ctx.scratch.get(MI_KEY)
        if m_i is None:
            raise ConfigError("algorithm: the 'momentum_target' perturbation needs the 'wmsam_mix' correction")
        rho = self.rho if self.wm_sign == "ascent" else -self.rho
        delta = safe_unit(ctx.theta + b * m_i - w, SAM_EPS).mul_(rho)
        return grad_at(w + delta, batch)


@CORRECTIONS.register("wmsam_mix")
class WMSAMMix(Correction):
    """g ← α g + (1−α) m with the server's adaptive α (poster §C) and m = −mean_S Δ_i/(K_eff·η)
    (§D). Placed after `scaffold`, so α's share carries c − c_i: α(g + c − c_i) + (1−α)m =
    α g + (1−α) m_i. wm_m_scale multiplies the new m (the official code's lr_decay factor)."""

    name = "wmsam_mix"
    params = {"wm_alpha0": Param(0.1, "initial weight α₀ of the local gradient", low=0.0, high=1.0,
                                 low_open=True, high_open=True),
              "wm_lambda": Param(0.01, "step λ of α's update toward the agreement", low=0.0, high=1.0),
              "wm_m_scale": Param(1.0, "factor on the new momentum m (official code: its lr_decay)", low=0.0)}

    def __init__(self, **hp):
        super().__init__(**hp)
        self._alpha = self.wm_alpha0

    def init_server(self, srv):
        srv.state.setdefault("wm_m", srv.zeros())
        srv.extra.setdefault(ALPHA_KEY, self.wm_alpha0)

    def downlink(self, srv):
        self._alpha = srv.extra[ALPHA_KEY]  # one scalar: read here, so a resumed run sends the saved α
        return {"wm_m": srv.state["wm_m"]}

    def client_begin(self, ctx):
        _note_schedule(self, ctx)
        a, m = self._alpha, _need(ctx, "wm_m", "wmsam_mix")
        c = _need(ctx, "c", "wmsam_mix (after scaffold)")
        ctx.scratch[MI_KEY] = m + (a / (1.0 - a)) * (c - ctx.state["c_i"])

    def adjust(self, ctx, w, g):
        return self._alpha * g + (1.0 - self._alpha) * ctx.down["wm_m"]

    def server_update(self, srv, rnd):
        m = srv.state["wm_m"]
        mn = m.norm().item()
        vals = []
        for c in rnd.clients:
            den = c.delta.norm().item() * mn
            vals.append(0.0 if den == 0.0 else float(c.delta @ m) / den + 1.0)
        a = math.fsum(vals) / len(vals)
        srv.extra[ALPHA_KEY] = (1.0 - self.wm_lambda) * srv.extra[ALPHA_KEY] + self.wm_lambda * min(max(a, 0.1), 0.9)
        d, k = _mean_step_direction(self, rnd)
        srv.state["wm_m"] = d * (-self.wm_m_scale / k)
