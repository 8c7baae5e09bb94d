"""Parameters of the per-run analysis commands (config: `analysis: {hessian: {...}, landscape:
{...}, stability: {...}}`), with defaults and one-line ConfigErrors naming the key."""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .data import check_number, check_positive_int
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
        # (hessian_clients.json: per-client λ_max and trace, their mean and maximum; FedSynSAM Table I's protocols)
        "split": ("train", _choice("train", "test", "clients")),
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
    return {k: (check(f"{key}.{k}", params[k]) if k in params else default) for k, (default, check) in spec.items()}


def from_config(config: dict, cmd: str) -> dict:
    """The resolved parameters of `cmd` from a study config's top-level `analysis` section."""
    section = (config or {}).get("analysis") or {}
    if not isinstance(section, dict):
        raise ConfigError("analysis: must be a mapping with keys hooks, hessian, landscape, stability")
    bad = sorted(set(section) - {"hooks", *COMMANDS})
    if bad:
        raise ConfigError(f"analysis: unknown key {bad[0]!r}; allowed: {', '.join(sorted({'hooks', *COMMANDS}))}")
    return resolve(cmd, section.get(cmd))
