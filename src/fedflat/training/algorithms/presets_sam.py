"""SAM-family and proposed presets (issue 3, part B). Every update rule lives in the parts;
docs/algorithms_sam.md has one section per preset (equations, state, communication, ambiguities).

Defaults follow the papers: ρ per FedTOGA App. B.2 (the one paper that states it
for most baselines; 0.05 where it gives 0.01, matching FedSAM here and FedNSAM's code), FedNSAM
ρ = 0.1 and λ = 0.85, FedSOL ρ = 2.0 head-only, FedTOGA κ = 1, β = 0.8, α = 0.1.
"""
from __future__ import annotations

from .presets import PRESETS, preset

NSAM = "FedNSAM (Liu et al., MM 2025)"

# --------------------------------------------------------------------------- SAM family
preset("fedasam", "FedASAM", "asam", "mean",
       "Caldarola et al. 2022 (FedASAM) with ASAM of Kwon et al. 2021, Eq. 8; a FedSOL baseline (Tables 2, 8)",
       defaults={"rho": 0.7, "asam_eta": 0.2})
preset("mofedsam", "MoFedSAM", "sam", "mean",
       "Qu et al. 2022 (MoFedSAM = FedSAM + FedCM); FedNSAM Sec. 4.2 with its momentum term's sign reversed (as printed it moves uphill)",
       corrections=("momentum_mix",), defaults={"rho": 0.05, "cm_alpha": 0.1})
preset("fedgamma", "FedGAMMA", "sam", "mean",
       "Dai et al. 2023 (SAM + SCAFFOLD option II); FedTOGA Table 5, App. B.2",
       corrections=("scaffold",), defaults={"rho": 0.1})
preset("fedspeed", "FedSpeed", "sam", "feddyn",
       "Sun et al. 2023 (FedDyn + SAM as in FL-Simulator); FedTOGA Table 5, App. B.2",
       corrections=("feddyn",), defaults={"rho": 0.1, "alpha": 0.1})
preset("fedsmoo", "FedSMOO", "smoo", "feddyn",
       "Sun et al. 2023; FedTOGA App. A Alg. 2 (dual-corrected perturbation + FedDyn dual)",
       corrections=("feddyn",), defaults={"rho": 0.1, "alpha": 0.1})
preset("fedspeed_np", "FedSpeed+NP", "sam", "feddyn",
       "FedSpeed with FedTOGA's N-perturbation module (FedTOGA Sec. 4.2, App. B.7 Fig. 5)",
       corrections=("feddyn",), defaults={"rho": 0.1, "alpha": 0.1}, fixed={"np_mode": "N"})
preset("fedsmoo_np", "FedSMOO+NP", "smoo", "feddyn",
       "FedSMOO with FedTOGA's N-perturbation module (FedTOGA Sec. 4.2, App. B.7 Fig. 5)",
       corrections=("feddyn",), defaults={"rho": 0.1, "alpha": 0.1}, fixed={"np_mode": "N"})
preset("fedlesam", "FedLESAM", "stale_direction", "mean",
       "Fan et al. 2024 (stale-model direction); FedTOGA Alg. 3 perturbation on a FedAvg base",
       defaults={"rho": 0.05})
preset("fedlesam_s", "FedLESAM-S", "stale_direction", "mean",
       "Fan et al. 2024; FedTOGA Table 5 (FedLESAM on SCAFFOLD)",
       corrections=("scaffold",), defaults={"rho": 0.1})
preset("fedlesam_d", "FedLESAM-D", "stale_direction", "feddyn",
       "Fan et al. 2024; FedTOGA App. A Alg. 3 (FedLESAM on FedDyn)",
       corrections=("feddyn",), defaults={"rho": 0.1, "alpha": 0.1})
# FedSynSAM's FedLESAM-D (Sec. VI-A, Table II "2x"): the same update, with its dynamic correction sent up and
# compressed like the model update (a separate preset, so the run ids of every fedlesam_d run stay what they were)
preset("fedlesam_d_up", "FedLESAM-D", "stale_direction", "feddyn",
       "FedSynSAM Sec. VI-A / Table II (FedLESAM-D, 2x uplink: its dynamic correction sent with the same compressor); "
       "Fan et al. 2024; FedTOGA App. A Alg. 3",
       corrections=("feddyn_sent",), defaults={"rho": 0.1, "alpha": 0.1})

# --------------------------------------------------------------------------- FedNSAM variants
preset("fednsam_s", "FedNSAM-S", "momentum_direction", "momentum",
       f"{NSAM} Table 5 (Alg. 1 local rule + SCAFFOLD control variates; named, not defined, in Sec. 6.6)",
       corrections=("scaffold",), defaults={"rho": 0.1, "lam": 0.85}, fixed={"lookahead": True})
preset("fednsam_d", "FedNSAM-D", "own_momentum_direction", "feddyn",
       f"{NSAM} Table 5 (Alg. 1 lines 7-10 per step + FedDyn regulariser and server; named, not defined, in Sec. 6.6)",
       corrections=("feddyn",), defaults={"rho": 0.1, "lam": 0.85, "alpha": 0.1}, fixed={"extrapolate": True})
preset("fedavg_nesterov", "FedAvg+Nesterov", "none", "momentum",
       f"{NSAM} Table 6 (look-ahead start θ+λm, SGD, server momentum; repo's FedNesterov)",
       defaults={"lam": 0.85}, fixed={"lookahead": True})
preset("fedsam_nesterov", "FedSAM+Nesterov", "sam", "momentum",
       f"{NSAM} Table 6 (local SAM from θ+λm, server momentum; repo's main_FedNSAM.py)",
       defaults={"rho": 0.1, "lam": 0.85}, fixed={"lookahead": True})
preset("fednsam_no_nesterov", "FedNSAM−Nesterov", "own_momentum_direction", "mean",
       f"{NSAM} Table 6 (δ = −ρ m/‖m‖, no look-ahead; server moves by the plain mean, m kept as EMA)",
       defaults={"rho": 0.1, "lam": 0.85}, fixed={"extrapolate": False})
preset("fednsam_no_nesterov_m", "FedNSAM−Nesterov (θ+m)", "momentum_direction", "momentum",
       f"{NSAM} Table 6, alternative reading: no look-ahead but the server still moves θ ← θ + m",
       defaults={"rho": 0.1, "lam": 0.85}, fixed={"lookahead": False})

# --------------------------------------------------------------------------- FedSOL, FedTOGA
preset("fedsol", "FedSOL", "fedsol", "mean",
       "Lee et al. 2024 (FedSOL) Alg. 1, Eqs. 5-8: adaptive Λ, head-only (Sec. 3.4), KL τ=3",
       defaults={"rho": 2.0})
preset("fedsol_fixed", "FedSOL (fixed ρ)", "fedsol", "mean",
       "Lee et al. 2024 (FedSOL) Eq. 5-6 with Λ = 1 (official fedsol_fixed)",
       defaults={"rho": 2.0}, fixed={"sol_adaptive": False})
preset("fedtoga", "FedTOGA", "toga", "feddyn",
       "FedTOGA Alg. 1 lines 7, 11, 12, 14 (G-perturbation g+κΔ, FedDyn dual as Alg. 2/3, +βΔ)",
       corrections=("feddyn", "global_delta"),
       defaults={"rho": 0.1, "kappa": 1.0, "beta": 0.8, "alpha": 0.1})

# --------------------------------------------------------------------------- loss-term baselines
preset("fedntd", "FedNTD", "none", "mean",
       "Lee et al. 2022 (FedNTD) not-true distillation; FedSOL Table 8 (β=1, τ=1)",
       corrections=("ntd",))
preset("moon", "MOON", "none", "mean",
       "Li et al. 2021 (MOON) model-contrastive loss; FedSOL Table 8 (μ=0.1, τ=0.5)",
       corrections=("moon",))

SAM_PRESETS = ("fedasam", "mofedsam", "fedgamma", "fedspeed", "fedsmoo", "fedlesam", "fedlesam_s", "fedlesam_d",
               "fedlesam_d_up",
               "fednsam_s", "fednsam_d", "fedavg_nesterov", "fedsam_nesterov", "fednsam_no_nesterov",
               "fednsam_no_nesterov_m", "fedsol", "fedsol_fixed", "fedtoga", "fedntd", "moon")
assert all(n in PRESETS for n in SAM_PRESETS)
