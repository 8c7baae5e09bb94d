"""Friedman's test and Nemenyi's critical difference against hand computations and Demšar's (2006) Table 5."""
import math

import numpy as np
import pytest

from fedflat.core.util.friedman import block_ranks, friedman_nemenyi, nemenyi_q


def test_nemenyi_q_is_demsars_table():
    # Demšar 2006, Table 5(a), alpha = 0.05: q for k = 2..6 and 10
    for k, q in ((2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850), (10, 3.164)):
        assert nemenyi_q(k) == pytest.approx(q, abs=1e-3)
    assert nemenyi_q(3, 0.10) == pytest.approx(2.052, abs=1e-3)  # Table 5(a), alpha = 0.10


def test_ranks_within_blocks_best_first_nan_last_ties_shared():
    r = block_ranks([[90.0, 80.0, 70.0], [80.0, np.nan, 85.0], [np.nan, 75.0, np.nan], [5.0, 5.0, 1.0]])
    assert r.tolist() == [[1, 2, 3], [2, 3, 1], [2.5, 1, 2.5], [1.5, 1.5, 3]]


def test_friedman_and_the_critical_difference_by_hand():
    """Ranks a 1,1,1,2; b 2,3,2,1; c 3,2,3,3 over N = 4 blocks: mean ranks 1.25, 2, 2.75; chi2 = 12 N / (k (k + 1))
    (sum R^2 - k (k + 1)^2 / 4) = 4 x 1.125 = 4.5 (df 2, p = e^-2.25); CD = 2.343 sqrt(k (k + 1) / (6 N))."""
    v = [[3.0, 2.0, 1.0], [3.0, 1.0, 2.0], [3.0, 2.0, 1.0], [2.0, 3.0, 1.0]]
    res = friedman_nemenyi(v)
    assert (res["k"], res["n"], res["df"]) == (3, 4, 2)
    assert res["mean_ranks"].tolist() == [1.25, 2.0, 2.75]
    assert res["statistic"] == pytest.approx(4.5) and res["p"] == pytest.approx(math.exp(-2.25))
    assert res["cd"] == pytest.approx(2.3437 * math.sqrt(0.5), abs=1e-4)


def test_friedman_corrects_for_ties():
    """Blocks ranked 1,2,3 / 1,2,3 / 1.5,1.5,3: uncorrected chi2 = 31/6, the tie correction 1 - (2^3 - 2) /
    (N (k^3 - k)) = 11/12, so chi2 = 62/11."""
    res = friedman_nemenyi([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0], [2.0, 2.0, 1.0]])
    assert res["statistic"] == pytest.approx(62 / 11)


def test_undefined_below_three_treatments_or_two_blocks_and_all_tied_is_no_evidence():
    assert math.isnan(friedman_nemenyi([[1.0, 2.0], [2.0, 1.0]])["p"])
    assert math.isnan(friedman_nemenyi([[1.0, 2.0, 3.0]])["cd"])
    tied = friedman_nemenyi([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    assert (tied["statistic"], tied["p"]) == (0.0, 1.0)
