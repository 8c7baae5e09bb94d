"""The Table I direction verdicts (results/papers/protocol_direction.py): ordering beyond the pooled seed std, magnitude within
±25 % of the paper's ratio, at the last round; λ_max·η per lr from the lr_sharpness table."""
import math

import pandas as pd
import pytest

from fedflat.results.papers.protocol_direction import lr_products, verdicts

PAPER = 17.04 / 7.56


def _long(cells):
    """cells: {(protocol, statistic): {round: (iid mean, iid std, dir mean, dir std)}} -> frames()' long frame."""
    rows = []
    for (protocol, stat), by_round in cells.items():
        for t, (im, isd, dm, dsd) in by_round.items():
            base = {"protocol": protocol, "statistic": stat, "round": t, "seeds": 3, "scale": "paper"}
            rows += [{**base, "partition": "IID", "mean": im, "std": isd, "published": 7.56},
                     {**base, "partition": "Dir(0.01)", "mean": dm, "std": dsd, "published": 17.04},
                     {**base, "partition": "Dir(0.01) / IID", "mean": dm / im, "std": math.nan, "seeds": None,
                      "published": PAPER}]
    return pd.DataFrame(rows)


def test_verdicts_read_the_last_round_with_the_tie_band_and_the_tolerance():
    long = _long({("train", "value"): {50: (5, 1, 4, 1), 300: (10, 1, 22, 1)},   # 2.2x: both
                  ("clients", "mean"): {50: (5, 1, 9, 1), 300: (10, 5, 13, 5)},  # +3 < pooled 5: neither
                  ("clients", "max"): {300: (10, 0.5, 40, 0.5)},                 # 4x: ordered, too large
                  ("test", "value"): {300: (10, 1, 7, 1)}})                      # reversed
    v = {(r["protocol"], r["statistic"]): r for r in verdicts(long)}
    assert all(r["round"] == 300 for r in v.values())
    t = v[("train", "value")]
    assert (t["ordering"], t["magnitude"], t["reproduces"]) == (True, True, True)
    assert t["ratio"] == pytest.approx(2.2) and t["paper"] == pytest.approx(PAPER) and t["ratios"] == {50: 0.8, 300: 2.2}
    assert (v[("clients", "mean")]["ordering"], v[("clients", "mean")]["magnitude"]) == (False, False)
    assert (v[("clients", "max")]["ordering"], v[("clients", "max")]["magnitude"],
            v[("clients", "max")]["reproduces"]) == (True, False, False)
    assert v[("test", "value")]["ordering"] is False


def test_edges_of_the_rule():
    """A difference equal to the pooled std is a tie; a ratio 25 % off the paper's still counts, 26 % does not."""
    pooled = math.sqrt((2.0 ** 2 + 1.0 ** 2) / 2)
    long = _long({("train", "value"): {300: (10, 1, 10 + pooled, 2)}})
    assert verdicts(long)[0]["ordering"] is False
    for factor, ok in ((1.25, True), (0.75, True), (1.26, False), (0.74, False)):
        long = _long({("train", "value"): {300: (10, 0.1, 10 * PAPER * factor, 0.1)}})
        assert verdicts(long)[0]["magnitude"] is ok, factor


def test_no_published_ratio_gives_no_magnitude_verdict():
    long = _long({("train", "value"): {300: (10, 1, 22, 1)}})
    long["published"] = math.nan
    r = verdicts(long)[0]
    assert r["ordering"] is True and r["magnitude"] is None and r["reproduces"] is None


def test_lr_products_per_seed():
    long = pd.DataFrame([
        {"row": "η = 0.01", "group": "IID", "metric": "file:hessian_r300_train.json:lambda_max", "per_seed": "100;120;140"},
        {"row": "η = 0.5", "group": "IID", "metric": "file:hessian_r300_train.json:lambda_max", "per_seed": "3;4;5"},
        {"row": "η = 0.5", "group": "IID", "metric": "acc", "per_seed": "0.8;0.8;0.8"},
        {"row": "η = 0.5", "group": "Dir(0.01)", "metric": "file:hessian_r300_train.json:lambda_max", "per_seed": ";;",
         "diverged": 3}])
    rows = lr_products(long, {"η = 0.01": 0.01, "η = 0.5": 0.5})
    assert [(r["eta"], r["seeds"]) for r in rows] == [(0.01, 3), (0.5, 3), (0.5, 0)] and rows[2]["diverged"] == 3
    assert rows[0]["lambda_max"] == pytest.approx((120, 20)) and rows[0]["product"] == pytest.approx((1.2, 0.2))
    assert rows[1]["product_range"] == pytest.approx((1.5, 2.5))


def test_blocks_render_from_the_evidence_alone(tmp_path):
    """The page blocks read the study's committed tables (no run directories): pending without them, the verdict
    sentence and tables with them."""
    from pathlib import Path

    from fedflat.results.papers.protocol_direction import STUDY, block, lr_block
    from fedflat.evidence.pages import Context

    ctx = Context(root=tmp_path, evidence_root=Path("ev"), figures_root=Path("figs"))
    assert block(ctx).startswith("Not in the committed evidence yet") and lr_block(ctx).startswith("Not in")
    tables = tmp_path / "ev" / STUDY / "tables"
    tables.mkdir(parents=True)
    lmax = _long({("train", "value"): {300: (10, 1, 22, 1)}, ("test", "value"): {300: (10, 1, 7, 1)}})
    trace = lmax.assign(published=math.nan)
    for name, frame in (("table1_direction_lmax", lmax), ("table1_direction_trace", trace)):
        frame.to_csv(tables / f"{name}.csv", index=False)
        (tables / f"{name}.md").write_text(f"# {name}\n\n| a |\n|---|\n| 1 |\n")
    ctx = Context(root=tmp_path, evidence_root=Path("ev"), figures_root=Path("figs"))
    text = block(ctx)
    assert text.startswith("λ_max at round 300: 1 of 2 protocol statistics give the paper's ordering")
    assert "1 also gives its magnitude" in text and "(a) global model, training data" in text
    assert "#### table1_direction_trace" in text and "\n# " not in text
