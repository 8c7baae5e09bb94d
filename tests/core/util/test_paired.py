"""fedflat.core.util.paired against scipy's paired t-test, Holm's adjustment on a worked example, and the detectable
difference's scaling."""
import math

import pytest
from scipy import stats

from fedflat.core.util.paired import detectable, holm, paired_t


def test_paired_t_is_scipy_s_paired_test_with_its_interval():
    a, b = [81.0, 82.5, 80.2, 83.1], [80.0, 81.0, 80.5, 81.9]
    got = paired_t([x - y for x, y in zip(a, b)])
    ref = stats.ttest_rel(a, b)
    assert got["p"] == pytest.approx(ref.pvalue) and got["mean"] == pytest.approx(0.85)
    lo, hi = ref.confidence_interval(0.95)
    assert (got["lo"], got["hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert paired_t([1.0, 1.0])["p"] == 0.0 and paired_t([0.0, 0.0])["p"] == 1.0  # zero sd
    assert math.isnan(paired_t([1.0])["p"])


def test_holm_steps_down_and_keeps_the_order_and_the_nans():
    # sorted 0.01, 0.02, 0.04 of m = 3: 0.03, 0.04 (= max(0.03, 2 * 0.02)), 0.04
    assert holm([0.04, 0.01, float("nan"), 0.02]) == pytest.approx([0.04, 0.03, float("nan"), 0.04], nan_ok=True)
    assert holm([0.6, 0.5]) == [1.0, 1.0]


def test_the_detectable_difference_shrinks_with_the_square_root_of_the_pairs():
    d3, d12 = detectable(1.0, 3), detectable(1.0, 12)
    assert d3 == pytest.approx((stats.t.ppf(0.975, 2) + stats.t.ppf(0.8, 2)) / math.sqrt(3))
    assert d12 < d3 / 2 + 0.5 and detectable(2.0, 12) == pytest.approx(2 * d12)
