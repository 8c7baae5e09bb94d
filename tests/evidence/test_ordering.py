"""Table I's ordering (i) (fedflat.evidence.ordering): each compressed row against its partition's uncompressed row,
per protocol, and whether the paper's order holds."""
from pathlib import Path

import pandas as pd

from fedflat.evidence import ordering
from fedflat.evidence.atlas import paper_study
from fedflat.papers.kinds import table_cells

REPO = Path(__file__).resolve().parents[2]


def _runs(study, value):
    """One record per run of the table: λ_max under both protocols = value(row label, column index, seed)."""
    rows, cols, grid = table_cells(study, ordering.TABLE, study.tables[ordering.TABLE])
    recs = {}
    for r, line in zip(rows, grid):
        for j, cell in enumerate(line):
            for k, (rid, _) in enumerate(cell):
                rec = recs.setdefault(rid, {"run_id": rid, "status": "completed"})
                col = "lambda_max_clients_mean" if j == 0 else "lambda_max"
                rec[col] = value(r["label"], j, k)
    return pd.DataFrame(list(recs.values()))


def test_compression_rows_against_the_uncompressed_row_and_the_papers_order():
    study = paper_study("fedsynsam", REPO / "config/papers")
    paper = {"IID w/o compression": 7.56, "IID Q8": 8.36, "IID Top-k 0.25": 8.5, "IID Q4": 8.82,
             "Dir(0.01) w/o compression": 17.04, "Dir(0.01) Q8": 17.78}
    # protocol (b): the paper's values + 0.01 * seed (the order holds, every row sharper than its baseline by far
    # more than the seed std); protocol (a): the mirror image (every compressed row flatter)
    found = ordering.rows(study, _runs(study, lambda label, j, k: (paper[label] if j == 0 else 30 - paper[label])
                                       + 0.01 * k))
    b = [r for r in found if r["protocol"].startswith("(b)")]
    a = [r for r in found if r["protocol"].startswith("(a)")]
    assert {r["row"] for r in b} == {"IID Q8", "IID Top-k 0.25", "IID Q4", "Dir(0.01) Q8"}
    assert all(r["verdict"] == "appears" for r in b) and all(r["verdict"] == "reversed" for r in a)
    iid_q4 = next(r for r in b if r["row"] == "IID Q4")
    assert abs(iid_q4["paper"] - (8.82 - 7.56)) < 1e-9 and abs(iid_q4["ours"] - (8.82 - 7.56)) < 1e-9
    assert ordering.paper_order_holds([r for r in b if r["partition"] == "IID"]) is True
    assert ordering.paper_order_holds([r for r in a if r["partition"] == "IID"]) is False
    text = ordering.render(found)
    assert "(b) clients' data, mean, IID: compression sharper in 3 of 3 rows; the paper's order holds" in text
    assert "| (a) union of the training data | IID Q4 | +1.26 | -1.26 | 0.01 | reversed |" in text


def test_a_row_out_of_the_papers_order_breaks_it_and_missing_runs_leave_it_unsettled():
    study = paper_study("fedsynsam", REPO / "config/papers")
    swapped = {"IID w/o compression": 7.0, "IID Q8": 9.0, "IID Top-k 0.25": 8.0, "IID Q4": 10.0,
               "Dir(0.01) w/o compression": 17.0, "Dir(0.01) Q8": 18.0}
    found = ordering.rows(study, _runs(study, lambda label, j, k: swapped[label] + 0.01 * k))
    iid = [r for r in found if r["protocol"].startswith("(b)") and r["partition"] == "IID"]
    assert all(r["verdict"] == "appears" for r in iid) and ordering.paper_order_holds(iid) is False
    runs = _runs(study, lambda label, j, k: swapped[label])
    partial = runs.iloc[1:]  # one run missing: its cells are not settled
    assert any(r["verdict"] is None for r in ordering.rows(study, partial))
    assert ordering.render(ordering.rows(study, runs.iloc[0:0].reindex(columns=runs.columns))) == ordering.PENDING


def test_below_the_edge_of_stability_q4_against_uncompressed_from_the_tables_per_seed_values():
    def line(row, metric, seeds, diverged=0):
        return {"row": row, "metric": metric, "per_seed": ";".join(map(str, seeds)), "n_seeds": 3, "diverged": diverged}
    b, a = list(ordering.PROTOCOL_NAMES)
    frame = pd.DataFrame([
        line("η = 0.01, w/o compression", b, [60.0, 61.0, 62.0]), line("η = 0.01, Q4", b, [66.0, 67.0, 68.0]),
        line("η = 0.01, w/o compression", a, [60.0, 61.0, 62.0]), line("η = 0.01, Q4", a, [59.0, 60.0, 61.0])])
    got = {r["protocol"]: r["result"] for r in ordering.low_lr_rows(frame)}
    assert got[ordering.PROTOCOL_NAMES[b]][0] == 6.0 and got[ordering.PROTOCOL_NAMES[b]][2] == "appears"
    assert got[ordering.PROTOCOL_NAMES[a]][2] == "within the seed spread"  # -1 against a pooled std of 1
    lost = frame.copy()
    lost.loc[1, "diverged"] = 1
    assert ordering.low_lr_rows(lost)[0]["result"] is None
