"""The coordinate searches' rule (fedflat.evidence.lrpicks; stages L1/L2 for the lr, stage P for the radius): per
grid, the best validation mean over seeds 0-1; ties go to the smaller value; a cell with a diverged seed is never
picked; no pick until the grid is complete; an lr grid at another radius is another grid. And the drift checks:
the catalog runs each complete grid's pick."""
import json
import math

import pandas as pd
import pytest

from fedflat.evidence.lrpicks import LR, RHO, catalog_values, current, picks, stage_scores


def _runs(acc, lrs=(0.05, 0.1, 0.5), methods=("FedAvg", "FedSAM"), seeds=(0, 1), exp="lr_A_q4", rho=0.05):
    rows = []
    for m in methods:
        for lr in lrs:
            for s in seeds:
                a = acc(m, lr, s)
                rows.append({"experiments": f"read_A_q4_compress;{exp}", "label": m, "lr": lr, "seed": s,
                             "hparams": json.dumps({} if m == "FedAvg" else {"rho": rho}),
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
    assert p[("A", "q4", "FedAvg", "")]["pick"] == 0.5 and p[("A", "q4", "FedAvg", "")]["means"][0.5] == 90.5
    assert p[("A", "q4", "FedSAM", "0.05")]["pick"] == 0.1
    assert math.isnan(p[("A", "q4", "FedSAM", "0.05")]["means"][0.5])


def test_ties_go_to_the_smaller_value_and_an_incomplete_grid_has_no_pick():
    p = picks(_runs(lambda m, lr, s: 80.0))
    assert p[("A", "q4", "FedAvg", "")]["pick"] == 0.05
    missing = _runs(lambda m, lr, s: 80.0 + lr)
    missing = missing[~((missing["lr"] == 0.5) & (missing["seed"] == 1))]
    q = picks(missing)[("A", "q4", "FedAvg", "")]
    assert q["complete"] is False and q["pick"] is None
    two = picks(_runs(lambda m, lr, s: 80.0, lrs=(0.05, 0.1)))[("A", "q4", "FedAvg", "")]
    assert two["complete"] is False


def test_every_cell_diverged_is_complete_without_a_pick():
    p = picks(_runs(lambda m, lr, s: None, exp="lr2_C_k25"))
    assert p[("C", "k25", "FedAvg", "")] == {"means": {0.05: pytest.approx(math.nan, nan_ok=True),
                                                       0.1: pytest.approx(math.nan, nan_ok=True),
                                                       0.5: pytest.approx(math.nan, nan_ok=True)},
                                             "complete": True, "pick": None}


def test_an_lr_grid_run_again_at_a_new_radius_is_another_grid_and_the_catalog_s_radius_selects_it():
    old = _runs(lambda m, lr, s: {0.05: 70, 0.1: 80, 0.5: 75}[lr], methods=("FedSAM",), rho=0.5)
    new = _runs(lambda m, lr, s: {0.05: 85, 0.1: 80, 0.5: 75}[lr], methods=("FedSAM",), rho=0.1, exp="lr3_A_q4")
    p = picks(pd.concat([old, new]))
    assert p[("A", "q4", "FedSAM", "0.5")]["pick"] == 0.1 and p[("A", "q4", "FedSAM", "0.1")]["pick"] == 0.05
    assert current(p, {("A", "q4", "FedSAM"): {"0.1"}})[("A", "q4", "FedSAM")]["pick"] == 0.05
    assert current(p, {("A", "q4", "FedSAM"): {"0.5"}})[("A", "q4", "FedSAM")]["pick"] == 0.1


def test_stage_p_searches_the_radius_at_a_fixed_lr():
    rows = []
    for rho, acc in {0.001: 70, 0.01: 75, 0.05: 79, 0.1: 81, 0.5: 19}.items():
        for s in (0, 1):
            rows.append({"experiments": "rho_A_q4", "label": "FedGAMMA", "lr": 0.01, "seed": s, "status": "completed",
                         "hparams": json.dumps({"rho": rho}), "last10_acc": acc + s})
    runs = pd.DataFrame(rows)
    assert set(stage_scores(runs, RHO)["at"]) == {"0.01"} and stage_scores(runs, LR).empty
    got = picks(runs, RHO)[("A", "q4", "FedGAMMA", "0.01")]
    assert got["complete"] and got["pick"] == 0.1
    assert not picks(runs.iloc[:-1], RHO)[("A", "q4", "FedGAMMA", "0.01")]["complete"]  # 5 radii x 2 seeds


def _committed():
    from fedflat.evidence.lrpicks import STUDY
    from fedflat.evidence.pages import Context

    ctx = Context()
    return ctx.study("fedsynsam"), ctx.evidence(STUDY).runs()


def test_the_catalog_runs_every_complete_lr_grid_s_pick():
    """Drift check between the committed stage-L evidence and the FedSynSAM catalog (Fashion-MNIST Table II):
    wherever a method's lr grid at the catalog's radius is complete, every run of that block and column family uses
    the pick."""
    study, runs = _committed()
    catalog = catalog_values(study, "lr")
    assert len(catalog) == 3 * 2 * 9  # blocks x families x methods: every pick has a place to land
    for key, v in current(picks(runs), catalog_values(study, "rho")).items():
        if v["pick"] is not None:
            assert catalog[key] == {f"{v['pick']:g}"}, key


def test_the_catalog_runs_every_complete_radius_grid_s_pick_in_every_block():
    """Drift check for stage P: a complete block-A radius grid's pick is the radius of that method's columns of the
    family in blocks A, B and C."""
    study, runs = _committed()
    catalog = catalog_values(study, "rho")
    for (_, family, method, _), v in picks(runs, RHO).items():
        if v["pick"] is not None:
            for block in "ABC":
                assert catalog[(block, family, method)] == {f"{v['pick']:g}"}, (block, family, method)


def test_a_pick_on_the_edge_of_its_grid_is_marked():
    from fedflat.evidence.lrpicks import edge

    assert edge(0.5, [0.05, 0.1, 0.5]) == " (grid top)" and edge(0.05, [0.05, 0.1, 0.5]) == " (grid bottom)"
    assert edge(0.1, [0.05, 0.1, 0.5]) == ""


def test_stage_e_marks_an_lr_pick_on_the_edge_against_its_ladder():
    from fedflat.evidence.lrpicks import LADDER, edge

    assert edge(0.01, [0.01, 0.05, 0.1], LADDER) == " (grid bottom; stage E extends it)"
    assert edge(0.001, [0.001, 0.003, 0.01], LADDER) == " (grid bottom: the end of stage E's ladder)"
    assert edge(0.1, [0.01, 0.05, 0.1], LADDER) == " (grid top; stage E extends it)"
    assert edge(0.5, [0.05, 0.1, 0.5], LADDER) == " (grid top: the end of stage E's ladder)"


def test_stage_e_s_extra_lr_joins_its_grid_and_can_move_the_pick():
    grid = _runs(lambda m, lr, s: {0.01: 80, 0.05: 70, 0.1: 60}[lr], lrs=(0.01, 0.05, 0.1), methods=("FedSAM",),
                 exp="lr2_A_k25")
    below = _runs(lambda m, lr, s: 83.0, lrs=(0.003,), methods=("FedSAM",), exp="lr4_A_k25")
    assert picks(grid)[("A", "k25", "FedSAM", "0.05")]["pick"] == 0.01
    p = picks(pd.concat([grid, below]))[("A", "k25", "FedSAM", "0.05")]
    assert list(p["means"]) == [0.003, 0.01, 0.05, 0.1] and p["pick"] == 0.003 and p["complete"]


def test_only_the_grid_the_catalog_follows_is_marked_for_stage_e():
    from fedflat.evidence.lrpicks import render

    old = _runs(lambda m, lr, s: {0.01: 80, 0.05: 70, 0.1: 60}[lr], lrs=(0.01, 0.05, 0.1), methods=("FedSAM",),
                rho=0.5, exp="lr2_A_k25")
    new = _runs(lambda m, lr, s: {0.01: 80, 0.05: 70, 0.1: 60}[lr], lrs=(0.01, 0.05, 0.1), methods=("FedSAM",),
                rho=0.1, exp="lr3_A_k25")
    text = render(picks(pd.concat([old, new])), LR, {("A", "k25", "FedSAM"): {"0.01"}},
                  {("A", "k25", "FedSAM"): {"0.1"}}, 1)
    rows = {line.split(" | ")[3]: line for line in text.splitlines() if "FedSAM" in line}
    assert "(grid bottom; stage E extends it)" in rows["0.1 (*catalog*)"]
    assert "(grid bottom) |" in rows["0.5"]


def test_stage_e_names_the_next_lr_past_an_edge_pick_and_nothing_for_an_interior_one():
    from fedflat.evidence.lrpicks import next_lr, stage_e_due

    assert next_lr(0.01, [0.01, 0.05, 0.1]) == 0.003
    assert next_lr(0.1, [0.01, 0.05, 0.1]) == 0.5
    assert next_lr(0.05, [0.01, 0.05, 0.1]) is None
    assert next_lr(0.001, [0.001, 0.003, 0.01]) is None and next_lr(0.5, [0.05, 0.1, 0.5]) is None
    bottom = _runs(lambda m, lr, s: {0.01: 80, 0.05: 70, 0.1: 60}[lr], lrs=(0.01, 0.05, 0.1), methods=("FedSAM",),
                   exp="lr2_B_k25")
    inner = _runs(lambda m, lr, s: {0.05: 80, 0.1: 85, 0.5: None}[lr], methods=("FedAvg",), exp="lr_B_q4")
    half = _runs(lambda m, lr, s: 80.0, lrs=(0.05, 0.1), methods=("FedSAM",), exp="lr_B_q4")
    due = stage_e_due(picks(pd.concat([bottom, inner, half])),
                      {("B", "k25", "FedSAM"): {"0.05"}, ("B", "q4", "FedAvg"): {""}, ("B", "q4", "FedSAM"): {"0.05"}},
                      "B")
    assert [(d["family"], d["method"], d["pick"], d["add"], d["complete"]) for d in due] == [
        ("k25", "FedSAM", 0.01, 0.003, True), ("q4", "FedAvg", 0.1, None, True), ("q4", "FedSAM", None, None, False)]


def test_block_a_needs_no_further_stage_e_run_in_the_committed_evidence():
    from pathlib import Path

    from fedflat.evidence.lrpicks import stage_e_report

    rows = [line for line in stage_e_report("A", Path(__file__).resolve().parents[2]).splitlines()
            if line.startswith("| ") and "method" not in line]
    assert len(rows) == 18 and all(line.endswith("| nothing: settled |") for line in rows), rows
