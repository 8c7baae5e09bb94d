"""Baseline presets (issue 3, part A): non-SAM methods the five papers compare against.
Equations, state, communication and ambiguity decisions: docs/algorithms_baselines.md."""
from __future__ import annotations

from .presets import preset

preset("fedprox", "FedProx", "none", "mean", "Li et al. 2020, Eq. 2; FedSAGD App. C.2",
       corrections=["prox"], defaults={"mu": 0.01})
preset("scaffold", "SCAFFOLD", "none", "mean", "Karimireddy et al. 2020, Alg. 1 (option II)",
       corrections=["scaffold"])
preset("feddyn", "FedDyn", "none", "feddyn", "Acar et al. 2021, Alg. 1; FedTOGA App. B.2 (α=0.01 LeNet)",
       corrections=["feddyn"], defaults={"alpha": 0.01})
preset("fedavgm", "FedAvgM", "none", "momentum", "Hsu et al. 2019; FedSAGD App. A.3 (β=0.9)",
       defaults={"lam": 0.9}, fixed={"lookahead": False})
preset("fedadam", "FedAdam", "none", "adam",
       "Reddi et al. 2021, Alg. 2; FedTOGA App. B.2 (η_g=0.01, β1=0.9, β2=0.99, τ=1e-3)",
       defaults={"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3})
preset("fedyogi", "FedYogi", "none", "yogi", "Reddi et al. 2021, Alg. 2 (Yogi); FedTOGA App. B.2",
       defaults={"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3})
preset("fedcm", "FedCM", "none", "mean", "Xu et al. 2021, Alg. 1; FedTOGA App. B.2 (α=0.1)",
       corrections=["momentum_mix"], defaults={"cm_alpha": 0.1})
preset("fedacg", "FedACG", "none", "momentum", "Kim et al. 2024, Alg. 1; FedTOGA App. B.2 (λ=0.85, β=μ=0.01)",
       corrections=["prox"], defaults={"lam": 0.85, "mu": 0.01}, fixed={"lookahead": True},
       notes="FedACG's proximal weight β is the prox part's `mu`, anchored at the look-ahead start")
preset("fednova", "FedNova", "none", "nova", "Wang et al. 2020, Eq. 6-7; a FedSOL baseline (Tables 2, 4)")
preset("feddc", "FedDC", "none", "feddc", "Gao et al. 2022, Alg. 1, Eq. 6-8; FedTOGA App. B.2 (α=0.01 LeNet)",
       corrections=["scaffold", "feddc"], defaults={"alpha": 0.01})
preset("mimelite", "MimeLite", "none", "mean", "Karimireddy et al. 2021 (Mime), MimeLite; FedSAGD App. C.8 (β=0.2)",
       corrections=["mimelite"], defaults={"beta": 0.2})
preset("fedlnag", "FedLNAG", "none", "mean", "Yu et al. 2019; FedSAGD App. C.5 (β=0.9)",
       corrections=["local_nesterov"], defaults={"beta": 0.9})
preset("fedanag", "FedANAG", "none", "mean", "Zhang et al. 2025; FedSAGD App. C.10 (β=0.9)",
       corrections=["anag_momentum"], defaults={"beta": 0.9})
preset("fedsagd", "FedSAGD", "none", "mean",
       "FedSAGD Alg. 1 lines 9-10, 15-16; Tables 8-10 (β=0.9, λ=0.01, μ=0.001)",
       corrections=["sagd_momentum", "hybrid_prox"], defaults={"beta": 0.9, "prox_lam": 0.01, "decay_mu": 0.001},
       notes="μ is FedSAGD's only weight decay: its runs resolve training.weight_decay to 0 (Preset.training_for)")
