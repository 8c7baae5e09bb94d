"""fedflat.core.util.rank_stats: the project's one NaN-safe bootstrap, rank correlations, seed spread and tie bands,
each against a hand computation."""
import math

import numpy as np
import pytest

from fedflat.core.util.rank_stats import bootstrap_ci, correlation, kendall, pooled_std, seed_std, spearman, tie_bands


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


def test_seed_and_pooled_std_by_hand():
    assert seed_std([1.0, 3.0]) == pytest.approx(math.sqrt(2))
    assert math.isnan(seed_std([1.0, np.nan]))
    # a = {1, 3}: ss 2; b = {2, 4, 6}: ss 8; dof 3 -> sqrt(10/3)
    assert pooled_std([1, 3], [2, 4, 6]) == pytest.approx(math.sqrt(10 / 3))


def test_tie_bands_compare_with_the_band_head_not_the_neighbour():
    cells = [("a", [90.0, 90.2]), ("b", [89.95, 90.05]), ("c", [89.8, 89.9]), ("d", [88.0, 88.1])]
    # means 90.1, 90.0, 89.85, 88.05: a-b 0.1 < pooled sd 0.112 (band 1); c is 0.25 below the head a, pooled
    # sd(a, c) 0.112 -> band 2; d far below -> band 3
    assert tie_bands(cells) == {"a": 1, "b": 1, "c": 2, "d": 3}
    chain = [("a", [10.0, 10.4]), ("b", [9.8, 10.2]), ("c", [9.6, 10.0])]
    # a-b 0.2 < 0.283 (band 1); c vs head a: 0.4 >= 0.283 -> new band, although c-b 0.2 < 0.283
    assert tie_bands(chain) == {"a": 1, "b": 1, "c": 2}
