"""The results table ranks as the pages do (leaderboard.ranking, v3): by the mean over the completed seeds, a failed
seed counted in the method's stability and never in its rank (there is no re-run at another setting); exact ties
ordered by preset name; bands by paired tests against each band's head; a method without a completed seed or a
pick has no rank."""
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


def test_a_failed_seed_costs_stability_not_rank_at_the_tuned_choice(study, tmp_path):
    m = table_manifest(study, "leaderboard")
    assert len(m["entries"]) == 18 and {e["dir"] for e in m["entries"]} == {
        study.run_dir(rid) for part in FINAL for rid, _ in study.experiments[exp_name("final", part)]}
    LeaderboardTable.render(m, tmp_path / "results/leaderboard/leaderboard")
    csv = pd.read_csv(tmp_path / "results/leaderboard/leaderboard.csv")
    assert not {"fallback", "tuned_rank", "ok_rank", "diverged"} & set(csv.columns)
    row = {(r.partition, r.method): r for _, r in csv.iterrows()}
    sam = row[("dir0.1", "FedSAM")]  # one completed seed (70 %), the best of its partition: first, not testable
    assert sam.final_acc == pytest.approx(70.0) and (sam.completed, sam.failed, sam.stability) == (1, 1, 0.5)
    assert sam["rank"] == 1 and math.isnan(sam.band) and not sam.testable and math.isnan(sam.ci_lo)
    assert sam.chosen == "lr=0.3, ρ=0.1"  # the final runs keep the choice as it stands
    # FedNSAM (65.0, 65.1) heads band 1; FedAvg (60.0, 60.1) is 5 points below on both seeds: band 2
    nsam, avg = row[("dir0.1", "FedNSAM")], row[("dir0.1", "FedAvg")]
    assert (nsam["rank"], nsam.band, avg["rank"], avg.band) == (2, 1, 3, 2)
    assert nsam.ci_lo < nsam.final_acc < nsam.ci_hi
    assert row[("dir0.3", "FedAvg")]["rank"] == 3 and row[("dir0.3", "FedAvg")].stability == 0.5
    md = (tmp_path / "results/leaderboard/leaderboard.md").read_text()
    assert "| Stability" in md and "| not testable |" in " ".join(md.split()) and "1/2" in md
    assert "## Failed runs (2 of 18 at the tuned choice)" in md
    assert "FedAvg (Dir(0.3) seed 1: diverged, round 10); FedSAM (Dir(0.1) seed 1: diverged, round 10)" in md
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


def test_methods_rank_by_their_completed_seeds_and_exact_ties_by_preset_name():
    agg = per_method(_runs({"A": [80.0, 80.2], "C": [70.1, 70.1], "B": [70.0, 70.2], "D": [60.0, None],
                            "E": [75.0, None], "F": [None, None]}), ["iid"]).set_index("method")
    # E's one completed seed (75) ranks it second; B and C tie at 70.1 and are ordered by preset name (b, c)
    assert [agg.loc[m, "rank"] for m in "AEBCD"] == [1, 2, 3, 4, 5] and math.isnan(agg.loc["F", "rank"])
    assert list(agg.index) == ["A", "E", "B", "C", "D", "F"]
    # A heads band 1; B and C are 10 points below it on both seeds (Holm over the two: both below); B heads band 2
    # and C is level with it; the one-seed methods have no band
    assert (agg.loc["A", "band"], agg.loc["B", "band"], agg.loc["C", "band"]) == (1, 2, 2)
    assert all(math.isnan(agg.loc[m, "band"]) for m in "EDF")
    assert agg.loc["E", "final_acc"] == 75.0 and agg.loc["E", "stability"] == 0.5 and agg.loc["F", "completed"] == 0


def test_a_method_without_a_stable_setting_has_a_row_and_no_rank():
    """Every continued cell of G diverged on this partition, so it has no final run: it still gets a row, no
    rank, no band, and leaves the others' ranks alone."""
    agg = per_method(_runs({"A": [80.0, 80.2], "E": [75.0, None], "F": [None, None]}), ["iid"],
                     {"iid": {"G": "g"}, "dir0.1": {"H": "h"}}).set_index("method")
    assert list(agg.index) == ["A", "E", "F", "G"] and agg.loc["G", "unstable"] and agg.loc["G", "seeds"] == 0
    assert (agg.loc["A", "rank"], agg.loc["E", "rank"]) == (1, 2) and agg.loc["G", "preset"] == "g"
    assert math.isnan(agg.loc["G", "rank"]) and math.isnan(agg.loc["G", "band"]) and math.isnan(agg.loc["G", "final_acc"])
