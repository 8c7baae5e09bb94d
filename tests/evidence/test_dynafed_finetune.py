"""DynaFed's fine-tuning diagnostic (fedflat.evidence.dynafed_finetune): a cause only where a grid value comes within
2 points of the paper while the catalog's value lies more than 2 above."""
import json

import pandas as pd

from fedflat.evidence.dynafed_finetune import GRID, grid_cells, verdict


def _runs(acc, block="A"):
    return pd.DataFrame([{"experiments": f"lr_A_q4;dyna_{block}_q4", "label": "DynaFed", "seed": s,
                          "status": "completed" if acc(v) is not None else "diverged",
                          "hparams": json.dumps({"dyna_lr": v, "dyna_iters": 20}),
                          "last10_acc": float("nan") if acc(v) is None else acc(v)}
                         for v in GRID for s in (0, 1)])


def test_a_value_that_brings_dynafed_to_the_paper_is_the_measured_cause():
    cells = grid_cells(_runs(lambda v: {0.00025: 83.0, 0.001: 80.0, 0.003: 75.5, 0.01: None}[v]), "A")
    assert verdict(cells, 74.42) == "measured: the fine-tuning strength (Adam lr 0.003 within 2 points)"
    # the same scores 2.5 points away from the paper's cell: none within, so not the cause
    assert verdict(cells, 73.0) == "measured: not the cause (no value of the grid within 2 points)"


def test_no_gap_when_the_catalog_value_is_near_or_below_the_paper_and_other_blocks_are_not_read():
    cells = grid_cells(_runs(lambda v: 76.0), "A")
    assert verdict(cells, 74.42).startswith("no gap to explain")
    assert grid_cells(_runs(lambda v: 76.0, block="B"), "A") == {}
    assert verdict(grid_cells(_runs(lambda v: 76.0).iloc[:-1], "A"), 74.42) == "waits for its runs"
