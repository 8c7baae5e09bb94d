"""The decision kinds on hand-made records: each verdict changes when a side, a threshold, the seed spread, a
diverged seed or the Holm adjustment were wrong."""
import math

import pytest

from fedflat.evidence.findings.decide import evaluate
from fedflat.evidence.findings.match import mean

from .helpers import finding, grid, record, write_runs

PAPER = 80.0


def _closes(tmp_path, accs, fid="f", **kw):
    """One unit (paper 80), baseline lr 0.05, candidate lr 0.1: the unit's verdict."""
    ctx = write_runs(tmp_path, grid(accs))
    spec = {"kind": "closes_shortfall", "units": [{"name": "m", "where": {"preset": "fedavg"}}],
            "paper": {"value": PAPER}, "candidates": {"field": "lr", "values": [0.05, 0.1]}, "baseline": 0.05, **kw}
    return evaluate(ctx, finding(id=fid, **spec))["units"][0]["verdict"]


@pytest.mark.parametrize("cand, side, closes", [
    (78.0, "within", True), (77.99, "within", False), (82.0, "within", True), (83.0, "within", False),
    (83.0, "not_below", True), (77.99, "not_below", False), (75.0, "not_above", True), (82.01, "not_above", False)])
def test_a_candidate_closes_the_gap_only_on_its_declared_side_of_the_tolerance(tmp_path, cand, side, closes):
    verdict = _closes(tmp_path, {0.05: 60.0, 0.1: cand}, closes=side)  # equal seeds: no spread to flip it
    assert verdict == ("measured: 0.1 closes the gap" if closes else "unexplained: no candidate within 2 points")


def test_a_baseline_that_needs_no_explaining_and_a_missing_or_diverged_seed(tmp_path):
    assert _closes(tmp_path / "a", {0.05: 79.0, 0.1: 80.0}).startswith("no gap to explain")
    assert _closes(tmp_path / "b", {0.05: 60.0, 0.1: [80.0, None]}) == "unexplained: no candidate within 2 points"
    ctx = write_runs(tmp_path / "c", grid({0.05: 60.0, 0.1: 80.0})[:-1])  # lr 0.1 lacks seed 1
    f = finding(kind="closes_shortfall", units=[{"where": {"preset": "fedavg"}}], paper={"value": PAPER},
                candidates={"field": "lr", "values": [0.05, 0.1]}, baseline=0.05)
    assert evaluate(ctx, f)["units"][0]["verdict"] == "waits for its runs"


def test_a_rule_written_after_the_finals_labels_its_cause_post_hoc(tmp_path):
    assert _closes(tmp_path, {0.05: 60.0, 0.1: 80.0}, fixed="post_hoc") == "post hoc: 0.1 closes the gap"


def test_a_verdict_one_seed_std_would_flip_is_inconclusive(tmp_path):
    # seeds 77 and 81: mean 79 lies within 2 of 80, mean - sd (76.2) does not
    assert _closes(tmp_path / "a", {0.05: 60.0, 0.1: [77.0, 81.0]}).startswith("inconclusive (seed spread)")
    assert _closes(tmp_path / "c", {0.05: 60.0, 0.1: [79.5, 80.5]}) == "measured: 0.1 closes the gap"
    # the baseline's own spread too: 76 and 80 (mean 78, within 2 of 80; mean - sd not) leave no gap to judge
    assert _closes(tmp_path / "d", {0.05: [76.0, 80.0], 0.1: 80.0}).startswith("inconclusive (seed spread)")


def test_a_candidate_past_the_paper_on_the_far_side_overshoots_and_closes_nothing(tmp_path):
    """words.overshoots (the v3 cause rules' wording): the baseline is 20 below the paper, the candidate 5 above it."""
    words = {"overshoots": "not closing: {overshooting} overshoots", "closes": "{label}: {closing} closes it"}
    assert _closes(tmp_path / "a", {0.05: 60.0, 0.1: 85.0}, words=words) == "not closing: 0.1 overshoots"
    assert _closes(tmp_path / "b", {0.05: 60.0, 0.1: 81.0}, words=words) == "measured: 0.1 closes it"
    # without words.overshoots, an overshooting candidate is one that does not close the gap
    assert _closes(tmp_path / "c", {0.05: 60.0, 0.1: 85.0}) == "unexplained: no candidate within 2 points"


def _order(tmp_path, a, b, fid="f", **kw):
    rows = [record("fedsam", s, x) for s, x in enumerate(a)] + [record("fedavg", s, x) for s, x in enumerate(b)]
    ctx = write_runs(tmp_path, rows)
    spec = {"kind": "ordering", "seeds": list(range(len(a))), "units": [{"name": "u"}],
            "treatment": {"preset": "fedsam"}, "baseline": {"preset": "fedavg"}, **kw}
    return ctx, finding(id=fid, **spec)


def test_an_ordering_is_the_paired_test_with_the_paper_s_effect_optional(tmp_path):
    ctx, f = _order(tmp_path, [81.0, 82.1, 80.9, 81.6], [80.0, 81.0, 80.0, 80.5])  # +1.0 +- 0.1 on every seed
    r = evaluate(ctx, f)["units"][0]
    assert r["verdict"] == "supported" and r["p_holm"] < 0.01 and r["ours"] == pytest.approx(1.025)


def test_a_paired_claim_is_supported_contradicted_or_inconclusive_against_the_paper_s_effect(tmp_path):
    base = [80.0, 81.0, 79.0, 80.5, 79.5]

    def claim(d, paper, where, **kw):
        ctx, f = _order(tmp_path / where, [b + x for b, x in zip(base, d)], base, kind="paired_claim",
                        paper={"value": paper}, **kw)
        return evaluate(ctx, f)["units"][0]
    r = claim([2.0, 2.1, 1.9, 2.05, 1.95], 2.0, "a")
    assert r["verdict"] == "supported" and r["ours"] == pytest.approx(2.0) and r["p_holm"] < 0.001
    assert r["lo"] < 2.0 < r["hi"] and 0 < r["detectable"] < 0.5
    assert claim([0.0, 0.1, -0.1, 0.05, -0.05], 3.0, "b")["verdict"] == "contradicted"  # 3 lies outside the interval
    assert claim([2.0, -1.5, 3.0, -2.0, 1.0], 1.0, "c")["verdict"] == "inconclusive"  # 0 and 1 both inside
    assert claim([-2.0, -2.1, -1.9, -2.05, -1.95], 2.0, "d")["verdict"] == "contradicted"  # the opposite side
    # not significant and short of the paper's margin: the interval's paper-side bound (about 1.1) lies below 2
    assert claim([1.0, 1.1, 0.9, 1.05, 0.95], 2.0, "e", alpha=1e-9)["verdict"] == "contradicted"
    # past the paper's margin but not significant after Holm: inconclusive, said so (not contradicted)
    wide = claim([2.0, 2.1, 1.9, 2.05, 1.95], 0.5, "f", alpha=1e-9)
    assert wide["lo"] > 0.5 and wide["verdict"] == "inconclusive (larger than the paper's margin, not significant after Holm)"
    # a negative paper margin mirrors every rule: past it (more negative) inconclusive, short of it contradicted
    assert claim([-2.0, -2.1, -1.9, -2.05, -1.95], -0.5, "g", alpha=1e-9)["verdict"].startswith("inconclusive (larger")
    assert claim([-1.0, -1.1, -0.9, -1.05, -0.95], -2.0, "h", alpha=1e-9)["verdict"] == "contradicted"


def test_a_diverged_seed_is_a_failure_of_its_arm(tmp_path):
    base = [80.0, 81.0, 79.0]
    ctx, f = _order(tmp_path / "a", [82.0, None, 81.0], base, kind="paired_claim", paper={"value": 2.0})
    assert evaluate(ctx, f)["units"][0]["verdict"] == "contradicted (the treatment failed on seed 1)"
    ctx, f = _order(tmp_path / "b", [82.0, 83.0, 81.0], [80.0, None, 79.0], kind="paired_claim", paper={"value": 2.0})
    assert evaluate(ctx, f)["units"][0]["verdict"] == "inconclusive (no pair: the baseline failed on seed 1)"


def test_pairs_only_reads_a_claim_by_the_seeds_both_arms_completed_and_a_post_hoc_rule_says_so(tmp_path):
    """The same failed treatment seed: the registered rule contradicts the claim; `failures: pairs_only` decides by
    the other four pairs (supported) and names the seed it left out; a rule fixed after the finals says post hoc."""
    treat, base = [82.0, None, 81.0, 82.5, 81.6], [80.0, 81.0, 79.0, 80.5, 79.5]
    ctx, f = _order(tmp_path / "a", treat, base, kind="paired_claim", paper={"value": 2.0})
    assert evaluate(ctx, f)["units"][0]["verdict"] == "contradicted (the treatment failed on seed 1)"
    ctx, f = _order(tmp_path / "b", treat, base, kind="paired_claim", paper={"value": 2.0}, failures="pairs_only")
    r = evaluate(ctx, f)["units"][0]
    assert r["verdict"] == "supported (seed 1 left out: one arm failed)" and r["n"] == 4
    ctx, f = _order(tmp_path / "c", treat, base, kind="paired_claim", paper={"value": 2.0}, failures="pairs_only",
                    fixed="post_hoc")
    assert evaluate(ctx, f)["units"][0]["verdict"] == "post hoc: supported (seed 1 left out: one arm failed)"
    # one pair left: no interval, inconclusive whatever the difference; both failed seeds named
    ctx, f = _order(tmp_path / "d", [82.0, None, 81.0], [80.0, 81.0, None], kind="paired_claim", paper={"value": 2.0},
                    failures="pairs_only")
    assert evaluate(ctx, f)["units"][0]["verdict"] == "inconclusive (seeds 1, 2 left out: one arm failed)"


def test_holm_adjusts_the_p_values_within_a_family_across_findings(tmp_path):
    rows = [record("fedsam", s, 80.0 + d) for s, d in enumerate([1.0, 1.3, 0.8, 1.1])]
    rows += [record("fedavg", s, 80.0) for s in range(4)]
    rows += [record("fedlesam", s, 80.0 + d) for s, d in enumerate([0.2, 0.9, -0.3, 0.6])]
    ctx = write_runs(tmp_path, rows)
    (tmp_path / "config/f.yaml").write_text(
        "findings:\n" + "".join(
            f"- {{id: {i}, question: q, kind: paired_claim, fixed: post_hoc, evidence: study, seeds: [0, 1, 2, 3],\n"
            f"   metric: last10_acc, family: fam, units: [{{name: u}}], treatment: {{preset: {p}}},\n"
            f"   baseline: {{preset: fedavg}}, paper: {{value: 1.0}}, page: {{file: p.md, block: b}}}}\n"
            for i, p in (("one", "fedsam"), ("two", "fedlesam"))))
    from fedflat.evidence.findings.declared import findings

    got = {f.id: evaluate(ctx, f)["units"][0] for f in findings(ctx)}
    raw = sorted((got[i]["p"], i) for i in got)
    assert got[raw[0][1]]["p_holm"] == pytest.approx(2 * raw[0][0])  # the smaller of two: times 2
    assert got[raw[1][1]]["p_holm"] == pytest.approx(max(2 * raw[0][0], raw[1][0]))
    assert not math.isnan(got["one"]["detectable"])


def test_a_completed_run_without_its_metric_waits_and_never_shifts_a_pair(tmp_path):
    """A final run whose Hessian job has not run yet (λ_max empty) is neither a failure nor a value: the claim waits
    and says how many runs lack the metric; the pairs are by seed, so a gap never pairs one seed's value with
    another's."""
    lam = {0: 5.0, 1: math.nan, 2: 5.4}
    rows = [record("fedsam", s, 80.0, lambda_max=lam[s]) for s in (2, 0, 1)]
    rows += [record("fedavg", s, 80.0, lambda_max=4.0 + s / 10) for s in range(3)]
    ctx = write_runs(tmp_path, rows)
    f = finding(kind="paired_claim", seeds=[0, 1, 2], metric="lambda_max", units=[{"name": "u"}],
                treatment={"preset": "fedsam"}, baseline={"preset": "fedavg"}, paper={"value": 1.0})
    r = evaluate(ctx, f)["units"][0]
    assert r["state"] == "waits", r["verdict"]
    assert r["verdict"] == "waits for its runs: 6 of 6 in `study`; 1 of them without lambda_max yet"
    a, _ = r["cells"]
    assert a["diverged"] == 0 and a["unmeasured"] == 1 and a["per_seed"] == {0: 5.0, 2: 5.4}
    assert mean(a) is None  # never the mean of the measured seeds shown as the cell's
    assert r["n"] == 2 and r["ours"] == pytest.approx(((5.0 - 4.0) + (5.4 - 4.2)) / 2)  # seed 0 with 0, 2 with 2
