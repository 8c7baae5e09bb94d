"""The atlas counts a cell as reproduced only when every run behind it at the paper's scale is in the evidence,
compares it with the published mean, and links every gap over 2 points to its explanation."""
import json
import math
from pathlib import Path

import pandas as pd

from fedflat.evidence.atlas import anchor, paper_rows
from fedflat.evidence.records import COLUMNS
from fedflat.papers.kinds import table_cells
from fedflat.study import load_config_file, load_study

REPO = Path(__file__).resolve().parents[2]


def test_reproduced_cells_within_two_points_and_gap_links(tmp_path):
    cfg = load_config_file(REPO / "config/papers/fedsynsam.yaml")
    cfg["scale"] = "paper"
    study = load_study(cfg)
    rows, cols, grid = table_cells(study, "table1_hessian", study.tables["table1_hessian"])
    pub = study.tables["table1_hessian"]["published"]
    # the stated reading's column (protocol (b), FedSynSAM Table I), the one with the published values
    lam_col = next(j for j, c in enumerate(cols) if c["metric"] == "file:hessian_clients.json:lambda_max_mean")
    records = []
    # first row: lambda_max at the published value + 1 (within 2); second row: + 5 (a gap); others absent but the third
    for i, off in ((0, 1.0), (1, 5.0)):
        target = float(str(pub[rows[i]["label"]][lam_col]).split("±")[0])
        for rid, _ in grid[i][lam_col]:
            rec = dict.fromkeys(COLUMNS)
            rec.update(run_id=rid, status="completed", lambda_max_clients_mean=target + off, lambda_max=0.0, final_acc=80.0,
                       last10_acc=80.0, best_acc=80.0, hparams=json.dumps({}))  # a completed record holds its result
            records.append(rec)
    for rid, _ in grid[2][lam_col]:  # third row: every seed diverged, a gap whose value is NaN
        rec = dict.fromkeys(COLUMNS)
        rec.update(run_id=rid, status="diverged", hparams=json.dumps({}))
        records.append(rec)
    d = tmp_path / "fedsynsam"
    d.mkdir()
    pd.DataFrame(records, columns=list(COLUMNS)).to_csv(d / "runs.csv", index=False)
    row = next(r for r in paper_rows("fedsynsam", REPO / "config/papers", tmp_path, tmp_path / "fig")
               if r["target"] == "table1_hessian")
    assert row["reproduced"] >= 3 and row["compared"] >= 3
    assert row["within"] == row["compared"] - 2
    gap, diverged = row["gaps"]
    assert gap[0] == rows[1]["label"] and abs(gap[3] - gap[2] - 5.0) < 1e-9
    assert diverged[0] == rows[2]["label"] and math.isnan(diverged[3])  # counted against us, not left out
    assert anchor("fedsynsam", "table1_hessian") == "fedsynsam-table1-hessian"
    text = (REPO / "docs/reproduction.md").read_text()
    assert f'<a id="{anchor("fedsynsam", "table1_hessian")}"></a>' in text  # the gap link has a target


def test_a_cell_whose_hessian_is_not_measured_yet_is_not_reproduced():
    """A completed run recorded before its Hessian was measured leaves the cell unsettled: not reproduced."""
    from fedflat.evidence.compare import cell_value

    runs = pd.DataFrame([{"run_id": "a", "status": "completed", "lambda_max_clients_mean": 7.0},
                         {"run_id": "b", "status": "completed", "lambda_max_clients_mean": float("nan")},
                         {"run_id": "c", "status": "diverged", "lambda_max_clients_mean": float("nan")}])
    metric = "file:hessian_clients.json:lambda_max_mean"
    assert cell_value(runs, ["a", "c"], metric) == (7.0, 1, 2)  # a diverged seed is settled
    mean, done, settled = cell_value(runs, ["a", "b", "c"], metric)
    assert (mean, done, settled) == (7.0, 2, 2) and settled < 3
