"""A run's fully resolved settings, its validation and its stable identity.

Everything that can change a number in metrics.csv is in RunSpec, so the run id (a hash of it)
is a function of the run's parameters: two jobs never share an output directory, and tables
that need the same run share it.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .errors import ConfigError, choice_error

# Training defaults (the FedNSAM authors' code, github.com/junkangLiu0/FedNSAM, where the papers are silent).
TRAINING_DEFAULTS: dict[str, Any] = {
    "num_clients": 20,
    "participation": 0.25,  # fraction of clients sampled per round, without replacement
    "rounds": 50,
    "local_steps": 10,  # K mini-batch steps per round (all clients), unless local_epochs is set
    "local_epochs": 0,  # E > 0: client i runs E epochs = E·⌈n_i/B⌉ steps, the last batch of an epoch partial
    "batch_size": 32,
    "lr": 0.05,
    "lr_decay": 1.0,  # multiplicative per round: lr_t = lr * lr_decay^(t-1)
    "weight_decay": 1e-3,  # coupled L2 in the local SGD step
    "local_momentum": 0.0,
    "clip_grad_norm": 10.0,  # on the data gradient; 0 disables
    "aggregation": "uniform",  # uniform | samples (weights of the client mean)
    "eval_every": 2,  # evaluate the global model every N rounds (and always at the last); 1 costs ~11% of a LeNet-5 CIFAR run
    "eval_batch_size": 1024,
    "checkpoint_every": 10,
    "client_state": "memory",  # memory | disk
    "dirichlet_variant": "rep",
    "samples_per_client": 0,  # 0: len(train) // num_clients (balanced Dirichlet variants)
    "eval_subset": 0,  # evaluate on the first N test samples; 0: the whole test split
    "backend": "auto",  # eager | compile | auto: how local gradients are computed (training/fl/fast.py); not in the run id
    "vmap_clients": False,  # GPU option: a round's sampled clients as one vmapped step (training/fl/together.py); not in the run id
    "holdout": 0.0,  # tuning runs: this fraction of every client's samples is a validation set, evaluated instead of test
    # end-of-round t models kept for later analysis (results/runs/<run>/snapshots/, training/fl/snapshots.py); [] keeps none
    "snapshot_rounds": [],
}

# keys added later: in the run id only when non-zero (non-empty), so ids made before they existed stay stable
_HASHED_WHEN_SET = ("eval_subset", "local_epochs", "holdout", "snapshot_rounds")
_SPEED_ONLY = ("backend", "vmap_clients")  # how a run is computed, never what it computes: not in the run id
_POSITIVE_INT = ("num_clients", "rounds", "local_steps", "batch_size", "eval_every", "eval_batch_size")
_CHOICES = {"aggregation": ("uniform", "samples"), "client_state": ("memory", "disk"),
            "dirichlet_variant": ("rep", "norep", "lda"), "backend": ("eager", "compile", "auto")}


def check_training(tr: dict[str, Any], key: str = "training") -> dict[str, Any]:
    unknown = sorted(set(tr) - set(TRAINING_DEFAULTS))
    if unknown:
        raise ConfigError(f"{key}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(TRAINING_DEFAULTS))}")
    out = {**TRAINING_DEFAULTS, **tr}
    for k in _POSITIVE_INT:
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{key}.{k}: must be an integer >= 1, got {v!r}")
    for k in ("checkpoint_every", "samples_per_client", "eval_subset", "local_epochs"):
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError(f"{key}.{k}: must be an integer >= 0, got {v!r}")
    p = out["participation"]
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 < p <= 1):
        raise ConfigError(f"{key}.participation: must be in (0, 1], got {p!r}")
    for k, lo, lo_open in (("lr", 0, True), ("lr_decay", 0, True), ("weight_decay", 0, False),
                           ("clip_grad_norm", 0, False), ("local_momentum", 0, False)):
        v = out[k]
        # NaN passes no comparison, so `v <= 0` alone would let lr: .nan through: finiteness first
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or (v <= lo if lo_open else v < lo):
            raise ConfigError(f"{key}.{k}: must be a finite number {'>' if lo_open else '>='} {lo}, got {v!r}")
        out[k] = float(v)
    if not isinstance(out["vmap_clients"], bool):
        raise ConfigError(f"{key}.vmap_clients: must be true or false, got {out['vmap_clients']!r}")
    h = out["holdout"]
    if isinstance(h, bool) or not isinstance(h, (int, float)) or not (0 <= h < 0.5):
        raise ConfigError(f"{key}.holdout: must be a fraction in [0, 0.5), got {h!r}")
    out["holdout"] = float(h)
    out["snapshot_rounds"] = check_snapshot_rounds(out["snapshot_rounds"], out["rounds"], f"{key}.snapshot_rounds")
    if out["local_momentum"] >= 1:
        raise ConfigError(f"{key}.local_momentum: must be in [0, 1), got {out['local_momentum']!r}")
    for k, allowed in _CHOICES.items():
        if out[k] not in allowed:
            raise choice_error(f"{key}.{k}", out[k], allowed)
    return out


def check_snapshot_rounds(v, rounds: int, key: str) -> list[int]:
    """Distinct rounds in [1, rounds], returned sorted (one run id for any order of the same rounds)."""
    if not isinstance(v, (list, tuple)) or any(isinstance(t, bool) or not isinstance(t, int) for t in v):
        raise ConfigError(f"{key}: must be a list of round numbers, got {v!r}")
    bad = [t for t in v if not 1 <= t <= rounds]
    if bad:
        raise ConfigError(f"{key}: round {bad[0]} is outside 1..training.rounds ({rounds})")
    if len(set(v)) != len(v):
        raise ConfigError(f"{key}: lists a round twice: {list(v)!r}")
    return sorted(v)


@dataclass(frozen=True)
class RunSpec:
    dataset: str
    partition: str  # canonical partition spec (see data.partition)
    model: str
    algorithm: str
    seed: int
    hparams: dict = field(default_factory=dict)  # resolved algorithm hyperparameters
    model_kwargs: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)  # resolved TRAINING_DEFAULTS
    analysis: dict = field(default_factory=dict)  # round hooks: {name: {params}} (fl.round_hooks.ROUND_HOOKS)
    uplink: dict = field(default_factory=dict)  # compressor: {kind: name, ...params} (compression.interface.COMPRESSORS)

    def __getattr__(self, name):  # spec.lr etc. read the training settings
        tr = object.__getattribute__(self, "training")
        if name in tr:
            return tr[name]
        raise AttributeError(name)

    @property
    def clients_per_round(self) -> int:
        return max(1, int(round(self.training["participation"] * self.training["num_clients"])))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunSpec":
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in names}
        if "training" in d:  # a key left out (see job_params) takes its default
            d["training"] = {**TRAINING_DEFAULTS, **d["training"]}
        return cls(**d)

    def job_params(self) -> str:
        """The spec as the train job's Snakemake params: the run id's canonical form (keys added later
        left out while unset, speed-only keys while at their default), so a new training key or a new
        default backend does not make Snakemake rerun finished runs whose numbers it does not change."""
        d = self.to_dict()
        d["training"] = {k: v for k, v in d["training"].items() if not (k in _HASHED_WHEN_SET and not v)
                         and not (k in _SPEED_ONLY and v == TRAINING_DEFAULTS[k])}
        return json.dumps(d, sort_keys=True)

    def digest(self) -> str:
        """Hash of everything but the names already in the path."""
        d = self.to_dict()
        payload = {k: d[k] for k in ("hparams", "model_kwargs", "training")}
        # backend and vmap_clients change speed, not numbers (tested to 1e-5); eval_subset, local_epochs and
        # holdout hashed only when set, so run ids made before these keys existed stay stable
        payload["training"] = {k: v for k, v in payload["training"].items()
                               if k not in _SPEED_ONLY and not (k in _HASHED_WHEN_SET and not v)}
        for k in ("analysis", "uplink"):  # omitted when empty so older run ids stay stable
            if d[k]:
                payload[k] = d[k]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]

    def run_id(self) -> str:
        return f"{self.dataset}/{self.partition}/{self.model}/{self.algorithm}/{self.digest()}/seed{self.seed}"

    def partition_id(self) -> str:
        tr = self.training
        extra = f"-spc{tr['samples_per_client']}" if tr["samples_per_client"] else ""
        return f"{self.dataset}/{self.partition}-n{tr['num_clients']}{extra}-seed{self.seed}"
