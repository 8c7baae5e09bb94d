"""Friedman's test of k treatments over N blocks and Nemenyi's critical difference of their mean ranks (Demšar,
"Statistical comparisons of classifiers over multiple data sets", JMLR 7, 2006, Sections 3.2.2 and 3.2.4): the
comparison behind a critical-difference diagram. Plain numpy/scipy on a small matrix."""
from __future__ import annotations

import math

import numpy as np


def block_ranks(values) -> np.ndarray:
    """Ranks within each block (row) of a blocks x treatments matrix: 1 = the highest value, ties share the mean of
    their ranks; a NaN ranks below every number of its block (the NaNs of a block tie among themselves)."""
    from scipy.stats import rankdata

    v = np.asarray(values, dtype=float)
    return rankdata(-np.where(np.isnan(v), -np.inf, v), axis=1, method="average")


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Nemenyi's q_alpha for k treatments: the studentized range quantile at infinite degrees of freedom over
    sqrt(2) (Demšar's Table 5: 1.960, 2.343, 2.569, 2.728 for k = 2..5 at alpha 0.05)."""
    from scipy.stats import studentized_range

    return float(studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2))


def friedman_nemenyi(values, alpha: float = 0.05) -> dict:
    """{k, n, mean_ranks, statistic, df, p, q, cd} for a blocks x treatments matrix (block_ranks' convention: higher
    is better, NaN last). statistic: Friedman's chi-square with the correction for ties (scipy's
    friedmanchisquare on the within-block ranks, which re-ranks them unchanged); cd: Nemenyi's critical difference
    q_alpha sqrt(k (k + 1) / (6 N)): two treatments whose mean ranks differ by at least cd differ at alpha.
    Fewer than 2 blocks or 3 treatments (scipy's minimum): statistic, p, q and cd are NaN."""
    from scipy.stats import friedmanchisquare

    r = block_ranks(values) if np.size(values) else np.zeros(np.shape(values))
    n, k = r.shape
    out = {"k": k, "n": n, "mean_ranks": r.mean(axis=0) if n else np.full(k, np.nan), "statistic": math.nan,
           "df": k - 1, "p": math.nan, "q": math.nan, "cd": math.nan}
    if n < 2 or k < 3:
        return out
    if np.all(r == r[:, :1]):  # every treatment tied in every block: no evidence of a difference
        stat, p = 0.0, 1.0
    else:
        res = friedmanchisquare(*r.T)
        stat, p = float(res.statistic), float(res.pvalue)
    q = nemenyi_q(k, alpha)
    return {**out, "statistic": stat, "p": p, "q": q, "cd": q * math.sqrt(k * (k + 1) / (6 * n))}
