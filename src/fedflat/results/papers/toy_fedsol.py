"""FedSOL's two-parameter toy example (App. H, Fig. 12) as figure kind `fedsol_toy`.

Local loss L(u, v) = ½(u−u_l)² + (δ/2)(v−v_l)², proximal loss L_p = (μ/2)(u²+v²) (server at the
origin). FedProx descends ∇L + ∇L_p; FedSOL descends ∇L at w + ρ·∇L_p/‖∇L_p‖ (no perturbation
where ∇L_p = 0, as in the engine). Closed forms (App. H): FedSOL stops on the segment
from the origin to (u_l, v_l) at radius r_l − ρ; FedProx at (u_l/(1+μ), δv_l/(δ+μ)), skewed toward
the high-curvature axis. Config entry (no runs needed):
    kind: fedsol_toy
    delta: 0.1, rho: 0.5, mu: 1.0, lr: 0.01, epochs: 4000, local_opt: [1.0, 1.0]
"""
from __future__ import annotations

import math

import numpy as np

from ...core.errors import ConfigError
from ...core.kind_registry import FIGURE_KINDS
from ...pipeline.report.panels import suptitle
from ...pipeline.report.select import target_caption

DEFAULTS = {"delta": 0.1, "rho": 0.5, "mu": 1.0, "lr": 0.01, "epochs": 4000, "local_opt": [1.0, 1.0]}


def local_grad(w: np.ndarray, opt: np.ndarray, delta: float) -> np.ndarray:
    return np.array([w[0] - opt[0], delta * (w[1] - opt[1])])


def fedsol_grad(w, opt, delta, rho, mu):
    gp = mu * w
    n = np.linalg.norm(gp)
    eps = rho * gp / n if n > 0 else np.zeros(2)
    return local_grad(w + eps, opt, delta)


def fedprox_grad(w, opt, delta, mu):
    return local_grad(w, opt, delta) + mu * w


def paths(p: dict) -> dict[str, np.ndarray]:
    """Gradient-descent paths from the server point (the origin), one row per step."""
    opt = np.asarray(p["local_opt"], dtype=float)
    out = {}
    for name, grad in (("FedSOL", lambda w: fedsol_grad(w, opt, p["delta"], p["rho"], p["mu"])),
                       ("FedProx", lambda w: fedprox_grad(w, opt, p["delta"], p["mu"]))):
        w = np.zeros(2)
        steps = [w.copy()]
        for _ in range(int(p["epochs"])):
            w = w - p["lr"] * grad(w)
            steps.append(w.copy())
        out[name] = np.array(steps)
    return out


def equilibria(p: dict) -> dict[str, np.ndarray]:
    u, v = p["local_opt"]
    r = math.hypot(u, v)
    return {"FedSOL": np.array([u, v]) * (r - p["rho"]) / r,
            "FedProx": np.array([u / (1 + p["mu"]), p["delta"] * v / (p["delta"] + p["mu"])])}


def _params(name: str, spec: dict) -> dict:
    p = {k: spec.get(k, d) for k, d in DEFAULTS.items()}
    for k in ("delta", "rho", "mu", "lr"):
        if not isinstance(p[k], (int, float)) or p[k] <= 0:
            raise ConfigError(f"figures.{name}.{k}: must be a positive number, got {p[k]!r}")
    if not isinstance(p["epochs"], int) or p["epochs"] < 1:
        raise ConfigError(f"figures.{name}.epochs: must be a positive integer, got {p['epochs']!r}")
    opt = p["local_opt"]
    if not (isinstance(opt, list) and len(opt) == 2 and all(isinstance(x, (int, float)) for x in opt)):
        raise ConfigError(f"figures.{name}.local_opt: must be [u_l, v_l], got {opt!r}")
    if math.hypot(*opt) <= p["rho"]:
        raise ConfigError(f"figures.{name}.rho: must be below ‖local_opt‖ = {math.hypot(*opt):.3g}")
    return p


@FIGURE_KINDS.register("fedsol_toy")
class FedSOLToy:
    @staticmethod
    def check(study, name, spec):
        _params(name, spec)

    @staticmethod
    def inputs(study, name, spec):
        return []

    @staticmethod
    def manifest(study, name, spec):
        return {"title": spec.get("title", ""), "caption": target_caption(spec), "params": _params(name, spec)}

    @staticmethod
    def render(m, outs):
        from ...pipeline.report.style import apply_style, color_for, plt, save_all
        apply_style()
        p = m["params"]
        opt = np.asarray(p["local_opt"], dtype=float)
        fig, ax = plt.subplots(figsize=(3.8, 3.4))
        lim = 1.25 * max(abs(opt).max(), 1e-9)
        gu, gv = np.meshgrid(np.linspace(-0.1 * lim, lim, 120), np.linspace(-0.1 * lim, lim, 120))
        ax.contour(gu, gv, 0.5 * (gu - opt[0]) ** 2 + 0.5 * p["delta"] * (gv - opt[1]) ** 2, levels=12,
                   colors="0.75", linewidths=0.6)
        ax.plot([0, opt[0]], [0, opt[1]], color="0.45", lw=1.0, ls="--", label="origin → local optimum")
        eq = equilibria(p)
        for name, path in paths(p).items():
            c = color_for(name)
            ax.plot(path[:, 0], path[:, 1], color=c, lw=1.4, label=f"{name} path")
            ax.plot(*eq[name], marker="*", ms=9, color=c, ls="none")
        ax.plot(0, 0, "ks", ms=4, label="server weights")
        ax.plot(*opt, "k^", ms=5, label="local optimum")
        ax.set_xlabel("u (curvature 1)")
        ax.set_ylabel(f"v (curvature δ = {p['delta']:g})")
        ax.set_aspect("equal")
        ax.legend(frameon=False, fontsize=7, loc="upper left")
        fig.suptitle(suptitle(m, f"ρ = {p['rho']:g}, μ = {p['mu']:g}, lr = {p['lr']:g}, {p['epochs']} steps; "
                                  "★ closed-form equilibrium"), fontsize=8)
        save_all(fig, outs)
