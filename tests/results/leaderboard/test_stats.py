"""The leaderboard's statistics on hand-made inputs: Pareto frontier, cost to reach, rank correlations (the v3 ranks
and verdicts: test_ranking.py)."""
import math

import numpy as np
import pytest

from fedflat.results.leaderboard.stats import bootstrap_ci, kendall, pareto_front, spearman
from fedflat.core.util.curves import cost_to_reach


def test_pareto_front_keeps_only_undominated_points_by_increasing_cost():
    cost = [1.0, 2.0, 3.0, 2.0, 0.5, float("nan"), 4.0]
    acc = [50.0, 60.0, 55.0, 40.0, 30.0, 99.0, 61.0]
    # (3, 55) is dominated by (2, 60); (2, 40) by (1, 50); the NaN point is never on the front
    assert pareto_front(cost, acc) == [4, 0, 1, 6]
    assert pareto_front([1.0, 1.0], [5.0, 5.0]) == [0, 1]  # equal points do not dominate each other


def test_cost_to_reach_is_the_cumulative_cost_at_the_first_evaluation_at_or_above_target():
    acc = np.array([np.nan, 50.0, np.nan, 70.0, np.nan, 65.0])
    cost = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert cost_to_reach(acc, cost, 60.0) == 10.0  # rounds 1..4
    assert cost_to_reach(acc, cost, 50.0) == 3.0
    assert math.isnan(cost_to_reach(acc, cost, 71.0))


def test_rank_correlations_and_their_bootstrap_interval():
    x = np.arange(10.0)
    assert spearman(x, x ** 3) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)  # 5 concordant, 1 discordant pair
    assert bootstrap_ci(x, x ** 3) == pytest.approx((1.0, 1.0))
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=40), rng.normal(size=40)
    lo, hi = bootstrap_ci(a, b, reps=500)
    assert lo < spearman(a, b) < hi and lo < 0 < hi  # independent: the interval covers 0
    assert math.isnan(spearman([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]))  # undefined, not 0


def test_the_correlation_says_how_many_methods_it_rests_on():
    from fedflat.results.leaderboard.flatness import correlation, correlation_text

    x = [1.0, 2.0, float("nan"), 4.0, 3.0]  # the third method has no curvature (its Hessian is missing)
    y = [80.0, float("nan"), 70.0, 79.0, 75.0]  # the second has no completed seed: no mean accuracy
    c = correlation(x, y)
    assert c["n"] == 3 and c["left_out"] == 1 and c["r"] == pytest.approx(-0.5)  # ranks (1,3,2) vs (3,2,1)
    assert correlation_text(c).endswith("(n = 3; 1 without a completed seed, left out)")
    assert correlation_text(correlation([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])) == "Spearman ρ = 1.00 [1.00, 1.00] (n = 3)"


def test_the_fair_subset_is_the_methods_at_the_most_common_lr():
    from fedflat.results.leaderboard.flatness import common_lr

    chosen = {"A": {"lr": 0.3}, "B": {"lr": 0.1}, "C": {"lr": 0.3}, "D": None}  # D: no working setting
    modal, same = common_lr(["A", "B", "C", "D"], chosen)
    assert modal == 0.3 and same.tolist() == [True, False, True, False]
    assert common_lr(["A", "B"], chosen)[0] == 0.1  # a tie goes to the smaller lr


def test_tied_labels_move_apart_in_order_and_stay_in_bounds():
    import numpy as np

    from fedflat.results.leaderboard.figures import spread

    y = np.array([5.0, 2.0, 5.0, 5.0, 1.0])  # three methods tied at the last rank, 5 of 5
    v = spread(y, 1.0, 0.5, 5.5)
    assert v[4] < v[1] < min(v[0], v[2], v[3])  # the order of distinct values is kept
    assert np.all(np.diff(np.sort(v)) >= 1.0 - 1e-12) and v.max() <= 5.5 and v.min() >= 0.5
    assert spread([1.0, 3.0], 1.0, 0.5, 5.5).tolist() == [1.0, 3.0]  # labels already apart do not move


def test_the_critical_difference_diagram_joins_maximal_groups_within_the_cd():
    from fedflat.results.leaderboard.cd_diagram import cliques, ticks

    # 1 - 1.5 within 1.2, 1.5 - 2.6 within, 2.6 - 3 within, nothing reaches 5: three overlapping groups, 5 alone
    assert cliques([1.0, 1.5, 2.6, 3.0, 5.0], 1.2) == [(0, 1), (1, 2), (2, 3)]
    assert cliques([1.0, 1.1, 1.2, 3.0], 1.0) == [(0, 2)]  # (1, 2) lies inside (0, 2): not maximal, not drawn
    assert cliques([1.0, 2.0], 1.0) == []  # a difference of exactly the cd is significant
    assert cliques([1.0, 1.5], float("nan")) == []
    assert ticks(56) == [1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55] and ticks(3) == [1, 2, 3]
