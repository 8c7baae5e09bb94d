"""The exact global perturbation, as a diagnostic upper bound (not a federated algorithm).

FedSMOO, FedLESAM, FedSynSAM and FedTOGA all estimate the global SAM perturbation
ε = ρ ∇F(w)/‖∇F(w)‖, F = (1/N) Σ_i F_i (FedSynSAM Sec. III-B, end). This part gives each client the
exact one, computed by the server from every client's full local data at the round's global model θ^t
and held fixed for the round (as FedLESAM holds its estimate): δ = ρ ∇F(θ^t)/‖∇F(θ^t)‖. It reads the
whole federation's data, so it only answers "how much could a perfect estimate gain here?".
One pass per local step; the full gradient costs one pass over the training set per round.
"""
from __future__ import annotations

import torch

from .parts import Param, safe_unit
from .perturbations import PERTURBATIONS, FixedPerturbation
from .presets import preset

DIAGNOSTIC_PRESETS = ("fedsam_oracle",)  # reads every client's data: not a federated method, never ranked


@PERTURBATIONS.register("global_oracle")
class GlobalOraclePerturbation(FixedPerturbation):
    name = "global_oracle"
    params = {"rho": Param(0.05, "perturbation radius ρ", low=0.0)}

    def bind(self, sim) -> None:
        self._sim = sim
        self._round, self._delta = None, None

    def __getstate__(self):  # analysis hooks copy parts: keep the simulation out of the copy
        return {**self.__dict__, "_sim": None}

    def full_gradient(self, theta: torch.Tensor) -> torch.Tensor:
        """∇F(θ), F the unweighted mean of the clients' full-data losses (eval mode, no augmentation)."""
        sim = self._sim
        fm, data = sim.fm, sim.data
        g = torch.zeros_like(theta)
        was_training = fm.module.training
        fm.module.eval()
        for idx in sim.client_idx:
            for s in range(0, len(idx), 2048):
                b = idx[s:s + 2048]
                _, gb = fm.grad_at(theta, data.normalise(data.train_x[b]), data.train_y[b])
                g.add_(gb, alpha=len(b) / (len(idx) * len(sim.client_idx)))
        fm.module.train(was_training)
        return g

    def client_begin(self, ctx) -> None:
        if self._round != ctx.round:  # once per round, shared by every client
            self._round, self._delta = ctx.round, safe_unit(self.full_gradient(ctx.theta)).mul_(self.rho)
        ctx.scratch["delta"] = self._delta


preset("fedsam_oracle", "FedSAM (exact global ε)", "global_oracle", "mean",
       "Diagnostic upper bound: FedSAM with the exact global perturbation ρ∇F(θ^t)/‖∇F(θ^t)‖ "
       "(FedSynSAM Sec. III-B's target), fixed per round", defaults={"rho": 0.05},
       notes="reads every client's data: a measurement of what perfect global-perturbation estimation can gain")
