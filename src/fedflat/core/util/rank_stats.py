"""Statistics every table and result page quotes, defined once: rank correlations and the one NaN-safe
bootstrap of the project, seed spread, tie bands. Plain numpy/scipy on small arrays; each has a test."""
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


def seed_std(values) -> float:
    """Sample standard deviation (ddof 1) over seeds of one cell; NaN with fewer than two finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")


def pooled_std(a, b) -> float:
    """Pooled sample standard deviation of two cells' seeds (equal weights by degrees of freedom)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    dof = len(a) + len(b) - 2
    if dof < 1:
        return float("nan")
    ss = (np.var(a, ddof=1) * (len(a) - 1) if len(a) > 1 else 0.0) + (np.var(b, ddof=1) * (len(b) - 1) if len(b) > 1 else 0.0)
    return float(math.sqrt(ss / dof))


def within_spread(a, b) -> bool:
    """Do two cells' seed means differ by less than their pooled seed standard deviation? (False where it is
    undefined.) The tie bands' criterion, and the leaderboard's pairwise verdicts'."""
    return bool(abs(float(np.nanmean(a)) - float(np.nanmean(b))) < pooled_std(a, b))


def tie_bands(cells: list[tuple[str, list[float]]]) -> dict[str, int]:
    """{name: band} for cells sorted best first by mean: a cell joins the band of the cell that opened the
    current band while their means differ by less than the two cells' pooled seed standard deviation;
    otherwise it opens the next band. Bands are numbered from 1. Comparing with the band's first cell (not
    with the neighbour) keeps a band from chaining across many small steps."""
    out: dict[str, int] = {}
    band, head = 0, None
    for name, vals in cells:
        m = float(np.nanmean(vals)) if np.isfinite(np.asarray(vals, dtype=float)).any() else float("nan")
        if head is not None and math.isfinite(m):
            if within_spread(head[1], vals):
                out[name] = band
                continue
        band += 1
        head = (m, vals)
        out[name] = band
    return out
