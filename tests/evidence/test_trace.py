"""trace: the runs behind one cell, from committed evidence alone; labels by prefix; one-line errors."""
from pathlib import Path

import pandas as pd
import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.__main__ import main
from fedflat.evidence.records import COLUMNS
from fedflat.evidence.trace import trace


@pytest.fixture
def ev(tmp_path, monkeypatch):
    d = tmp_path / "results" / "evidence" / "paper"
    d.mkdir(parents=True)
    pd.DataFrame({"table": ["t2"] * 4, "row": ["FedSAM", "FedSAM", "FedSAM-D", "FedAvg"],
                  "column": ["FMNIST Q4 / acc"] * 4, "run_id": ["r1", "r2", "r3", "r4"]}).to_csv(d / "cells.csv", index=False)
    runs = pd.DataFrame({"run_id": ["r1", "r2", "r4"], "seed": [0, 1, 0], "status": "completed",
                         "final_acc": [80.0, 81.0, 70.0], "lr": 0.1, "hparams": "{}", "git_commit": "abc",
                         "data": "FMNIST held out"})
    runs["last10_acc"] = runs["best_acc"] = runs["final_acc"]
    runs.reindex(columns=list(COLUMNS)).to_csv(d / "runs.csv", index=False)  # every column of a real record
    monkeypatch.chdir(tmp_path)
    return d


def test_exact_row_and_prefix_column(ev):
    row, col, ids, found = trace("paper", "t2", "FedSAM", "fmnist q4", Path("results/evidence"))
    assert (row, col, ids) == ("FedSAM", "FMNIST Q4 / acc", ["r1", "r2"]) and list(found["seed"]) == [0, 1]


def test_ambiguous_and_unknown_labels(ev):
    with pytest.raises(ConfigError, match=r"row 'FedS' is ambiguous; candidates: 'FedSAM', 'FedSAM-D'"):
        trace("paper", "t2", "FedS", "FMNIST", Path("results/evidence"))
    with pytest.raises(ConfigError, match=r"table 't9' is not in"):
        trace("paper", "t9", "FedSAM", "x", Path("results/evidence"))
    with pytest.raises(ConfigError, match=r"no evidence for study 'nope'"):
        trace("nope", "t2", "FedSAM", "x", Path("results/evidence"))


def test_cli_prints_the_runs_and_what_is_missing(ev, capsys):
    assert main(["trace", "paper", "t2", "FedSAM-D", "FMNIST"]) == 0
    out = capsys.readouterr().out
    assert "1 runs, 0 in the evidence" in out and "not in the evidence" in out and "r3" in out
    assert main(["trace", "paper", "t2", "Fed", "FMNIST"]) == 2


def test_papers_cli_traces_too(ev, capsys):
    from fedflat.papers import main as papers_main  # `python -m fedflat.papers`, which dispatches trace to the evidence

    assert papers_main(["trace", "paper", "t2", "FedSAM", "FMNIST"]) == 0
    assert "2 runs, 2 in the evidence" in capsys.readouterr().out
