"""The Top-k reading test (fedflat.evidence.topk_reading): a cell supports the one reading within 2 points of the
paper's cell, the majority of cells decides, a tie keeps the literal reading, and nothing is decided early."""
import pandas as pd

from fedflat.evidence.topk_reading import COLUMNS, ROWS, decide, supports, tkread_cells

PAPER = {m: [75.0, 80.0] for m in ROWS}
NEAR = {"k10": 74.5, "k25": 79.5}  # within 2 points of PAPER's two columns


def _runs(score):
    """runs.csv rows of every tkread_A cell, seeds 0-1: score(method, column, mode) -> % or None (diverged)."""
    rows = []
    for m in ROWS:
        for key in COLUMNS:
            for mode in ("off", "on"):
                acc = score(m, key, mode)
                for s in (0, 1):
                    rows.append({"experiments": f"x;tkread_A_{key}_{mode}", "label": m, "seed": s,
                                 "status": "completed" if acc is not None else "diverged",
                                 "last10_acc": float("nan") if acc is None else acc + (0.2 if s else -0.2)})
    return pd.DataFrame(rows)


def _cell(acc):
    return {"acc": [acc - 0.2, acc + 0.2], "diverged": 0, "seeds": 2}


def test_a_cell_supports_only_the_reading_that_alone_lies_within_two_points_either_side():
    assert supports(_cell(60.0), _cell(74.0), 75.0) == "on"
    assert supports(_cell(60.0), _cell(78.0), 75.0) is None  # above the paper by more than 2: not within
    assert supports(_cell(76.0), _cell(74.0), 75.0) is None  # both within: counts for neither
    assert supports(_cell(76.5), _cell(90.0), 75.0) == "off"
    assert supports({"acc": [74.0], "diverged": 1, "seeds": 2}, _cell(60.0), 75.0) is None  # diverged never within


def test_the_majority_of_cells_decides_and_a_tie_keeps_the_literal_reading():
    on_wins = decide(tkread_cells(_runs(lambda m, k, mode: NEAR[k] if mode == "on" else 50.0)), PAPER)
    assert on_wins == {"count": {"off": 0, "on": 18}, "reading": "on"}
    # one column within, the other above the paper by more than 2: 9 cells
    assert decide(tkread_cells(_runs(lambda m, k, mode: 74.5 if mode == "on" else 50.0)), PAPER)["count"]["on"] == 9
    # FedAvg's two cells support the literal reading, FedSAM's two error feedback: a tie
    def tie(m, k, mode):
        if m == "FedAvg":
            return NEAR[k] if mode == "off" else 40.0
        if m == "FedSAM":
            return NEAR[k] if mode == "on" else 40.0
        return 10.0
    assert decide(tkread_cells(_runs(tie)), PAPER) == {"count": {"off": 2, "on": 2}, "reading": "off"}


def test_nothing_is_decided_while_a_seed_is_missing():
    runs = _runs(lambda m, k, mode: 74.5 if mode == "on" else 50.0)
    assert decide(tkread_cells(runs.iloc[:-1]), PAPER)["reading"] is None
