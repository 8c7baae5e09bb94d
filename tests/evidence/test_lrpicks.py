"""Stages L1/L2's rule (fedflat.evidence.lrpicks): per block, family and method, the best validation mean over
seeds 0-1; ties go to the smaller lr; a cell with a diverged seed is never picked; no pick until the grid is
complete. And the drift check: the catalog runs each complete grid's pick."""
import math

import pandas as pd
import pytest

from fedflat.evidence.lrpicks import catalog_lrs, picks


def _runs(acc, lrs=(0.05, 0.1, 0.5), methods=("FedAvg", "FedSAM"), seeds=(0, 1), exp="lr_A_q4"):
    rows = []
    for m in methods:
        for lr in lrs:
            for s in seeds:
                a = acc(m, lr, s)
                rows.append({"experiments": f"read_A_q4_compress;{exp}", "label": m, "lr": lr, "seed": s,
                             "status": "completed" if a is not None else "diverged",
                             "last10_acc": math.nan if a is None else a})
    return pd.DataFrame(rows)


def test_the_best_mean_is_picked_and_a_diverged_cell_never():
    def acc(m, lr, s):
        if m == "FedAvg":
            return {0.05: 80, 0.1: 85, 0.5: 90}[lr] + s  # best 0.5
        if lr == 0.5:
            return None if s == 1 else 99  # FedSAM's best-looking cell lost a seed: never picked
        return {0.05: 70, 0.1: 75}[lr]
    p = picks(_runs(acc))
    assert p[("A", "q4", "FedAvg")]["lr"] == 0.5 and p[("A", "q4", "FedAvg")]["means"][0.5] == 90.5
    assert p[("A", "q4", "FedSAM")]["lr"] == 0.1 and math.isnan(p[("A", "q4", "FedSAM")]["means"][0.5])


def test_ties_go_to_the_smaller_lr_and_an_incomplete_grid_has_no_pick():
    p = picks(_runs(lambda m, lr, s: 80.0))
    assert p[("A", "q4", "FedAvg")]["lr"] == 0.05
    missing = _runs(lambda m, lr, s: 80.0 + lr)
    missing = missing[~((missing["lr"] == 0.5) & (missing["seed"] == 1))]
    q = picks(missing)[("A", "q4", "FedAvg")]
    assert q["complete"] is False and q["lr"] is None
    two = picks(_runs(lambda m, lr, s: 80.0, lrs=(0.05, 0.1)))[("A", "q4", "FedAvg")]
    assert two["complete"] is False


def test_every_cell_diverged_is_complete_without_a_pick():
    p = picks(_runs(lambda m, lr, s: None, exp="lr2_C_k25"))
    assert p[("C", "k25", "FedAvg")] == {"means": {0.05: pytest.approx(math.nan, nan_ok=True),
                                                   0.1: pytest.approx(math.nan, nan_ok=True),
                                                   0.5: pytest.approx(math.nan, nan_ok=True)},
                                         "complete": True, "lr": None}


def test_the_catalog_runs_every_complete_grid_s_pick():
    """Drift check between the committed stage-L evidence and the FedSynSAM catalog (Fashion-MNIST Table II):
    wherever a method's grid is complete, every run of that block and column family uses the pick."""
    from fedflat.evidence.lrpicks import STUDY
    from fedflat.evidence.pages import Context
    from fedflat.study import load_config_file, load_study

    ctx = Context()
    catalog = catalog_lrs(load_study(load_config_file(ctx.config("papers/fedsynsam.yaml"))))
    assert len(catalog) == 3 * 2 * 9  # blocks x families x methods: every pick has a place to land
    for key, v in picks(ctx.evidence(STUDY).runs()).items():
        if v["lr"] is not None:
            assert catalog[key] == {v["lr"]}, key


def test_a_pick_on_the_edge_of_its_grid_is_marked():
    from fedflat.evidence.lrpicks import edge

    assert edge(0.5, [0.05, 0.1, 0.5]) == " (grid top)" and edge(0.05, [0.05, 0.1, 0.5]) == " (grid bottom)"
    assert edge(0.1, [0.05, 0.1, 0.5]) == ""
