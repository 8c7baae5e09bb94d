"""The diagnostic rules of blocks B and C (fedflat.evidence.block_diagnostics): a reading or setting is a measured cause when it
comes within 2 points of the paper's cell (or above) while the catalog's lies more than 2 below."""
import json

import pandas as pd

from fedflat.evidence.block_diagnostics import edge_cells, edge_verdict, reading_verdict
from fedflat.evidence.block_diagnostics import _READINGS as PATTERN
from fedflat.evidence.readings import stage_cells

from .helpers import reading_rows

METHODS = ("FedGAMMA", "FedLESAM-D")


def _reading_runs(acc):
    return reading_rows(acc, METHODS, ("q4", "k25"), "readB", extra="lr2_B_q4")


def test_a_reading_that_closes_the_shortfall_is_the_measured_cause():
    cells = stage_cells(_reading_runs(lambda m, f, rd, s: {"compress": 14.0, "raw": 81.5, "error_feedback": 60.0}[rd]),
                        PATTERN, METHODS)
    assert reading_verdict(cells, "FedGAMMA", "q4", 83.34) == "measured: the reading (`raw` within 2 points)"
    # 81.5 lies 2.5 below a paper cell of 84: not within, so the reading is not the whole cause
    assert reading_verdict(cells, "FedGAMMA", "q4", 84.0).endswith("not the whole cause (no reading within 2 points)")
    # a method whose readings are one computation: no reading can be its cause, whatever the scores
    assert reading_verdict(cells, "FedGAMMA", "q4", 83.34, coincide=True).startswith("measured: not the cause")


def test_a_score_far_above_the_paper_closes_nothing_and_a_catalog_reading_near_the_paper_leaves_nothing_to_explain():
    cells = stage_cells(_reading_runs(lambda m, f, rd, s: 70.0 if rd == "compress" else 95.0), PATTERN, METHODS)
    assert reading_verdict(cells, "FedLESAM-D", "k25", 79.22) == (
        "not closing: `raw` and `error_feedback` overshoot the paper by more than 2 points, no reading lands within 2")
    assert reading_verdict(cells, "FedLESAM-D", "k25", 94.0) == \
        "measured: the reading (`raw` and `error_feedback` within 2 points)"  # 1 point above: within
    assert reading_verdict(cells, "FedLESAM-D", "k25", 71.0).startswith("no shortfall")


def test_a_diverged_or_missing_seed_decides_nothing_early():
    runs = _reading_runs(lambda m, f, rd, s: None if (rd == "raw" and s == 1) else (14.0 if rd == "compress" else 83.0))
    cells = stage_cells(runs, PATTERN, METHODS)
    # raw has a diverged seed: only error_feedback closes the gap
    assert reading_verdict(cells, "FedGAMMA", "q4", 83.34) == "measured: the reading (`error_feedback` within 2 points)"
    partial = stage_cells(runs[~((runs["seed"] == 1) & runs["experiments"].str.endswith("_error_feedback"))],
                          PATTERN, METHODS)
    assert reading_verdict(partial, "FedGAMMA", "q4", 83.34) == "waits for its runs"


def _edge_runs(acc):
    rows = []
    for m, settings in {"FedGAMMA": ((0.5, 0.01), (0.1, 0.01)), "FedLESAM-D": ((0.001, 0.01), (0.001, 0.001))}.items():
        for rho, lr in settings:
            for seed in (0, 1):
                rows.append({"experiments": "edge_B_q4", "label": m, "seed": seed, "status": "completed",
                             "hparams": json.dumps({"rho": rho}), "lr": lr, "last10_acc": acc(m, rho, lr)})
    return pd.DataFrame(rows)


def test_the_edge_setting_is_a_cause_only_when_it_closes_the_shortfall():
    cells = edge_cells(_edge_runs(lambda m, rho, lr: {(0.5, 0.01): 14.0, (0.1, 0.01): 82.0,
                                                      (0.001, 0.01): 24.0, (0.001, 0.001): 70.0}[(rho, lr)]))
    assert edge_verdict(cells, "FedGAMMA", 83.34) == "measured: radius 0.1 closes the shortfall"
    assert edge_verdict(cells, "FedLESAM-D", 79.63).startswith("measured: lr 0.001 does not close the shortfall")
    assert edge_verdict(cells, "FedLESAM-D", 25.0).startswith("no shortfall")
    assert edge_verdict(edge_cells(_edge_runs(lambda *a: 80.0).iloc[:3]), "FedGAMMA", 83.34) == "waits for its runs"


def test_block_c_edge_reads_its_own_experiment_at_its_own_lr():
    runs = _edge_runs(lambda m, rho, lr: 14.0)
    assert edge_cells(runs, "C") == {}  # block B's runs are not block C's
    rows = pd.DataFrame([{"experiments": "edge_C_q4", "label": "FedGAMMA", "seed": s, "status": "completed",
                          "hparams": json.dumps({"rho": rho}), "lr": 0.003, "last10_acc": acc}
                         for rho, acc in ((0.5, 18.0), (0.1, 79.0)) for s in (0, 1)])
    cells = edge_cells(rows, "C")
    assert edge_verdict(cells, "FedGAMMA", 79.96, "C") == "measured: radius 0.1 closes the shortfall"
    assert edge_verdict(cells, "FedGAMMA", 82.5, "C").startswith("measured: radius 0.1 does not close")
