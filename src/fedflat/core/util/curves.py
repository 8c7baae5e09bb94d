"""What a run's per-round curve (metrics.csv) says about its cost, as a few numbers: the mean floats a client
sends and receives per round, and the cumulative uplink bytes and gradient evaluations until the run first
reaches REACH of its own final accuracy. One function, so the leaderboard's tables computed from a run directory
and from the run's committed record (fedflat.evidence.records) are the same numbers."""
from __future__ import annotations

import numpy as np

REACH = 0.99  # cost to reach = cost until the run first reaches 99 % of its own final (last-10 %) accuracy
CURVE_COSTS = ("up_floats", "down_floats", "up_to_reach", "grads_to_reach")


def cost_to_reach(acc: np.ndarray, cost: np.ndarray, target: float) -> float:
    """Cumulative cost at the first evaluation whose accuracy is >= target (NaN if never). `acc` holds NaN
    for rounds without an evaluation; `cost` is the per-round cost, cumulated here."""
    cum = np.cumsum(np.nan_to_num(np.asarray(cost, dtype=float)))
    acc = np.asarray(acc, dtype=float)
    hit = np.flatnonzero(np.nan_to_num(acc, nan=-np.inf) >= target)
    return float(cum[hit[0]]) if hit.size else float("nan")


def curve_costs(m, last10_pct: float, completed: bool, bytes_per_float: int) -> dict[str, float]:
    """{CURVE_COSTS: value} from metrics.csv's frame `m` (columns round, clients, up_bytes, down_bytes, test_acc,
    grad_evals). `last10_pct` is the run's last-10 % accuracy in percent; a run that did not complete has no
    cost to reach (NaN), while its floats per client cover the rounds it ran."""
    nan = float("nan")
    if m is None or len(m) == 0 or not {"clients", "up_bytes", "down_bytes"} <= set(m.columns):
        return dict.fromkeys(CURVE_COSTS, nan)
    per_client = m["clients"].clip(lower=1)
    out = {"up_floats": float((m["up_bytes"] / per_client).mean() / bytes_per_float),
           "down_floats": float((m["down_bytes"] / per_client).mean() / bytes_per_float),
           "up_to_reach": nan, "grads_to_reach": nan}
    if completed and np.isfinite(last10_pct):
        acc = 100 * m["test_acc"].to_numpy(dtype=float)
        target = REACH * last10_pct
        out["up_to_reach"] = cost_to_reach(acc, m["up_bytes"].to_numpy(dtype=float), target)
        out["grads_to_reach"] = cost_to_reach(acc, m["grad_evals"].to_numpy(dtype=float), target)
    return out
