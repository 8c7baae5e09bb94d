"""The v3 statistics (config/leaderboard.yaml `statistics:`) on hand-made seeds: each test fails if its rule were
wrong (an unpaired test, no Holm correction, ties ordered by sort accident, a collapsed seed counted, a failed seed
folded into the rank, a twin paired by position instead of by seed)."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedflat.results.leaderboard import ranking
from fedflat.results.leaderboard.ranking import (ASCENT_HELPS, NOT_DISTINGUISHABLE, NOT_TESTABLE, ablation, bands,
                                         correlation_words, critical_difference, family, mean_ranks, power,
                                         rank_order, summarise)

SEEDS = (0, 1, 2, 3, 4)


def _runs(methods: dict, part: str = "iid") -> pd.DataFrame:
    """{preset: [accuracy per seed 0..4; None: diverged; "collapsed": finished at chance (an accuracy of 10 %
    recorded, which must not count)]}."""
    rows = []
    for preset, accs in methods.items():
        for seed, a in enumerate(accs):
            status = "diverged" if a is None else "collapsed" if a == "collapsed" else "completed"
            rows.append({"partition": part, "preset": preset, "seed": seed, "status": status,
                         "final_acc": 10.0 if status == "collapsed" else np.nan if a is None else a})
    return pd.DataFrame(rows)


def _row(s, preset, part="iid"):
    return s[(s["preset"] == preset) & (s["partition"] == part)].iloc[0]


def test_a_paired_difference_an_unpaired_test_misses_opens_a_band():
    """b sits 0.5 below a on every seed while both spread 8 points over the seeds: unpaired, the two cannot be told
    apart (p 0.81); paired over the same seeds they can, so b is below the band of a."""
    a = [80.0, 82.0, 84.0, 86.0, 88.0]
    b = list(np.array(a) - 0.5 + np.array([0.05, -0.05, 0.02, -0.02, 0.0]))
    assert stats.ttest_ind(a, b).pvalue > 0.5
    s = summarise(_runs({"a": a, "b": b}))
    assert (_row(s, "a")["band"], _row(s, "b")["band"]) == (1, 2)


def test_an_unpaired_difference_the_paired_test_does_not_confirm_stays_in_the_band():
    """Means 85.6 and 84.4 with small spreads (unpaired p 0.009), but seed by seed the difference swings between
    0 and 2 (paired p 0.07): not distinguishable."""
    a, b = [86.0, 85.0, 86.0, 85.0, 86.0], [84.0, 85.0, 84.0, 85.0, 84.0]
    assert stats.ttest_ind(a, b).pvalue < 0.01
    s = summarise(_runs({"a": a, "b": b}))
    assert _row(s, "b")["band"] == 1 and _row(s, "b")["rank"] == 2


def _below(m: float) -> list[float]:
    return list(90.0 - m - np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))


def test_holm_over_the_comparisons_with_the_head_keeps_what_an_unadjusted_test_would_split():
    """Three methods each below the head at raw p 0.020, 0.030, 0.040: all significant alone, none after Holm's
    correction over the three (0.060 first)."""
    head = [90.0] * 5
    tests = [ranking.paired(dict(enumerate(head)), dict(enumerate(_below(m)))) for m in (2.65, 2.33, 2.12)]
    assert [round(t["p"], 2) for t in tests] == [0.02, 0.03, 0.04]
    s = summarise(_runs({"head": head, "x": _below(2.65), "y": _below(2.33), "z": _below(2.12)}))
    assert set(s["band"]) == {1}
    alone = summarise(_runs({"head": head, "x": _below(2.65)}))  # a family of one: no correction
    assert _row(alone, "x")["band"] == 2


def test_family_verdicts_are_holm_corrected_and_say_not_testable_under_two_pairs():
    head = dict(enumerate([90.0] * 5))
    comps = [{"name": n, "a": head, "b": dict(enumerate(_below(m)))} for n, m in (("x", 2.33), ("y", 2.12))]
    comps.append({"name": "one", "a": head, "b": {0: 80.0, 1: math.nan, 2: math.nan, 3: math.nan, 4: math.nan}})
    out = {r["name"]: r for r in family(comps)}
    assert out["x"]["p"] < 0.05 and out["x"]["p_holm"] == pytest.approx(2 * out["x"]["p"])  # two testable: m = 2
    # raw 0.030 and 0.040, both below 0.05; Holm: 2 x 0.030 = 0.060, then max(0.060, 0.040): neither
    assert out["y"]["p"] < 0.05 and out["x"]["verdict"] == out["y"]["verdict"] == NOT_DISTINGUISHABLE
    assert out["one"]["verdict"] == NOT_TESTABLE and math.isnan(out["one"]["p_holm"])
    big = family([{"a": head, "b": dict(enumerate(_below(5.0)))}, {"a": dict(enumerate(_below(5.0))), "b": head}])
    assert [r["verdict"] for r in big] == ["better", "worse"]  # the sign of the difference


def test_exact_ties_are_ordered_by_preset_name_whatever_the_order_read():
    """The same mean reached by two sums (fractions x 100 from run directories, percentages from records) differs
    in its last bits: equal to 9 decimals, ordered by preset name; ranks stay distinct."""
    a = 100 * np.array([0.8910, 0.8887, 0.8907, 0.8900, 0.8900])
    b = np.array([89.12, 88.95, 88.97, 89.00, 89.00])
    assert a.mean() != b.mean() and round(a.mean(), 9) == round(b.mean(), 9)
    for names in (("zeta", "alpha"), ("alpha", "zeta")):
        runs = _runs({names[0]: list(a), names[1]: list(b)})
        s = summarise(runs.iloc[::-1])  # read backwards: the order must not matter
        assert list(s["preset"]) == ["alpha", "zeta"] and list(s["rank"]) == [1, 2]
    assert rank_order({"b": 89.0133, "a": 89.0134, "c": math.nan}) == ["a", "b"]  # a real difference still orders


def test_a_collapsed_seed_counts_as_failed_even_with_an_accuracy_recorded():
    s = summarise(_runs({"m": [85.0, 86.0, "collapsed", 87.0, 88.0]}))
    r = _row(s, "m")
    assert (r["completed"], r["failed"], r["stability"]) == (4, 1, 0.8)
    assert r["mean"] == pytest.approx(86.5)  # the 10 % of the collapsed run is not in the mean


def test_failed_seeds_never_enter_the_rank_the_stability_says_them():
    """a completed 3 of 5 seeds at 90 on average, b all five at 85: a ranks first (its stability 0.6 beside it),
    its interval is over its 3 seeds, and its band comes from the seeds both completed."""
    s = summarise(_runs({"a": [90.0, None, 89.0, "collapsed", 91.0], "b": [85.0, 85.5, 84.0, 85.0, 86.0]}))
    a, b = _row(s, "a"), _row(s, "b")
    assert (a["rank"], b["rank"]) == (1, 2) and a["stability"] == 0.6 and b["stability"] == 1.0
    half = stats.t.ppf(0.975, 2) * np.std([90.0, 89.0, 91.0], ddof=1) / math.sqrt(3)
    assert (a["lo"], a["hi"]) == pytest.approx((90.0 - half, 90.0 + half))
    b_seeds = {0: 85.0, 2: 84.0, 4: 86.0}
    t = ranking.paired({0: 90.0, 2: 89.0, 4: 91.0}, b_seeds)
    assert t["seeds"] == [0, 2, 4] and b["band"] == (2 if t["p"] < 0.05 else 1)


def test_one_completed_seed_is_ranked_but_not_testable_and_none_is_unranked():
    """x's one seed is the best value: it ranks first but heads no band (b, the best with two seeds, does); y has no
    completed seed and no rank; z had no pick (no final run): a row, no seed, no rank."""
    s = summarise(_runs({"x": [95.0, None, None, None, None], "b": [85.0] * 5, "c": [70.0, 71.0, 69.0, 70.5, 70.2],
                         "y": [None, "collapsed", None, None, None]}), {"iid": ["z"]})
    assert list(s["preset"]) == ["x", "b", "c", "y", "z"]
    x, b, c, y, z = (_row(s, p) for p in "xbcyz")
    assert x["rank"] == 1 and math.isnan(x["band"]) and not x["testable"] and math.isnan(x["lo"])
    assert (b["rank"], b["band"]) == (2, 1) and (c["rank"], c["band"]) == (3, 2)
    assert math.isnan(y["rank"]) and y["stability"] == 0.0 and not y["unstable"]
    assert math.isnan(z["rank"]) and z["unstable"] and z["seeds"] == 0 and math.isnan(z["stability"])


def test_a_method_without_two_seeds_in_common_with_a_head_waits_for_the_next_one():
    acc = {"h": {0: 90.0, 1: 91.0, 2: math.nan, 3: math.nan, 4: math.nan},
           "w": {0: math.nan, 1: math.nan, 2: 89.0, 3: 88.0, 4: 88.5},
           "v": {0: 80.0, 1: 81.0, 2: 79.0, 3: 80.5, 4: 80.2}}
    b = bands(["h", "w", "v"], acc)
    assert b["h"]["band"] == 1 and b["w"]["band"] == 2 and b["w"]["head"] == "w"  # w opened the next band
    # v is below h on seeds 0, 1 (paired sd 0) and below w on seeds 2-4: it opens band 3
    assert (b["v"]["band"], b["v"]["head"]) == (3, "v")


def test_the_ablation_pairs_the_twin_by_seed():
    """The twin's seed 2 failed: the difference is over seeds 0, 1, 3, 4, each pick seed minus the twin's same
    seed (+1 everywhere, although the values interleave across seeds and the twin's dict is in another order)."""
    pick = {0: 80.0, 1: 90.0, 2: 85.0, 3: 70.0, 4: 95.0}
    twin = {4: 94.0, 3: 69.0, 2: math.nan, 1: 89.0, 0: 79.0}
    (r,) = ablation([{"partition": "iid", "preset": "fedsam", "pick": pick, "twin": twin}])
    assert r["seeds"] == [0, 1, 3, 4] and r["n"] == 4 and r["mean"] == pytest.approx(1.0)
    assert r["verdict"] == ASCENT_HELPS and r["p_holm"] == 0.0
    (u,) = ablation([{"pick": pick, "twin": {s: v - 1 + (1.5 if s % 2 else -1.5) for s, v in pick.items()}}])
    assert u["verdict"] == NOT_DISTINGUISHABLE and u["p"] > 0.1  # +2.5 / -0.5 alternating: mean 1.3, p 0.15
    (w,) = ablation([{"pick": {s: v - 2 for s, v in pick.items()}, "twin": pick}])
    assert w["verdict"] == "ascent hurts"


def test_power_is_detectable_at_the_median_paired_sd_of_the_completed_pairs():
    """Three complete methods: the paired sds are 0 (a, b: a constant offset), and those of c against a and b,
    equal: the median is theirs; d has a failed seed and no pair."""
    base = np.array([80.0, 81.0, 82.0, 83.0, 84.0])
    c = base + np.array([0.0, 1.0, 0.0, 1.0, 0.0])
    p = power(_runs({"a": list(base), "b": list(base - 1), "c": list(c), "d": [80.0, None, 80.0, 80.0, 80.0]}))["iid"]
    sd = float(np.std(c - base, ddof=1))
    assert p["pairs"] == 3 and p["seeds"] == 5 and p["sd"] == pytest.approx(sd)
    assert p["detectable"] == pytest.approx((stats.t.ppf(0.975, 4) + stats.t.ppf(0.8, 4)) * sd / math.sqrt(5))


def test_critical_difference_ranks_a_failed_seed_last_and_leaves_an_absent_method_out():
    """Two partitions x two seeds: b diverged on iid seed 1 (last in that block, below c's 85); d has no run on
    dir0.1 (no pick) and e none anywhere: both left out. Ranks per block by hand: a 1,1,1,2; b 2,3,2,1; c 3,2,3,3:
    chi2 = 12 N / (k (k + 1)) (sum R^2 - k (k + 1)^2 / 4) = 4 (13.125 - 12) = 4.5, p = exp(-4.5 / 2) (df 2)."""
    runs = pd.concat([_runs({"a": [90.0, 90.0], "b": [80.0, None], "c": [70.0, 85.0], "d": [99.0, 99.0]}),
                      _runs({"a": [90.0, 80.0], "b": [80.0, 90.0], "c": [70.0, 70.0]}, "dir0.1")])
    cd = critical_difference(runs, unstable=["e"])
    assert cd["left_out"] == ["d", "e"] and cd["presets"] == ["a", "b", "c"] and cd["n"] == 4
    assert cd["mean_ranks"] == pytest.approx([1.25, 2.0, 2.75])
    assert cd["statistic"] == pytest.approx(4.5) and cd["p"] == pytest.approx(math.exp(-2.25))
    assert cd["cd"] == pytest.approx(2.3437 * math.sqrt(3 * 4 / (6 * 4)), abs=1e-3)


def test_correlation_words_say_no_detectable_correlation_where_the_interval_contains_zero():
    assert correlation_words({"lo": -0.2, "hi": 0.4}) == "no detectable correlation"
    assert correlation_words({"lo": 0.0, "hi": 0.4}) == "no detectable correlation"  # 0 inside, at the edge
    assert correlation_words({"lo": 0.1, "hi": 0.4}) == "positive correlation"
    assert correlation_words({"lo": -0.5, "hi": -0.1}) == "negative correlation"
    assert correlation_words({"lo": math.nan, "hi": math.nan}) == "undefined"


def test_mean_ranks_put_the_methods_ranked_everywhere_first():
    s = pd.DataFrame({"partition": ["iid", "dir", "iid", "dir", "iid", "dir"], "preset": list("aabbcc"),
                      "rank": [1.0, math.nan, 2.0, 3.0, 3.0, 2.0]})
    assert list(mean_ranks(s)["preset"]) == ["b", "c", "a"]  # a ranks first on iid but is unranked on dir


def test_the_declared_statistics_are_read_with_the_protocols_defaults():
    assert ranking.rules(None) == {**ranking.DEFAULTS}
    assert ranking.rules({"alpha": 0.05})["interval"] == 0.95 and ranking.DEFAULTS["power"] == 0.8


def test_partition_agreement_is_kendall_tau_over_the_ranked_means():
    """iid order m1 < m2 < m3 < m4; dir0.1 order m2 < m3 < m1 < m4: discordant pairs (m1, m2), (m1, m3), so tau =
    (4 - 2) / 6; m5 has no completed seed on dir0.1, so it is not ranked there and stays out (n = 4)."""
    from fedflat.results.leaderboard.ranking import partition_agreement

    iid = {f"m{i + 1}": [80.0 + i, 81.0 + i] for i in range(5)}
    dirs = {f"m{i + 1}": [v, v + 1.0] for i, v in enumerate([3.0, 1.0, 2.0, 4.0])} | {"m5": [None, None]}
    s = summarise(pd.concat([_runs(iid), _runs(dirs, "dir0.1")]))
    (c,) = partition_agreement(s)
    assert (c["a"], c["b"], c["n"]) == ("iid", "dir0.1", 4) and c["value"] == pytest.approx(2 / 6)
    assert c["lo"] <= c["value"] <= c["hi"]
