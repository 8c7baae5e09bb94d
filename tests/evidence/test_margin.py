"""FedSynSAM's margin over FedSAM per block (fedflat.evidence.margin): the sign, the pooled std, and the wiring of
the catalog's cells and published values."""
from pathlib import Path

import pandas as pd
import pytest

from fedflat.evidence import margin
from fedflat.evidence.atlas import paper_study
from fedflat.evidence.compare import beyond_spread
from fedflat.papers.kinds import table_cells

REPO = Path(__file__).resolve().parents[2]


def test_the_margin_is_the_method_minus_the_baseline_against_their_pooled_seed_std():
    # sds 2*sqrt(2) and 0 (ddof 1) pool to 2: a 3-point margin appears, its mirror reverses, half a point does not
    m, pooled, v = beyond_spread([80.0, 84.0], [79.0, 79.0])
    assert m == pytest.approx(3.0) and pooled == pytest.approx(2.0) and v == "appears"
    assert beyond_spread([79.0, 79.0], [80.0, 84.0])[2] == "reversed"
    assert beyond_spread([80.0, 82.0], [80.5, 80.5])[2] == "within the seed spread"


def test_block_rows_read_the_catalogs_cells_and_published_margin():
    study = paper_study("fedsynsam", REPO / "config/papers")
    name = margin.TABLES["A"]
    rows, cols, grid = table_cells(study, name, study.tables[name])
    by_label = {r["label"]: line for r, line in zip(rows, grid)}
    recs = []
    # first column: FedSynSAM 2 points above FedSAM on every seed; second: FedSAM above; third: one diverged seed
    for j, (syn, sam) in enumerate(((82.0, 80.0), (79.0, 81.0), (None, 80.0))):
        for label, acc in (("FedSynSAM", syn), ("FedSAM", sam)):
            for k, (rid, _) in enumerate(by_label[label][j]):
                ok = acc is not None or k > 0
                recs.append({"run_id": rid, "status": "completed" if ok else "diverged",
                             "final_acc": (acc or 81.0) + 0.1 * k if ok else float("nan")})
    out = margin.block_rows(study, pd.DataFrame(recs), name)
    assert [r["column"] for r in out] == [c["group"] for c in cols]
    assert out[0]["paper"] == pytest.approx(84.04 - 82.93) and out[0]["ours"] == pytest.approx(2.0)
    assert [r["verdict"] for r in out] == ["appears", "reversed", None, None]
    assert out[2]["diverged"] == 1 and out[3]["ours"] != out[3]["ours"]  # the fourth column has no runs: NaN
    text = margin.render({"A": out, "B": margin.block_rows(study, pd.DataFrame(recs), margin.TABLES["B"])})
    assert "block A: appears in 1 of 2 columns; block B not settled yet" in text
    assert "| A | FMNIST Q4 | +1.11 | +2.00 | 0.10 | appears |" in text and "1 seed(s) diverged" in text


def _grid(acc, block="A", family="q4"):
    """Stage-L records of FedSynSAM and FedSAM, lrs 0.05/0.1/0.5, seeds 0-1 (acc None = diverged)."""
    rows = []
    for m in ("FedSynSAM", "FedSAM"):
        for lr in (0.05, 0.1, 0.5):
            for s in (0, 1):
                a = acc(m, lr, s)
                rows.append({"experiments": f"lr_{block}_{family}", "label": m, "lr": lr, "seed": s,
                             "hparams": '{"rho": 0.05}',
                             "status": "completed" if a is not None else "diverged",
                             "last10_acc": float("nan") if a is None else a})
    return pd.DataFrame(rows)


RHO = {("A", "q4", "FedSynSAM"): {"0.05"}, ("A", "q4", "FedSAM"): {"0.05"}}  # the catalog's radii


def test_the_picks_explain_a_margin_only_where_it_appears_at_the_picks_and_not_at_the_shared_lr():
    # at lr 0.1 both reach 80 (no margin); FedSynSAM's pick 0.5 reaches 83; FedSAM ties 0.05 and 0.1 (picks 0.05)
    def acc(m, lr, s):
        return {("FedSynSAM", 0.5): 83.0, ("FedSAM", 0.5): 70.0}.get((m, lr), 80.0) + 0.1 * s
    r = margin.lr_rows(_grid(acc), RHO)
    assert len(r) == 1 and r[0]["picks"] == [0.5, 0.05]
    assert r[0]["at_shared"][2] == "within the seed spread" and r[0]["at_picks"][0] == pytest.approx(3.0)
    assert margin.explained(r[0]) and "explain a margin in 1 of 1" in margin.render_lr(r)
    # the same picks, but FedSynSAM is already 3 points ahead at lr 0.1: the picks do not explain the margin
    ahead = margin.lr_rows(_grid(lambda m, lr, s: acc(m, lr, s) + (3.0 if (m, lr) == ("FedSynSAM", 0.1) else 0)), RHO)
    assert ahead[0]["at_shared"][2] == "appears" and not margin.explained(ahead[0])
    # the baseline ahead at its pick: reversed, not explained; an incomplete grid: no row
    behind = margin.lr_rows(_grid(lambda m, lr, s: 90.0 if (m, lr) == ("FedSAM", 0.05) else acc(m, lr, s)), RHO)
    assert behind[0]["at_picks"][2] == "reversed" and not margin.explained(behind[0])
    assert margin.lr_rows(_grid(acc).iloc[:-1], RHO) == []


def test_a_grid_at_a_radius_the_catalog_no_longer_runs_explains_nothing():
    # FedSAM's grid ran at 0.05, but the catalog has moved it to 0.01: that (block, family) waits for a new grid
    stale = {**RHO, ("A", "q4", "FedSAM"): {"0.01"}}
    assert margin.lr_rows(_grid(lambda m, lr, s: 80.0 + s), stale) == []
    assert len(margin.lr_rows(_grid(lambda m, lr, s: 80.0 + s), RHO)) == 1
