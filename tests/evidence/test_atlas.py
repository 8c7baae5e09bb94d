"""The atlas counts a cell as reproduced only when every run behind it at the paper's scale is in the evidence,
compares it with the published mean, and links every gap over 2 points to its explanation."""
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from fedflat.evidence.atlas import anchor, paper_rows
from fedflat.evidence.records import COLUMNS
from fedflat.results.papers.kinds_paper import table_cells
from fedflat.pipeline.study import load_config_file, load_study

REPO = Path(__file__).resolve().parents[2]


def test_reproduced_cells_within_two_points_and_gap_links(tmp_path):
    cfg = load_config_file(REPO / "config/papers/fedsynsam.yaml")
    cfg["scale"] = "paper"
    study = load_study(cfg)
    rows, cols, grid = table_cells(study, "table1_hessian", study.tables["table1_hessian"])
    pub = study.tables["table1_hessian"]["published"]
    # the standard protocol's column (protocol (a), FedSynSAM Table I), the one with the published values
    lam_col = next(j for j, c in enumerate(cols) if c["metric"] == "file:hessian.json:lambda_max")
    records = []
    # first row: lambda_max at the published value + 1 (within 2); second row: + 5 (a gap); others absent but the third
    for i, off in ((0, 1.0), (1, 5.0)):
        target = float(str(pub[rows[i]["label"]][lam_col]).split("±")[0])
        for rid, _ in grid[i][lam_col]:
            rec = dict.fromkeys(COLUMNS)
            rec.update(run_id=rid, status="completed", lambda_max=target + off, lambda_max_clients_mean=0.0, final_acc=80.0,
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


def _catalog(tmp_path):
    """A tiny paper catalog: `block` (two rows, one Fashion-MNIST column), `whole` restating block's cells beside a
    CIFAR-10 column, `twin`, a planted verbatim duplicate of `block`, and `garbled_t`, a cell the seed text garbles."""
    import yaml

    exp = lambda d: {"datasets": [d], "models": ["mlp2"], "partitions": ["iid"], "algorithms": ["fedavg", "fedsam"],  # noqa: E731
                     "seeds": [0, 1], "training": {"num_clients": 4, "participation": 1.0, "rounds": 3}}
    pub = {"FedAvg": ["80.00 ± 0.1"], "FedSAM": ["82.00 ± 0.1"]}
    block = {"kind": "paper_table", "ref": "Table 2 (FMNIST)", "experiment": "fm", "rows": ["FedAvg", "FedSAM"],
             "columns": [{"group": "FMNIST", "experiment": "fm"}], "published": pub}
    cfg = {"study": "toy", "scale": "paper", "experiments": {"fm": exp("fmnist"), "c10": exp("cifar10")},
           "tables": {"block": block,
                      "whole": {**block, "ref": "Table 2", "columns": block["columns"] + [{"group": "C10", "experiment": "c10"}],
                                "published": {"FedAvg": ["80.00 ± 0.1", "60.0"], "FedSAM": ["82.00 ± 0.1", "61.0"]}},
                      "twin": {**block, "ref": "Table 2 (FMNIST), again"},
                      "garbled_t": {**block, "ref": "Table 8", "published": {"FedAvg": ["70.0"], "FedSAM": ["71.0"]},
                                    "garbled": {"FedSAM": ["FMNIST"]}}}}
    d = tmp_path / "config"
    d.mkdir()
    (d / "toy.yaml").write_text(yaml.safe_dump(cfg))
    return d, cfg


def test_each_published_cell_is_counted_once_and_garbled_values_never(tmp_path, monkeypatch):
    """Issue 48: the atlas counted table2_X and table2_X_fmnist's shared cells twice (222 'reproduced' where 114
    cells were re-run). Planted: a table restating another's cells, a verbatim duplicate, and a garbled value."""
    from fedflat.evidence import atlas

    config_dir, cfg = _catalog(tmp_path)
    study = load_study(cfg)
    records = []
    for rid, lab in study.experiments["fm"]:  # FedAvg 81 (within 2 of 80), FedSAM 90 (a gap against 82)
        rec = dict.fromkeys(COLUMNS)
        acc = 81.0 if lab["preset"] == "fedavg" else 90.0
        rec.update(run_id=rid, status="completed", final_acc=acc, last10_acc=acc, best_acc=acc,  # a completed record
                   hparams=json.dumps({}))  # holds its result (evidence/runs_schema.py)
        records.append(rec)
    ev = tmp_path / "evidence" / "toy"
    ev.mkdir(parents=True)
    pd.DataFrame(records, columns=list(COLUMNS)).to_csv(ev / "runs.csv", index=False)
    rows = paper_rows("toy", config_dir, tmp_path / "evidence", tmp_path / "fig")
    own = {r["target"]: r for r in rows}
    assert own["whole"]["published"] == 4 and own["twin"]["reproduced"] == 2  # each target's own view is whole
    assert own["garbled_t"]["published"] == 1 and own["garbled_t"]["garbled"] == 1
    total, per = atlas.distinct(rows)
    # distinct: FMNIST x 2 rows (block), C10 x 2 rows (whole), garbled_t's FedAvg 70.0 (another published value)
    assert total == {"published": 5, "rerun": 3, "unreachable": 2, "compared": 3, "within": 1, "garbled": 1}
    by = {r["target"]: r for r in per}
    assert by["whole"]["restates"] == {"block": 2} and by["whole"]["published"] == 2
    assert by["twin"]["restates"] == {"block": 2} and by["twin"]["published"] == 0 and not by["twin"]["gaps"]
    assert len(by["block"]["gaps"]) == 1  # a gap is listed once, where its cell is counted
    monkeypatch.setattr(atlas, "PAPERS", ("toy",))
    text = atlas.render(rows=lambda paper: rows)
    assert "| toy | 4 | 5 | 3 | 2 | 0 | 1 of 3 | 1 | 0 of 0 |" in text
    assert "| `twin` | Table 2 (FMNIST), again | 0 | 2 of `block` |" in text
    assert "reproduces" not in text and "re-run at paper scale" in text


def test_a_garbled_cell_must_name_a_row_and_column_of_its_table(tmp_path):
    import yaml

    from fedflat.core.errors import ConfigError

    config_dir, cfg = _catalog(tmp_path)
    cfg["tables"]["garbled_t"]["garbled"] = {"FedSAM": ["CIFAR"]}
    (config_dir / "toy.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="garbled.FedSAM: 'CIFAR' is not a column group"):
        paper_rows("toy", config_dir, tmp_path / "evidence", tmp_path / "fig")
