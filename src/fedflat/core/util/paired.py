"""Paired comparisons over seeds (the same seed: the same partition, client sampling and initialisation), as the
findings' paired_claim and paired ordering apply them: the paired t-test with its 95 % interval, Holm's step-down
adjustment within a family of tests, and the smallest difference a design detects. Plain scipy on small arrays."""
from __future__ import annotations

import math

import numpy as np


def paired_t(diffs, level: float = 0.95) -> dict:
    """{n, mean, sd, lo, hi, p} of per-seed differences: the mean with its two-sided t-interval and the two-sided
    p of H0 mean = 0. A zero sd gives p 0 (or 1 for a zero mean) and a point interval; fewer than two pairs give
    NaNs."""
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    n = len(d)
    out = {"n": n, "mean": float(d.mean()) if n else math.nan, "sd": math.nan, "lo": math.nan, "hi": math.nan,
           "p": math.nan}
    if n < 2:
        return out
    sd = float(d.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    p = float(2 * stats.t.sf(abs(out["mean"]) / (sd / math.sqrt(n)), n - 1)) if sd > 0 else float(out["mean"] == 0)
    return {**out, "sd": sd, "lo": out["mean"] - half, "hi": out["mean"] + half, "p": p}


def holm(pvalues) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given; NaN stays NaN and is not counted in the family):
    the i-th smallest of m becomes max over j <= i of min(1, (m - j) p_(j))."""
    p = [float(x) for x in pvalues]
    live = sorted((x, i) for i, x in enumerate(p) if not math.isnan(x))
    m, out, run = len(live), list(p), 0.0
    for j, (x, i) in enumerate(live):
        run = max(run, min(1.0, (m - j) * x))
        out[i] = run
    return out


def detectable(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest mean paired difference a two-sided paired t-test at `alpha` detects with `power`, from the
    observed sd of the differences over n pairs: (t_{1-alpha/2, n-1} + t_{power, n-1}) sd / sqrt(n)."""
    from scipy import stats

    if n < 2 or not math.isfinite(sd):
        return math.nan
    return float((stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) * sd / math.sqrt(n))
