"""FedSOL ablation / combination presets (FedSOL Tables 1, 4, 10; issue 7). The maths lives in
fedsol_parts.py; readings and equations: docs/algorithms_sam.md "FedSOL variants"."""
from __future__ import annotations

from . import fedsol_parts  # noqa: F401  (registers kl_prox, projection, fedsol_general)
from .presets import preset

SOL = "Lee et al. 2024 (FedSOL)"
FULL = {"sol_target": "full", "sol_prox": "parts"}  # Table 4: entire model, the method's own proximal loss

# Table 1: the proximal loss as an auxiliary term (Base, Eq. 2) or by gradient projection (Eq. 3)
preset("fedprox_kl", "FedProx-KL", "none", "mean", f"{SOL} Eq. 2 with L_p = KL(τ=3), β=1; Table 1, Table 10 A5",
       corrections=["kl_prox"])
preset("proj_l2", "Proj-L2", "projection", "mean", f"{SOL} Sec. 2.3 Eq. 3, L_p = L2 distance; Table 1",
       fixed={"sol_prox": "l2"})
preset("proj_kl", "Proj-KL", "projection", "mean", f"{SOL} Sec. 2.3 Eq. 3, L_p = KL(τ=3); Table 1",
       fixed={"sol_prox": "kl"})

# Table 10 (A2-A6 are options of this part; with its defaults it is FedSOL)
preset("fedsol_general", "FedSOL (general)", "fedsol_general", "mean",
       f"{SOL} Alg. 1 with App. F Table 10's loss/point options (sol_local_at, sol_prox_at, sol_beta)",
       defaults={"rho": 2.0})

# Table 4 "Combined": the method's proximal objective as FedSOL's perturbation only (entire model, ρ=2;
# its step term leaves the update, its state and server stay; sol_prox_in_step: true keeps the term)
preset("fedsol_prox", "FedProx+FedSOL", "fedsol_general", "mean", f"{SOL} Table 4 (FedProx μ=1 + FedSOL)",
       corrections=["prox"], defaults={"rho": 2.0, "mu": 1.0}, fixed=FULL)
preset("fedsol_scaffold", "SCAFFOLD+FedSOL", "fedsol_general", "mean",
       f"{SOL} Table 4 (SCAFFOLD + FedSOL, g_p = c − c_i)",
       corrections=["scaffold"], defaults={"rho": 2.0}, fixed=FULL)
preset("fedsol_dyn", "FedDyn+FedSOL", "fedsol_general", "feddyn", f"{SOL} Table 4 (FedDyn α=0.1 + FedSOL)",
       corrections=["feddyn"], defaults={"rho": 2.0, "alpha": 0.1}, fixed=FULL)
preset("fedsol_moon", "MOON+FedSOL", "fedsol_general", "mean", f"{SOL} Table 4 (MOON μ=0.1, τ=0.5 + FedSOL)",
       corrections=["moon"], defaults={"rho": 2.0}, fixed=FULL)
preset("fedsol_nova", "FedNova+FedSOL", "fedsol_general", "nova",
       f"{SOL} Table 4 (FedNova has no local proximal term: FedSOL's KL perturbation + FedNova's normalised averaging)",
       defaults={"rho": 2.0}, fixed={"sol_target": "full", "sol_prox": "kl"})
preset("fedsol_l2", "FedSOL-L2", "fedsol_general", "mean",
       f"{SOL} with L_p = L2 distance, full model (= fedsol_prox: ε is scale-free, μ(w−θ) leaves the step)",
       defaults={"rho": 2.0}, fixed={"sol_target": "full", "sol_prox": "l2"})
