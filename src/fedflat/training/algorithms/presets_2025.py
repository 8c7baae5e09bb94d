"""The 2025 federated SAM-family methods as presets of parts (issue 24 item 3). Equations, defaults
with their source, costs and every paper-vs-official-code difference: docs/algorithms_2025.md.

Per preset (N clients, P = model size; "vec" = P floats per sampled client):
  fedgloss  client state h_i (σ_i)            grad evals 2 (1 with rho = 0)   down 1 vec (w̃), up 1 vec
  fedswa    none                              1                               down 1, up 1
  fedmoswa  c_i                               1                               down 2 (θ, m), up 2 (Δ_i, u_i)
  fedwmsam  c_i                               1                               down 3 (θ, c, m) + α, up 2 (Δ_i, Δc_i)
  fedgmt    D_i                               1 (+1 forward of the EMA model)  down 2 (θ, e), up 2 (Δ_i, D_i)
"""
from __future__ import annotations

from . import gloss_server, gmt, swa, wmsam  # noqa: F401  (register the new parts)
from .presets import preset

PRESETS_2025 = ("fedgloss", "fedswa", "fedmoswa", "fedwmsam", "fedgmt")

preset("fedgloss", "FedGloSS", "sam", "gloss",
       "Caldarola et al., CVPR 2025 (arXiv 2412.03752) Alg. 1: server SAM from the last pseudo-gradient + "
       "FedDyn-form ADMM (α = 1/β); defaults from the paper's CIFAR-10 script (ρ_l = ρ = 0.15, β = 10)",
       corrections=("feddyn",), defaults={"rho": 0.15, "server_rho": 0.15, "alpha": 0.1})
preset("fedswa", "FedSWA", "none", "mean",
       "Liu et al., ICML 2025 (arXiv 2507.20016) Sec. 3: within-round linear lr decay to ρη, "
       "server θ + α(mean w − θ); Sec. 6.1 ρ = 0.1, α = 1.5",
       corrections=("swa_schedule",), defaults={"swa_rho": 0.1, "server_lr": 1.5})
preset("fedmoswa", "FedMoSWA", "none", "mean",
       "Liu et al., ICML 2025 (arXiv 2507.20016) Sec. 3: FedSWA + momentum-based stochastic control "
       "(c_i option II, m ← m + γ mean u_i); Sec. 6.1 ρ = 0.1, α = 1.5, γ = 0.2",
       corrections=("moswa", "swa_schedule"), defaults={"swa_rho": 0.1, "server_lr": 1.5, "moswa_gamma": 0.2})
preset("fedwmsam", "FedWMSAM", "momentum_target", "mean",
       "Li et al., NeurIPS 2025 (arXiv 2511.22080) poster §§A-D: momentum-guided perturbation, SCAFFOLD "
       "c, adaptive α mix; official train.py ρ = 0.1, α₀ = 0.1",
       corrections=("scaffold", "wmsam_mix"), defaults={"rho": 0.1, "wm_alpha0": 0.1})
preset("fedgmt", "FedGMT", "none", "gmt",
       "Li et al., ICML 2025 (One Arrow, Two Hawks): KL to the EMA global trajectory + dual D_i/β; "
       "official README γ = 1, α = 0.95, τ = 3, β = 10",
       corrections=("gmt",))
