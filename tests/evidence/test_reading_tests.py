"""The reading tests (fedflat.evidence.reading_tests): a cell supports the one reading within 2 points of the
paper's cell, the majority of cells decides, a tie keeps the catalog's reading, nothing is decided early, and each
test reads only its own experiments."""
import pandas as pd
import pytest

from fedflat.evidence.reading_tests import MLP, ROWS, TOPK

PAPER = {m: [75.0, 80.0] for m in ROWS}
NEAR = (74.5, 79.5)  # within 2 points of PAPER's two columns


def _runs(test, score):
    """runs.csv rows of every cell of `test`, seeds 0-1: score(method, column index, mode) -> % or None (diverged)."""
    rows = []
    for m in ROWS:
        for j, key in enumerate(test.columns):
            for mode in test.modes:
                acc = score(m, j, mode)
                for s in (0, 1):
                    rows.append({"experiments": f"x;{test.name}_{key}_{mode}", "label": m, "seed": s,
                                 "status": "completed" if acc is not None else "diverged",
                                 "last10_acc": float("nan") if acc is None else acc + (0.2 if s else -0.2)})
    return pd.DataFrame(rows)


def _cell(acc):
    return {"acc": [acc - 0.2, acc + 0.2], "diverged": 0, "seeds": 2}


def test_a_cell_supports_only_the_reading_that_alone_lies_within_two_points_either_side():
    assert TOPK.supports(_cell(60.0), _cell(74.0), 75.0) == "on"
    assert TOPK.supports(_cell(60.0), _cell(78.0), 75.0) is None  # above the paper by more than 2: not within
    assert TOPK.supports(_cell(76.0), _cell(74.0), 75.0) is None  # both within: counts for neither
    assert TOPK.supports(_cell(76.5), _cell(90.0), 75.0) == "off"
    assert TOPK.supports({"acc": [74.0], "diverged": 1, "seeds": 2}, _cell(60.0), 75.0) is None  # diverged: never


@pytest.mark.parametrize("test", [TOPK, MLP], ids=lambda t: t.name)
def test_the_majority_of_cells_decides_and_a_tie_keeps_the_catalogs_reading(test):
    literal, other = test.modes
    wins = test.decide(test.cells(_runs(test, lambda m, j, mode: NEAR[j] if mode == other else 50.0)), PAPER)
    assert wins == {"count": {literal: 0, other: 18}, "reading": other}
    # one column within, the other above the paper by more than 2: 9 cells
    half = test.decide(test.cells(_runs(test, lambda m, j, mode: 74.5 if mode == other else 50.0)), PAPER)
    assert half["count"][other] == 9

    def tie(m, j, mode):  # FedAvg's two cells support the catalog's reading, FedSAM's the other
        if m in ("FedAvg", "FedSAM"):
            return NEAR[j] if mode == (literal if m == "FedAvg" else other) else 40.0
        return 10.0
    assert test.decide(test.cells(_runs(test, tie)), PAPER) == {"count": {literal: 2, other: 2}, "reading": literal}


def test_nothing_is_decided_while_a_seed_is_missing_and_a_test_reads_only_its_own_runs():
    runs = _runs(TOPK, lambda m, j, mode: NEAR[j] if mode == "on" else 50.0)
    assert TOPK.decide(TOPK.cells(runs.iloc[:-1]), PAPER)["reading"] is None
    assert MLP.cells(runs) == {}
