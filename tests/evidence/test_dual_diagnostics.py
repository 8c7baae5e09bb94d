"""The diagnostics of FedSMOO and FedLESAM-D (fedflat.evidence.dual_diagnostics): each rule names a cause only where
the rule written before the runs says so, and reads only its own experiment's runs."""
import json

import pandas as pd

from fedflat.evidence.dual_diagnostics import LR_GRID, RHO_GRID, experiment_cells, lr_verdict, rho_verdict


def _runs(experiment, settings, method="FedSMOO"):
    """runs.csv rows, seeds 0-1: settings = [(rho, lr, acc or None for diverged)]."""
    return pd.DataFrame([{"experiments": f"other;{experiment}", "label": method, "seed": s, "lr": lr,
                          "status": "completed" if acc is not None else "diverged",
                          "hparams": json.dumps({"rho": rho}),
                          "last10_acc": float("nan") if acc is None else acc + s * 0.2}
                         for rho, lr, acc in settings for s in (0, 1)])


def _by(cells, index):
    return {key[index]: c for key, c in cells.items()}


def test_the_lr_below_the_grid_is_the_cause_only_when_the_grid_bottom_comes_down_to_the_paper():
    # Q8: 88 at stage E's lr 0.001, 80 at 0.01; the paper's cell 78.57: 0.01 lies within 2 above -> the cause
    cells = _by(experiment_cells(_runs("colgrid_A_q8_duals", [(0.5, v, a) for v, a in
                                                               zip(LR_GRID, (88.0, 84.0, 80.0))]), "colgrid_A_q8_duals"), 2)
    assert lr_verdict(cells, 78.57).startswith("measured: the lr below VI-A's grid")
    # the same scores against a paper cell 5 points lower: lr 0.01 still more than 2 above -> not the cause
    assert lr_verdict(cells, 73.57).startswith("measured: not the cause")
    # stage E's lr itself within 2 points: nothing to explain
    assert lr_verdict(cells, 87.0).startswith("no gap to explain")
    # lr 0.01 far BELOW the paper's cell (the gap changes side): v2's "at most 2 points above" took it as closing
    far = _by(experiment_cells(_runs("colgrid_A_q8_duals", [(0.5, v, a) for v, a in
                                                             zip(LR_GRID, (88.0, 50.0, 40.0))]), "colgrid_A_q8_duals"), 2)
    assert lr_verdict(far, 78.57).startswith("not closing: at lr 0.01 more than 2 points below")
    # a seed missing: the verdict waits
    partial = experiment_cells(_runs("colgrid_A_q8_duals", [(0.5, 0.001, 88.0)]).iloc[:-1], "colgrid_A_q8_duals")
    assert lr_verdict(_by(partial, 2), 78.57) == "waits for its runs"


def test_a_radius_is_the_cause_only_when_it_reaches_the_paper_and_the_catalog_radius_does_not():
    scores = dict(zip(RHO_GRID, (66.8, 77.8, 79.5, 80.5, 68.9)))
    grid = _runs("rhogrid_A_k10", [(r, 0.001, a) for r, a in scores.items()])
    cells = _by(experiment_cells(grid, "rhogrid_A_k10"), 1)
    assert rho_verdict(cells, 0.5, 82.01) == "measured: the radius (ρ 0.1 within 2 points)"
    assert rho_verdict(cells, 0.5, 90.0) == "measured: not the cause (no radius within 2 points)"
    assert rho_verdict(cells, 0.1, 82.01).startswith("no gap to explain")
    # another experiment's runs are not read
    assert experiment_cells(grid, "rhogrid_B_k10") == {}
    # a diverged radius is never within 2 points
    diverged = _by(experiment_cells(_runs("rhogrid_A_k10", [(r, 0.001, None if r == 0.1 else 60.0)
                                                             for r in RHO_GRID]), "rhogrid_A_k10"), 1)
    assert rho_verdict(diverged, 0.5, 81.0) == "measured: not the cause (no radius within 2 points)"

