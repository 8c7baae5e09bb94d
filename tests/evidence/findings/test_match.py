"""Record filters, cells and the paper's values: a filter reads record fields (JSON settings by key, experiment
membership, null = absent), a cell counts a diverged seed and refuses two records of one seed."""
import math

import pandas as pd
import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.findings.match import cell, cell_text, complete, mask, mean, published
from fedflat.evidence.records import COLUMNS

from .helpers import finding, record, write_runs


def _frame(rows):
    return pd.DataFrame(rows, columns=list(COLUMNS))


def test_a_filter_reads_fields_json_settings_and_experiment_membership():
    runs = _frame([record(experiment="a;b", hparams='{"rho": 0.05}', uplink='{"kind": "topk", "k": 0.1}'),
                   record(experiment="b", hparams='{"rho": 0.5}', uplink='{"kind": "topk", "k": 0.1, '
                                                                     '"error_feedback": true}', lr="0.1"),
                   record(experiment="c", lr=0.05)])
    assert mask(runs, {"experiment": "b"}).tolist() == [True, True, False]
    assert mask(runs, {"experiment": ["a", "c"]}).tolist() == [True, False, True]
    assert mask(runs, {"hparams": {"rho": 0.5}}).tolist() == [False, True, False]
    assert mask(runs, {"uplink": {"error_feedback": None, "k": 0.1}}).tolist() == [True, False, False]  # null: absent
    assert mask(runs, {"uplink": {"error_feedback": True}}).tolist() == [False, True, False]
    assert mask(runs, {"lr": 0.1}).tolist() == [True, True, False]  # numbers compare as numbers
    assert mask(runs, {"lr": [0.05, 0.5]}).tolist() == [False, False, True]
    with pytest.raises(ConfigError, match="where.colour: no such record field"):
        mask(runs, {"colour": "red"})


def test_a_cell_counts_completed_and_diverged_seeds_and_refuses_two_records_of_one_seed():
    runs = _frame([record(seed=0, acc=80.0), record(seed=1, acc=None), record(seed=2, acc=70.0)])
    c = cell(runs, {}, "last10_acc", (0, 1))
    assert (c["acc"], c["diverged"], c["seeds"]) == ([80.0], 1, 2)
    assert mean(c) is None and complete(c) and cell_text(c) == "1/2 seeds diverged (completed: 80.00)"
    ok = cell(runs, {}, "last10_acc", (0, 2))
    assert mean(ok) == pytest.approx(75.0) and cell_text(ok) == "75.00"
    half = cell(runs, {}, "last10_acc", (0, 3))
    assert not complete(half) and mean(half) is None and cell_text(half) == "1 of 2 seeds: 80.00"
    with pytest.raises(ConfigError, match="2 records share a seed"):
        cell(_frame([record(seed=0, lr=0.1), record(seed=0, lr=0.5), record(seed=0, lr=1)]), {}, "last10_acc", (0,))


def test_the_paper_s_value_is_read_from_the_catalog_table_by_row_and_column_group(tmp_path):
    ctx = write_runs(tmp_path, [])
    (tmp_path / "config/papers").mkdir()
    (tmp_path / "config/papers/cat.yaml").write_text(
        "tables:\n  t:\n    columns: [{group: Q4}, {group: Q8}]\n    published: {FedAvg: ['81.31 ± 0.14', 79.5]}\n"
        "pending_tables:\n  h:\n    columns: [{group: a}, {group: b}]\n    published: {FedAvg: [null, 7.56]}\n")
    f = finding(kind="ordering", catalog="cat", treatment={"preset": "a"}, baseline={"preset": "b"})
    assert published(ctx, f, {"table": "t", "row": "FedAvg", "column": "Q8"}) == 79.5
    assert published(ctx, f, {"table": "t", "row": "FedAvg", "column": "Q4"}) == pytest.approx(81.31)
    assert published(ctx, f, {"table": "h", "row": "FedAvg", "column": "b"}) == 7.56  # a pending table
    for bad, says in (({"table": "x"}, "paper.table: 'x' is not a table"), ({"row": "FedSAM"}, "paper.row: 'FedSAM'"),
                      ({"column": "Q2"}, "paper.column: 'Q2' is none of")):
        with pytest.raises(ConfigError, match=says):
            published(ctx, f, {"table": "t", "row": "FedAvg", "column": "Q4", **bad})
    assert not math.isnan(published(ctx, f, {"table": "t", "row": "FedAvg", "column": "Q4"}))
