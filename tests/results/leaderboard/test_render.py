"""The leaderboard table and figures on synthetic final runs: ranks, diverged seeds, costs, provenance."""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedflat.evidence.export import export_study
from fedflat.results.leaderboard.flow import choice_path
from fedflat.results.leaderboard.kinds import LeaderboardTable
from fedflat.results.leaderboard.results import load_runs
from fedflat.core.kind_registry import FIGURE_KINDS
from fedflat.pipeline.study import load_study, table_manifest

from .helpers import small_config, write_final_run

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.01]}, "fednsam": {"rho": [0.1], "lam": [0.9]}}
ACC = {"iid": {"fedavg": 0.80, "fedsam": 0.85, "fednsam": 0.90},
       "dir0.3": {"fedavg": 0.70, "fedsam": 0.75, "fednsam": 0.72},
       "dir0.1": {"fedavg": 0.60, "fedsam": None, "fednsam": 0.65}}  # FedSAM diverges on one seed of Dir(0.1)


@pytest.fixture
def study(tmp_path, monkeypatch):
    cfg = small_config(METHODS, seeds=(0, 1))
    s = load_study(cfg)
    s.choice = lambda: {"partitions": {"dir0.3": {m: {"lr": 0.1, "params": {k: v[0] for k, v in g.items()}, "score": 1.0}
                                                  for m, g in METHODS.items()}}}
    monkeypatch.chdir(tmp_path)
    table_manifest(s, "leaderboard")  # registers the final runs
    for e, entries in s.experiments.items():
        if e.startswith("final_"):
            part = {"final_iid": "iid", "final_dir0p3": "dir0.3", "final_dir0p1": "dir0.1"}[e]
            for rid, lab in entries:
                spec = s.runs[rid]
                write_final_run(tmp_path / s.run_dir(rid), spec, ACC[part][spec.algorithm], lab["seed"])
    return s


def test_table_ranks_per_partition_and_states_the_protocol(study, tmp_path):
    m = table_manifest(study, "leaderboard")
    LeaderboardTable.render(m, tmp_path / "results/leaderboard/leaderboard")
    csv = pd.read_csv(tmp_path / "results/leaderboard/leaderboard.csv")
    rank = {(r.partition, r.method): r["rank"] for _, r in csv.iterrows()}
    assert rank[("iid", "FedNSAM")] == 1 and rank[("iid", "FedSAM")] == 2 and rank[("iid", "FedAvg")] == 3
    assert rank[("dir0.3", "FedSAM")] == 1 and rank[("dir0.3", "FedNSAM")] == 2
    # a diverged seed: ranked by its completed seed (70 %, the best there), its stability 1/2 beside it
    assert rank[("dir0.1", "FedSAM")] == 1 and rank[("dir0.1", "FedNSAM")] == 2
    sam = csv[(csv.partition == "dir0.1") & (csv.method == "FedSAM")].iloc[0]
    assert sam.final_acc == pytest.approx(70.0) and sam.failed == 1 and sam.stability == 0.5 and np.isnan(sam.band)
    # the blown-up seed stays out of the method's curvature, flatness and wall time
    assert sam.lambda_max == 3.0 and sam.trace == 100.0 and sam.flatness == 0.5 and sam.wall_time == 12.0
    row = csv[(csv.partition == "iid") & (csv.method == "FedAvg")].iloc[0]
    assert row.final_acc == pytest.approx(80.05) and row.final_std == pytest.approx(0.05 * 2 ** 0.5)  # sample std (ddof 1) of 80.0, 80.1
    assert row.up_floats == pytest.approx(100.0) and row.lambda_max == 9.0 and row.wall_time == 12.0
    assert csv[(csv.partition == "iid") & (csv.method == "FedNSAM")].iloc[0].down_floats == pytest.approx(200.0)
    md = (tmp_path / "results/leaderboard/leaderboard.md").read_text()
    assert "held out from the training set" in md and "never the test split" in md
    flat = " ".join(md.split())  # markdown pads its cells
    assert "lr=0.1, ρ=0.1, λ=0.9" in md and "| 70.00 | 1/2 |" in flat and "## Failed runs (1 of 18 at the tuned choice)" in md
    assert "| 80.05 [79.41, 80.69] | 2/2 |" in flat  # FedAvg on IID: 80.0, 80.1 and the t-interval over 2 seeds
    assert "FedSAM (Dir(0.1) seed 1: diverged, round 10)" in md and "PerFedAvg (personalised FL" in md
    assert "## Does a flatter global model generalise better?" in md
    # IID: λ_max 9 / 3 / 5 against accuracy 80 / 85 / 90 (FedAvg, FedSAM, FedNSAM) -> ranks (3,1,2) vs (1,2,3)
    # Dir(0.1): FedSAM's completed seed counts (70 %): λ_max 9 / 3 / 5 against 60.05 / 70 / 65.05 -> rho = -1
    assert "| IID | λ_max of the final model | all | 3 | -0.50 [" in flat
    assert "| Dir(0.1) | λ_max of the final model | all | 3 | -1.00 [" in flat
    assert "## Dir(0.1)" in md and "\\begin{table}" in (tmp_path / "results/leaderboard/leaderboard.tex").read_text()


@pytest.mark.parametrize("kind", ["pareto_communication", "pareto_compute", "flatness_vs_accuracy", "rank_stability",
                                  "critical_difference"])
def test_figures_render(study, tmp_path, kind):
    from fedflat.pipeline.study import figure_manifest

    m = figure_manifest(study, kind)
    outs = [tmp_path / f"{kind}.pdf", tmp_path / f"{kind}.png"]
    FIGURE_KINDS.get(kind).render(m, outs)
    assert all(o.stat().st_size > 5000 for o in outs)


def test_the_final_runs_read_the_same_from_their_committed_records(study, tmp_path):
    """A final stage that spans sessions: once exported, its run directories may go, and the table reads the same
    numbers (accuracies, costs to reach, floats per client, curvature, where a diverged run stopped) from the
    records, without scheduling a run again."""
    before = load_runs(table_manifest(study, "leaderboard")["entries"])
    spec = study.tables["leaderboard"]
    assert len(LeaderboardTable.inputs(study, "leaderboard", spec)) == 1 + 3 * 18  # summary, metrics, Hessian
    export_study(study)
    shutil.rmtree("results/runs")
    assert LeaderboardTable.inputs(study, "leaderboard", spec) == [choice_path(study)]
    after = load_runs(table_manifest(study, "leaderboard")["entries"])
    pd.testing.assert_frame_equal(before, after, rtol=1e-5)
    assert after["up_to_reach"].notna().sum() == 17 and (after["last_round"] == 10).all()


def test_the_table_from_run_directories_and_the_pages_from_records_rank_alike(study, tmp_path):
    """The results table (run directories: 100 x a fraction) and the pages (the exported records: percentages)
    read the same runs through leaderboard.ranking: the same ranks, bands, stability and means, to the digit."""
    from fedflat.results.leaderboard import page_records
    from fedflat.evidence.store import Evidence

    LeaderboardTable.render(table_manifest(study, "leaderboard"), tmp_path / "results/leaderboard/leaderboard")
    t = pd.read_csv(tmp_path / "results/leaderboard/leaderboard.csv").set_index(["partition", "method"])
    export_study(study)
    s = page_records.summary(Evidence("leaderboard", tmp_path / "results/evidence").runs(), study.leaderboard)
    s = s.set_index(["partition", "label"])
    assert sorted(s.index) == sorted(t.index) and len(s) == 9
    for key, r in s.iterrows():
        got = t.loc[key]
        assert (got["rank"], got["completed"], got["stability"]) == (r["rank"], r["completed"], r["stability"]), key
        assert got["band"] == r["band"] or (np.isnan(got["band"]) and np.isnan(r["band"])), key
        assert got["final_acc"] == pytest.approx(r["mean"], abs=1e-9) or np.isnan(r["mean"]), key
