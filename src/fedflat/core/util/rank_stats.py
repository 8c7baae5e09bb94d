"""Statistics every table and result page quotes, defined once: rank correlations and the one NaN-safe
bootstrap of the project (paired tests: util.paired; the leaderboard's ranks and bands: leaderboard.ranking).
Plain numpy/scipy on small arrays; each has a test."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np


def _pairs(x, y) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) pairs where both are finite numbers: a method without a value on one side is left out."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


def spearman(x, y) -> float:
    from scipy.stats import spearmanr

    x, y = _pairs(x, y)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def kendall(x, y) -> float:
    from scipy.stats import kendalltau

    x, y = _pairs(x, y)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(kendalltau(x, y).statistic)


def bootstrap_ci(x, y, stat: Callable = spearman, reps: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of stat(x, y) over the items (methods). NaN pairs are dropped BEFORE
    resampling, so every resample has the size of the sample the statistic is quoted on (resampling them
    and dropping inside `stat` shrinks resamples at random and widens the interval). Resamples where the
    statistic is undefined (all values tied) are skipped; NaN when none is defined."""
    x, y = _pairs(x, y)
    n = len(x)
    if n < 3:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
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


def correlation(x, y, stat: Callable = spearman, **kw) -> dict:
    """{value, lo, hi, n}: the statistic on the finite pairs, its bootstrap interval and how many pairs."""
    xs, _ = _pairs(x, y)
    lo, hi = bootstrap_ci(x, y, stat, **kw)
    return {"value": stat(x, y), "lo": lo, "hi": hi, "n": int(len(xs))}
