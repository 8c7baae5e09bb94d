"""Parameters of the per-run analysis commands (config: `analysis: {hessian: {...}, landscape:
{...}, stability: {...}}`), with defaults and one-line ConfigErrors naming the key."""
from __future__ import annotations

import json
from typing import Any

from ...core.errors import ConfigError
from .loaded_run import check_number, check_positive_int
from .directions import ONE_D_POLICIES


def _int(lo):
    return lambda k, v: check_positive_int(k, v, lo)


def _num(lo=None, open_=False):
    return lambda k, v: check_number(k, v, lo, open_)


def _choice(*allowed):
    def f(k, v):
        if v not in allowed:
            raise ConfigError(f"{k}: {v!r} not allowed; allowed: {', '.join(map(str, allowed))}")
        return v
    return f


def _bool(k, v):
    if not isinstance(v, bool):
        raise ConfigError(f"{k}: expected true/false, got {v!r}")
    return v


def _range(k, v):
    if not (isinstance(v, (list, tuple)) and len(v) == 2) or check_number(k, v[0]) >= check_number(k, v[1]):
        raise ConfigError(f"{k}: expected [low, high] with low < high, got {v!r}")
    return [float(v[0]), float(v[1])]


COMMANDS: dict[str, dict[str, tuple[Any, Any]]] = {
    "hessian": {
        "samples": (4096, _int(0)),  # 0 = the whole split; PyHessian #5: ~4096 CIFAR points are stable
        # the data the Hessian is taken on: a training subset, a test subset, or each client's own training data
        # (hessian_clients.json: per-client λ_max and trace, their mean and maximum; FedSynSAM Table I's protocols);
        # local: each client sampled in the snapshot round at its own end-of-round model, on its own data
        "split": ("train", _choice("train", "test", "clients", "local")),
        # 0: the final model (model.pt); t >= 1: the end-of-round-t snapshot (training.snapshot_rounds)
        "round": (0, _int(0)),
        "seed": (0, _int(0)),
        "batch_size": (512, _int(1)),
        "top_k": (5, _int(1)),
        "max_iter": (100, _int(1)),
        "tol": (1e-3, _num(0.0)),
        "trace_samples": (100, _int(0)),
        "density_iters": (80, _int(0)),
        "density_runs": (1, _int(0)),
    },
    "landscape": {
        "points": (21, _int(2)),  # 2-D grid points per axis
        "points_1d": (51, _int(2)),
        "range": ([-1.0, 1.0], _range),
        "direction_seed": (0, _int(0)),  # the same for every algorithm
        "directions": ("random", _choice("random", "hessian")),  # hessian: top-2 eigenvectors (FedSOL Fig. 8)
        "hessian_samples": (4096, _int(0)),  # training subset for the eigenvectors (directions: hessian)
        "one_d": ("zero", _choice(*ONE_D_POLICIES)),
        "train_samples": (10000, _int(0)),
        "test_samples": (0, _int(0)),
        "subset_seed": (0, _int(0)),
        "chunk": (0, _int(0)),  # grid points per vmap call; 0 = auto (16 on CUDA, 1 on CPU)
        "batch_size": (1024, _int(1)),
    },
    "stability": {
        "swap_seed": (0, _int(0)),
        "same_label": (False, _bool),
        "neighbour": ("sample", _choice("sample", "client")),  # client: FedSAGD Def. 3.4 (one client replaced)
    },
}


def resolve(cmd: str, params: dict | None, key: str | None = None) -> dict:
    spec = COMMANDS[cmd]
    key = key or f"analysis.{cmd}"
    params = dict(params or {})
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise ConfigError(f"{key}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(spec))}")
    out = {k: (check(f"{key}.{k}", params[k]) if k in params else default) for k, (default, check) in spec.items()}
    if cmd == "hessian" and out["split"] == "local" and not out["round"]:
        raise ConfigError(f"{key}.split: 'local' measures the clients' models of a snapshot round; set {key}.round >= 1")
    return out


# keys added after jobs existed, left out of a job's Snakemake params while at their default, so that adding them
# reruns no finished analysis job (as RunSpec.job_params does for training keys)
_ADDED_LATER = {"hessian": {"round": 0}}


def job_params(cmd: str, params: dict) -> str:
    """The resolved parameters as a rule's params string (canonical JSON; see _ADDED_LATER)."""
    later = _ADDED_LATER.get(cmd, {})
    return json.dumps({k: v for k, v in params.items() if not (k in later and v == later[k])}, sort_keys=True)


def from_config(config: dict, cmd: str) -> dict:
    """The resolved parameters of `cmd` from a study config's top-level `analysis` section."""
    section = (config or {}).get("analysis") or {}
    if not isinstance(section, dict):
        raise ConfigError("analysis: must be a mapping with keys hooks, hessian, landscape, stability")
    bad = sorted(set(section) - {"hooks", *COMMANDS})
    if bad:
        raise ConfigError(f"analysis: unknown key {bad[0]!r}; allowed: {', '.join(sorted({'hooks', *COMMANDS}))}")
    if cmd == "hessian" and "round" in (section.get(cmd) or {}):  # hessian.json is the final model's, by its name
        raise ConfigError("analysis.hessian.round: a snapshot's round is named by its file "
                          "(hessian_r<t>_<split>.json, rule hessian_snapshot), not set for the study")
    return resolve(cmd, section.get(cmd))
