"""The leaderboard's statistics: ranks, Pareto frontiers, cost to reach an accuracy, rank correlations with
bootstrap confidence intervals. Plain numpy/scipy on small arrays; each is tested on hand-made inputs."""
from __future__ import annotations

import math

import numpy as np


def ranks(scores: dict[str, float]) -> dict[str, float]:
    """Rank 1 = the highest score; ties share the mean of their ranks; a missing score (NaN: diverged
    everywhere) ranks below every finite one (tied among themselves)."""
    from scipy.stats import rankdata

    names = list(scores)
    vals = np.array([scores[n] for n in names], dtype=float)
    key = np.where(np.isnan(vals), -np.inf, vals)
    r = rankdata(-key, method="average")
    return {n: float(x) for n, x in zip(names, r)}


def pareto_front(cost: list[float], acc: list[float]) -> list[int]:
    """Indices of the points no other point dominates (cost no higher and accuracy no lower, one strictly),
    ordered by increasing cost. Points with a NaN coordinate are never on the front."""
    pts = [(c, a, i) for i, (c, a) in enumerate(zip(cost, acc)) if not (math.isnan(c) or math.isnan(a))]
    front = []
    for c, a, i in pts:
        if not any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for c2, a2, _ in pts):
            front.append((c, i))
    return [i for _, i in sorted(front)]


def cost_to_reach(acc: np.ndarray, cost: np.ndarray, target: float) -> float:
    """Cumulative cost at the first evaluation whose accuracy is >= target (NaN if never). `acc` holds NaN
    for rounds without an evaluation; `cost` is the per-round cost, cumulated here."""
    cum = np.cumsum(np.nan_to_num(np.asarray(cost, dtype=float)))
    acc = np.asarray(acc, dtype=float)
    hit = np.flatnonzero(np.nan_to_num(acc, nan=-np.inf) >= target)
    return float(cum[hit[0]]) if hit.size else float("nan")


def spearman(x, y) -> float:
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return float("nan")
    return float(spearmanr(x[ok], y[ok]).statistic)


def kendall(x, y) -> float:
    from scipy.stats import kendalltau

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 3:
        return float("nan")
    return float(kendalltau(x[ok], y[ok]).statistic)


def bootstrap_ci(x, y, stat=spearman, reps: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of stat(x, y), resampling the (x, y) pairs (the methods) with replacement.
    Resamples where the statistic is undefined (e.g. all x tied) are dropped; NaN if none is defined."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    n = len(x)
    vals = []
    for _ in range(reps):
        i = rng.integers(0, n, n)
        v = stat(x[i], y[i])
        if not math.isnan(v):
            vals.append(v)
    if not vals:
        return float("nan"), float("nan")
    lo, hi = np.quantile(vals, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)
