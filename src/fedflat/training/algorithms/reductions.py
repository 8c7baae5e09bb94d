"""Where a SAM-type preset with its ascent switched off (rho = 0) is exactly another preset.

RHO0[preset] = (base preset, the keys both take with the same value, the settings the reduction needs). Each
entry is proved on a tiny model by tests/training/algorithms/test_rho0_reductions.py (the same trajectory to 1e-12, and a
different one at rho > 0). The leaderboard's ablation uses it to say which rho = 0 twins are another ranked
method at the same setting, and checks the screen's own pairs of runs against it."""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, NamedTuple


class Reduction(NamedTuple):
    base: str
    shared: tuple[str, ...] = ()
    when: Mapping[str, float] = MappingProxyType({})  # read-only: a NamedTuple default is shared


RHO0: dict[str, Reduction] = {
    "fedsam": Reduction("fedavg"),
    "fedasam": Reduction("fedavg"),
    "fedlesam": Reduction("fedavg"),
    "fedsol": Reduction("fedavg"),
    "fedsol_fixed": Reduction("fedavg"),
    # FedSOL's combinations carry their base method only inside the perturbation (its proximal "parts"), so
    # with the perturbation off they are FedAvg, not their base; FedNova+FedSOL keeps FedNova's aggregation.
    "fedsol_l2": Reduction("fedavg"),
    "fedsol_prox": Reduction("fedavg"),
    "fedsol_moon": Reduction("fedavg"),
    "fedsol_scaffold": Reduction("fedavg"),
    "fedsol_nova": Reduction("fednova"),
    "fednsam_no_nesterov": Reduction("fedavg"),  # its momentum is kept but never used
    "fedsynsam": Reduction("fedavg"),  # the synthetic set only estimates the global perturbation
    "fedgamma": Reduction("scaffold"),
    "fedlesam_s": Reduction("scaffold"),
    "fedspeed": Reduction("feddyn", ("alpha",)),
    "fedsmoo": Reduction("feddyn", ("alpha",)),
    "fedspeed_np": Reduction("feddyn", ("alpha",)),
    "fedsmoo_np": Reduction("feddyn", ("alpha",)),
    "fedlesam_d": Reduction("feddyn", ("alpha",)),
    "mofedsam": Reduction("fedcm", ("cm_alpha",)),
    "fedsam_nesterov": Reduction("fedavg_nesterov", ("lam",)),
    "fednsam": Reduction("fedavg_nesterov", ("lam",)),
    "fednsam_no_nesterov_m": Reduction("fedavgm", ("lam",)),
    "fedgloss": Reduction("feddyn", ("alpha",), MappingProxyType({"server_rho": 0.0})),
    # FedGF pulls the SAM point toward w̃ by c even at rho = 0: FedAvg only with c = 0 throughout (W = 0)
    "fedgf": Reduction("fedavg", when=MappingProxyType({"gf_window": 0})),
    # FedSCAM reweights the aggregation by gamma and beta whatever rho is
    "fedscam": Reduction("fedavg", when=MappingProxyType({"scam_gamma": 0.0, "scam_beta": 0.0})),
}


def rho0_base(preset: str, params: dict) -> tuple[str, dict] | None:
    """(base preset, its settings) that `preset` at `params` (rho = 0) is exactly, or None."""
    r = RHO0.get(preset)
    if r is None or params.get("rho", 0.0) != 0.0 or any(params.get(k) != v for k, v in r.when.items()):
        return None
    return r.base, {k: params[k] for k in r.shared if k in params}
