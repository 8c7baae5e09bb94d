"""The divergence fallback (tuning.on_divergence: lower_lr): a method with a diverged final seed is re-run, every
seed, at its best validation cell with a smaller lr, and ranked by those runs; on fake tuning and final runs."""
import json
from pathlib import Path

import pandas as pd
import pytest

from fedflat.errors import ConfigError
from fedflat.leaderboard.flow import compute_fallback, fallback_experiments, final_experiments
from fedflat.leaderboard.kinds import LeaderboardTable
from fedflat.leaderboard.protocol import exp_name
from fedflat.study import load_study, table_manifest

from .helpers import small_config, write_final_run

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.01, 0.1]}, "fednsam": {"rho": [0.1], "lam": [0.9]}}
CHOSEN = {"fedavg": {"lr": 0.1, "params": {}, "score": 80.0},  # the smallest lr: nothing to fall back to
          "fedsam": {"lr": 0.3, "params": {"rho": 0.1}, "score": 81.0},
          "fednsam": {"lr": 0.3, "params": {"rho": 0.1, "lam": 0.9}, "score": 82.0}}
# final accuracy per (partition, method) at the tuned choice; None: seed 1 diverges
FINAL = {"iid": {"fedavg": 0.80, "fedsam": 0.85, "fednsam": 0.90},
         "dir0.3": {"fedavg": None, "fedsam": 0.75, "fednsam": 0.72},
         "dir0.1": {"fedavg": 0.60, "fedsam": None, "fednsam": 0.65}}


def _tuning_score(spec) -> float | None:
    """Validation cells. FedSAM: lr 0.3 (chosen) > lr 0.1 with ρ = 0.01 > lr 0.1 with ρ = 0.1 > 0.03; FedAvg:
    diverged at 0.03, so it has no working cell below its chosen 0.1."""
    lr, rho = spec.training["lr"], spec.hparams.get("rho")
    if spec.algorithm == "fedavg":
        return {0.1: 0.80, 0.3: 0.75}.get(lr)
    if spec.algorithm == "fednsam":
        return 0.7
    return {0.3: 0.81, 0.1: 0.79 if rho == 0.01 else 0.78, 0.03: 0.70}.get(lr)


@pytest.fixture
def study(tmp_path, monkeypatch):
    cfg = small_config(METHODS, seeds=(0, 1), lr=(0.03, 0.1, 0.3, 1.0))
    cfg["leaderboard"]["tuning"]["on_divergence"] = "lower_lr"  # v1's rule, still an option (v2 ranks without it)
    s = load_study(cfg)
    s.choice = lambda: {"partitions": {"dir0.3": CHOSEN}}
    monkeypatch.chdir(tmp_path)
    for part, runs in final_experiments(s).items():
        for rid, lab in runs:
            write_final_run(tmp_path / s.run_dir(rid), s.runs[rid], FINAL[part][s.runs[rid].algorithm], lab["seed"])
    for m in METHODS:  # the validation cells the fallback chooses among
        for rid, _ in s.experiments[exp_name("tune", "dir0.3", m)]:
            acc = _tuning_score(s.runs[rid])
            Path(s.run_dir(rid)).mkdir(parents=True)
            Path(s.run_dir(rid), "summary.json").write_text(json.dumps(
                {"status": "completed" if acc else "diverged", "eval_split": "validation", "last10_acc": acc}))
    return s


def test_fallback_picks_the_best_validation_cell_below_the_lr_that_diverged(study):
    fb = compute_fallback(study)
    assert fb["rule"] == "lower_lr" and set(fb["partitions"]) == {"dir0.3", "dir0.1"}
    sam = fb["partitions"]["dir0.1"]["fedsam"]
    assert sam["diverged"] == [1] and sam["from"] == {"lr": 0.3, "params": {"rho": 0.1}}
    # not lr 0.3 (it blew up), not ρ = 0.1 at lr 0.1 (worse on validation), not lr 0.03
    assert sam["to"] == {"lr": 0.1, "params": {"rho": 0.01}, "score": pytest.approx(79.0)}
    # FedAvg diverged at 0.1 and its only smaller cell (0.03) diverged in tuning: no fallback, it keeps its seeds
    assert fb["partitions"]["dir0.3"]["fedavg"] == {"diverged": [1], "from": {"lr": 0.1, "params": {}}, "to": None}
    assert list(fb["partitions"]["dir0.1"]) == ["fedsam"]  # methods whose seeds all completed are not re-run


def test_fallback_runs_are_registered_with_every_seed_at_the_fallback_setting(study):
    with pytest.raises(ConfigError, match="divergence fallback is unknown"):
        fallback_experiments(study)
    study.fallback = lambda: compute_fallback(study)
    runs = fallback_experiments(study)
    sam = [study.runs[r] for r, _ in runs["dir0.1"]]
    assert [(s.algorithm, s.training["lr"], s.hparams["rho"], s.seed) for s in sam] == [
        ("fedsam", 0.1, 0.01, 0), ("fedsam", 0.1, 0.01, 1)]
    assert "iid" not in runs and study.experiments["fallback_dir0p1"] == runs["dir0.1"]


def test_the_table_ranks_a_rerun_method_by_its_fallback_runs(study, tmp_path):
    study.fallback = lambda: compute_fallback(study)
    for part, runs in fallback_experiments(study).items():
        for rid, lab in runs:  # FedSAM at lr 0.1 on Dir(0.1): both seeds complete, 66 %
            write_final_run(tmp_path / study.run_dir(rid), study.runs[rid], 0.66, lab["seed"])
    m = table_manifest(study, "leaderboard")
    assert sum(e["stage"] == "fallback" for e in m["entries"]) == 2
    LeaderboardTable.render(m, tmp_path / "results/leaderboard/leaderboard")
    csv = pd.read_csv(tmp_path / "results/leaderboard/leaderboard.csv")
    row = {(r.partition, r.method): r for _, r in csv.iterrows()}
    sam = row[("dir0.1", "FedSAM")]
    # ranked by its re-runs (66 % > FedNSAM's 65 %), where the strict rule at the tuned lr put it last
    assert sam.final_acc == pytest.approx(66.05) and sam.diverged == 0 and sam["rank"] == 1 and sam.tuned_rank == 3
    assert sam.fallback and sam.chosen == "lr=0.1, ρ=0.01 (↓ from lr=0.3)"
    assert row[("dir0.1", "FedNSAM")]["rank"] == 2 and row[("dir0.1", "FedNSAM")].tuned_rank == 1
    avg = row[("dir0.3", "FedAvg")]  # no fallback: still diverged, still last under both ranks
    assert not avg.fallback and avg.diverged == 1 and avg["rank"] == avg.tuned_rank == 3
    assert (csv["partition"] == "dir0.1").sum() == 3  # one row per method, not one per stage
    md = (tmp_path / "results/leaderboard/leaderboard.md").read_text()
    assert "Divergence fallback, the same for every method" in md and "Rank at tuned lr" in md
    assert "## Diverged runs (2 of 18 at the tuned choice)" in md and "### Fallback (2 methods" in md
    assert ("Dir(0.1), FedSAM: lr 0.3 diverged on seed(s) 1; re-run at lr=0.1, ρ=0.01 (validation 79.00 %): "
            "66.05 ± 0.05 %, rank 1 (at the tuned lr: 3).") in md
    assert "Dir(0.3), FedAvg: lr 0.1 diverged on seed(s) 1; no tuning cell with a smaller lr worked" in md


def test_progress_counts_each_stage_and_says_what_waits_for_a_checkpoint(study):
    from fedflat.leaderboard.flow import choice_path, fallback_path, write_fallback
    from fedflat.leaderboard.progress import progress

    rows = dict(progress(study))
    n_tuning = int(rows["tuning"].split(" of ")[1].split()[0])
    assert rows["tuning"].startswith(f"{n_tuning} of {n_tuning} runs (") and n_tuning == 4 * (1 + 2 + 1)
    assert rows["final"].startswith("waits for the tuning choice") and "fallback" not in rows
    Path(choice_path(study)).parent.mkdir(parents=True, exist_ok=True)
    Path(choice_path(study)).write_text(json.dumps({"partitions": {"dir0.3": CHOSEN}}))
    rows = dict(progress(study))
    assert rows["final"] == "18 of 18 runs (2 diverged), 18 of 18 Hessians"
    assert rows["fallback"].startswith("waits for every final run")
    write_fallback(study, fallback_path(study))
    assert dict(progress(study))["fallback"] == "0 of 2 re-runs (0 diverged), 0 of 2 Hessians"
    from fedflat.evidence.export import export_study
    import shutil

    export_study(study)  # a new machine: the final runs' directories are gone, their records are committed
    shutil.rmtree(study.run_dir(_entries_of_final(study)[0]))
    rows = dict(progress(study))
    assert rows["final"] == "18 of 18 runs (2 diverged, 1 read from the committed evidence), 18 of 18 Hessians"


def _entries_of_final(study):
    from fedflat.leaderboard.flow import final_experiments

    return sorted(rid for entries in final_experiments(study).values() for rid, _ in entries)
