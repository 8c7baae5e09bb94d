"""Named algorithms as compositions of parts. A preset is a few lines; hyperparameters resolve
from the parts' declared defaults, then the preset's defaults, then the user's overrides."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.errors import ConfigError
from ...core.registry import Registry
from .parts import Correction, Part, Perturbation, ServerOpt
from .corrections import CORRECTIONS
from .perturbations import PERTURBATIONS
from .servers import SERVERS


@dataclass(frozen=True)
class Preset:
    name: str
    label: str  # display name in tables and legends
    perturbation: str
    corrections: tuple[str, ...]
    server: str
    source: str  # paper and equation/algorithm the update comes from
    defaults: dict[str, Any] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)  # structural switches not meant as tunables
    notes: str = ""

    def part_classes(self) -> list[type[Part]]:
        return ([PERTURBATIONS.get(self.perturbation)] + [CORRECTIONS.get(c) for c in self.corrections]
                + [SERVERS.get(self.server)])

    def param_specs(self) -> dict[str, Any]:
        """Every part's parameters by name. Two parts that declare one name would silently share its
        value (a server's ρ becoming the clients' SAM radius): an error unless one of them lists the
        name in `shares` and both declare the same Param (FedDyn's α on the clients and the server)."""
        specs: dict[str, Any] = {}
        owner: dict[str, type[Part]] = {}
        for cls in self.part_classes():
            for k, spec in cls.params.items():
                first = owner.setdefault(k, cls)
                if first is not cls and not (spec is specs[k] and k in (*first.shares, *cls.shares)):
                    raise ConfigError(f"algorithm {self.name!r}: parameter {k!r} is declared by both part "
                                      f"{first.__name__} and part {cls.__name__}; rename one, or share one Param "
                                      f"and list {k!r} in `shares`")
                specs[k] = spec
        return specs

    def resolve(self, overrides: dict[str, Any] | None = None, key: str = "algorithm") -> dict[str, Any]:
        """Full hyperparameter dict with domains checked; unknown keys are errors."""
        specs = self.param_specs()
        overrides = dict(overrides or {})
        unknown = sorted(set(overrides) - set(specs))
        if unknown:
            allowed = ", ".join(sorted(specs)) or "(none)"
            raise ConfigError(f"{key}.{self.name}: unknown hyperparameter {unknown[0]!r}; allowed: {allowed}")
        hp = {k: s.default for k, s in specs.items()}
        hp.update(self.defaults)
        hp.update(self.fixed)
        hp.update(overrides)
        return {k: specs[k].check(f"{key}.{self.name}.{k}", v) for k, v in sorted(hp.items())}

    @property
    def decay_param(self) -> str | None:
        """The hyperparameter that is this algorithm's own weight decay (FedSAGD: decay_mu), if any."""
        return next((c.decay_param for c in self.part_classes() if c.decay_param), None)

    def training_for(self, training: dict[str, Any]) -> dict[str, Any]:
        """The one place a run's weight decay is decided. A preset whose part owns the decay runs with
        the engine's training.weight_decay at 0: the study's value is the other algorithms' decay
        (FedSAGD App. A.3: the baselines' 1e-3), and the part's parameter is this run's only decay."""
        if self.decay_param is None or not training.get("weight_decay"):
            return training
        return {**training, "weight_decay": 0.0}

    def check_single_decay(self, hp: dict[str, Any], training: dict[str, Any], key: str = "training") -> None:
        """Refuse a run whose own decay would be stacked on the engine's (a spec not made by training_for)."""
        wd = training.get("weight_decay", 0.0)
        if self.decay_param is not None and wd > 0:
            raise ConfigError(f"{key}.weight_decay: {wd:g} would stack on {self.name}'s own weight decay "
                              f"{self.decay_param}={hp.get(self.decay_param)!r}; one decay per run: set it to 0")


class Algorithm:
    """An instantiated preset: one perturbation, corrections, one server."""

    def __init__(self, preset: Preset, hp: dict[str, Any]):
        self.preset = preset
        self.hp = hp
        classes = preset.part_classes()
        parts = [cls(**{k: hp[k] for k in cls.params}) for cls in classes]
        self.perturbation: Perturbation = parts[0]
        self.corrections: list[Correction] = parts[1:-1]
        self.server: ServerOpt = parts[-1]
        self.parts: list[Part] = parts
        for p in parts:
            self.server.requested.update(p.requires)

    @property
    def name(self) -> str:
        return self.preset.name

    @property
    def grad_evals_per_step(self) -> int:
        return self.perturbation.grad_evals + sum(p.grad_evals for p in self.parts[1:])

    @property
    def client_state_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for p in self.parts:
            names += [n for n in p.client_state if n not in names]
        return tuple(names)

    def describe(self) -> str:
        return " + ".join(p.describe() for p in self.parts)


PRESETS: Registry[Preset] = Registry("algorithm")


def preset(name, label, perturbation, server, source, corrections=(), defaults=None, fixed=None, notes=""):
    p = Preset(name, label, perturbation, tuple(corrections), server, source, dict(defaults or {}), dict(fixed or {}),
               notes)
    p.param_specs()  # a parameter name declared by two parts is an error here, at registration
    PRESETS.add(name, p)


def build_algorithm(name: str, overrides: dict[str, Any] | None = None) -> Algorithm:
    p = PRESETS.get(name, key="algorithm")
    return Algorithm(p, p.resolve(overrides))


# ---------------------------------------------------------------------------------------------
# The presets. Keep each to a few lines; the parts carry the maths and its citations.

preset("fedavg", "FedAvg", "none", "mean",
       "McMahan et al. 2017; a baseline of FedNSAM Tables 2-4")
preset("fedsam", "FedSAM", "sam", "mean",
       "Qu et al. 2022 / Caldarola et al. 2022; FedNSAM Eq. 3", defaults={"rho": 0.05})
preset("fednsam", "FedNSAM", "momentum_direction", "momentum",
       "FedNSAM Alg. 1 (lines 7-10, 16-18)", defaults={"rho": 0.1, "lam": 0.85}, fixed={"lookahead": True})
