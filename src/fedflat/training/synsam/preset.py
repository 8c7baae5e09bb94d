"""Presets of FedSynSAM's paper that the algorithm catalog does not already have."""
from __future__ import annotations

from ..algorithms.presets import preset
from . import dynafed as _dynafed  # noqa: F401  (registers the "dynafed" server)
from . import perturbation as _perturbation  # noqa: F401  (registers the "synsam" perturbation)

preset("fedsynsam", "FedSynSAM", "synsam", "mean",
       "FedSynSAM Alg. 1 (lines 7-13, 18-27), Sec. IV-B/C, Eq. 14", defaults={"rho": 0.05, "beta": 0.9},
       notes="FedSAM for t <= R; after the server distills D_syn at round R the ascent mixes local and synthetic gradients")
preset("dynafed", "DynaFed", "none", "dynafed",
       "DynaFed (Pi et al. 2023) as FedSynSAM's baseline, Sec. VI-A",
       notes="FedAvg clients; server distills D_syn at round R and fine-tunes the global model on it every later round")
