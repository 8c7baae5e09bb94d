"""The primary rank: a final seed that diverges counts as diverged (there is no re-run at another setting), the
method ranks below every method whose seeds all completed, ordered by its completed seeds' mean, with the
completed seeds' accuracy shown beside it; ties share the mean rank and close means share a tie band."""
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedflat.results.leaderboard.flow import final_experiments
from fedflat.results.leaderboard.kinds import LeaderboardTable
from fedflat.results.leaderboard.protocol import exp_name
from fedflat.results.leaderboard.results import per_method
from fedflat.pipeline.study import load_study, table_manifest

from .helpers import small_config, write_final_run

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.01, 0.1]}, "fednsam": {"rho": [0.1], "lam": [0.9]}}
CHOSEN = {"fedavg": {"lr": 0.1, "params": {}, "score": 80.0},
          "fedsam": {"lr": 0.3, "params": {"rho": 0.1}, "score": 81.0},
          "fednsam": {"lr": 0.3, "params": {"rho": 0.1, "lam": 0.9}, "score": 82.0}}
# final accuracy per (partition, method) at the tuned choice; None: seed 1 diverges (seed 0 reaches 70 %)
FINAL = {"iid": {"fedavg": 0.80, "fedsam": 0.85, "fednsam": 0.90},
         "dir0.3": {"fedavg": None, "fedsam": 0.75, "fednsam": 0.72},
         "dir0.1": {"fedavg": 0.60, "fedsam": None, "fednsam": 0.65}}


@pytest.fixture
def study(tmp_path, monkeypatch):
    s = load_study(small_config(METHODS, seeds=(0, 1), lr=(0.03, 0.1, 0.3, 1.0)))
    s.choice = lambda: {"partitions": {"dir0.3": CHOSEN}}
    monkeypatch.chdir(tmp_path)
    for part, runs in final_experiments(s).items():
        for rid, lab in runs:
            write_final_run(tmp_path / s.run_dir(rid), s.runs[rid], FINAL[part][s.runs[rid].algorithm], lab["seed"])
    return s


def test_a_diverged_method_ranks_below_every_completed_one_at_its_tuned_choice(study, tmp_path):
    m = table_manifest(study, "leaderboard")
    assert len(m["entries"]) == 18 and {e["dir"] for e in m["entries"]} == {
        study.run_dir(rid) for part in FINAL for rid, _ in study.experiments[exp_name("final", part)]}
    LeaderboardTable.render(m, tmp_path / "results/leaderboard/leaderboard")
    csv = pd.read_csv(tmp_path / "results/leaderboard/leaderboard.csv")
    assert not {"fallback", "tuned_rank"} & set(csv.columns)
    row = {(r.partition, r.method): r for _, r in csv.iterrows()}
    sam = row[("dir0.1", "FedSAM")]  # the best completed seed of its partition (70 %), yet last: a seed diverged
    assert math.isnan(sam.final_acc) and sam.diverged == 1 and sam.ok_acc == pytest.approx(70.0)
    assert sam["rank"] == 3 and sam.ok_rank == 1 and math.isnan(sam.band)
    assert sam.chosen == "lr=0.3, ρ=0.1"  # the final runs keep the choice as it stands
    assert row[("dir0.1", "FedNSAM")]["rank"] == 1 and row[("dir0.1", "FedAvg")]["rank"] == 2
    avg = row[("dir0.3", "FedAvg")]
    assert avg.diverged == 1 and avg["rank"] == 3
    md = (tmp_path / "results/leaderboard/leaderboard.md").read_text()
    assert "diverged 1/2 (the other 70.00)" in md and "Rank, completed seeds" in md
    assert "## Diverged runs (2 of 18 at the tuned choice)" in md
    assert "FedAvg (Dir(0.3) seed 1: round 10); FedSAM (Dir(0.1) seed 1: round 10)" in md
    assert "fallback" not in md.lower() and "↓ from lr" not in md
    assert not [p for p in Path(study.tables_dir).glob("*.json") if "fallback" in p.name]


def _runs(seeds: dict[str, list]) -> pd.DataFrame:
    """One partition's final runs: {method: [final accuracy (%) per seed, None where the seed diverged]}."""
    rows = []
    for meth, accs in seeds.items():
        for seed, a in enumerate(accs):
            ok = a is not None
            rows.append({"partition": "iid", "method": meth, "preset": meth.lower(), "seed": seed,
                         "status": "completed" if ok else "diverged", "final_acc": a if ok else np.nan,
                         "last10_acc": a if ok else np.nan, "lambda_max": 1.0, "trace": 1.0, "flatness": 1.0,
                         "up_floats": 1.0, "down_floats": 1.0, "grad_evals_per_step": 1, "wall_time": 1.0,
                         "up_to_reach": 1.0, "grads_to_reach": 1.0})
    return pd.DataFrame(rows)


def test_diverged_methods_are_ordered_by_their_completed_seeds_mean_and_ties_share_rank_and_band():
    agg = per_method(_runs({"A": [80.0, 80.2], "B": [70.0, 70.2], "C": [70.1, 70.1], "D": [60.0, None],
                            "E": [75.0, None], "F": [None, None]}), ["iid"]).set_index("method")
    # completed methods first; B and C tie (mean 70.1) and share the mean of ranks 2 and 3 and a band
    assert agg.loc["A", "rank"] == 1 and agg.loc["B", "rank"] == agg.loc["C", "rank"] == 2.5
    assert agg.loc["A", "band"] == 1 and agg.loc["B", "band"] == agg.loc["C", "band"] == 2
    # then the diverged ones by their completed seeds' mean (E's 75 above D's 60), above all the one with none
    assert (agg.loc["E", "rank"], agg.loc["D", "rank"], agg.loc["F", "rank"]) == (4, 5, 6)
    assert agg.loc["E", "ok_acc"] == 75.0 and math.isnan(agg.loc["E", "final_acc"]) and math.isnan(agg.loc["E", "band"])
    assert agg.loc["E", "ok_rank"] == 2  # over completed seeds alone, E's 75 is second
    assert list(agg.index) == ["A", "B", "C", "E", "D", "F"]


def test_a_method_without_a_stable_setting_ranks_below_every_method_that_ran():
    """Every continued cell of G diverged on this partition, so it has no final run: it still gets a row and the
    last rank (tied with F, whose every seed diverged), never a band, and leaves the others' ranks alone."""
    agg = per_method(_runs({"A": [80.0, 80.2], "E": [75.0, None], "F": [None, None]}), ["iid"],
                     {"iid": {"G": "g"}, "dir0.1": {"H": "h"}}).set_index("method")
    assert list(agg.index) == ["A", "E", "F", "G"] and agg.loc["G", "unstable"] and agg.loc["G", "seeds"] == 0
    assert (agg.loc["A", "rank"], agg.loc["E", "rank"]) == (1, 2) and agg.loc["F", "rank"] == agg.loc["G", "rank"] == 3.5
    assert math.isnan(agg.loc["G", "band"]) and math.isnan(agg.loc["G", "final_acc"])
