"""fedflat.core.util.rank_stats: the project's one NaN-safe bootstrap and rank correlations, each against a hand
computation."""
import math

import numpy as np
import pytest

from fedflat.core.util.rank_stats import bootstrap_ci, correlation, kendall, spearman


def test_kendall_and_spearman_by_hand():
    # x = 1..4, y = 1,3,2,4: one discordant pair of 6 -> tau = (5 - 1) / 6; spearman = 1 - 6*2/(4*15) = 0.8
    assert kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert kendall([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_nan_pairs_are_dropped_before_resampling():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=20), rng.normal(size=20)
    y = x + 0.5 * y
    xn, yn = x.copy(), y.copy()
    xn[[2, 7]] = np.nan
    yn[11] = np.nan
    keep = np.isfinite(xn) & np.isfinite(yn)
    # identical to the interval of the clean 17 pairs (same seed, same resample size): NaNs never enter a resample
    assert bootstrap_ci(xn, yn, kendall) == bootstrap_ci(x[keep], y[keep], kendall)
    # the old scheme (resample all 20, let the statistic drop NaNs inside) gives another interval
    rng2 = np.random.default_rng(0)
    old = []
    for _ in range(2000):
        i = rng2.integers(0, 20, 20)
        old.append(kendall(xn[i], yn[i]))
    lo, hi = np.quantile(old, [0.025, 0.975])
    assert (lo, hi) != pytest.approx(bootstrap_ci(xn, yn, kendall))
    c = correlation(xn, yn, kendall)
    assert c["n"] == 17 and c["lo"] <= c["value"] <= c["hi"]


def test_bootstrap_needs_three_pairs():
    assert all(math.isnan(v) for v in bootstrap_ci([1, np.nan, 3], [1, 2, np.nan]))
