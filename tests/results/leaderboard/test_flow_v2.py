"""Leaderboard v2 on fake runs: the screen's best cells (never a diverged one) continue to the full horizon on
every partition's validation split, each partition picks its own cell, SAM-type picks get their rho = 0 twin (v3:
on the test split with the final seeds), and the table ranks by the completed seeds, with stability, bands, trial
counts and the paired ablation."""
import json
from pathlib import Path

import pandas as pd
import pytest

from fedflat.results.leaderboard.flow import (ablation_experiments, compute_choice, compute_screen,
                                              continuation_experiments, final_experiments, tuning_inputs)
from fedflat.results.leaderboard.kinds import LeaderboardTable
from fedflat.core.run_paths import run_of_file
from fedflat.pipeline.study import load_study, table_manifest

from .helpers import small_config, write_final_run

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.0, 0.01]}, "fednsam": {"rho": [0.1], "lam": [0.9]}}
LR = (0.03, 0.1, 0.3)


def _screen_acc(spec):
    """Screen: FedSAM's best cell (lr 0.3, rho 0.01) diverges; its next two are (0.1, 0.01) and (0.1, 0)."""
    lr, rho = spec.training["lr"], spec.hparams.get("rho")
    if spec.algorithm == "fedsam":
        return {(0.3, 0.01): None, (0.1, 0.01): 0.80, (0.1, 0.0): 0.79}.get((lr, rho), 0.5)
    return {0.03: 0.6, 0.1: 0.7, 0.3: 0.65}[lr]


def _cont_acc(spec):
    """Full horizon: on IID FedSAM's rho = 0.01 cell wins, on Dir(0.1) its rho = 0 cell; FedAvg's lr 0.3 cell
    diverges on Dir(0.3) (so its other cell is picked there)."""
    if spec.algorithm == "fedsam":
        win = 0.0 if spec.partition.startswith("dir0.1") else 0.01
        return 0.85 if spec.hparams["rho"] == win else 0.84
    if spec.algorithm == "fedavg" and spec.training["lr"] == 0.3 and spec.partition.startswith("dir0.3"):
        return None
    return {0.1: 0.7, 0.3: 0.75}.get(spec.training["lr"], 0.6)


def _write_summary(path: Path, acc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"status": "completed" if acc is not None else "diverged", "eval_split": "validation",
                                "last10_acc": acc, "final_acc": acc}))


@pytest.fixture
def study(tmp_path, monkeypatch):
    s = load_study(small_config(METHODS, seeds=(0, 1), lr=LR, continuation={"cells": 2, "seeds": [0]}))
    monkeypatch.chdir(tmp_path)
    for f in tuning_inputs(s):
        _write_summary(Path(f), _screen_acc(s.runs[run_of_file(f)]))
    s.screen = lambda: compute_screen(s)
    return s


def test_the_screen_continues_the_best_completed_cells(study):
    screen = compute_screen(study)["methods"]
    assert [(c["lr"], c["params"]) for c in screen["fedsam"]] == [(0.1, {"rho": 0.01}), (0.1, {"rho": 0.0})]
    assert [c["lr"] for c in screen["fedavg"]] == [0.1, 0.3] and screen["fedavg"][0]["params"] == {}
    conts = continuation_experiments(study)
    assert list(conts) == ["iid", "dir0.3", "dir0.1"]
    for part, entries in conts.items():
        specs = [study.runs[r] for r, _ in entries]
        assert len(specs) == 2 * 3  # two cells per method, seed 0
        assert all(s.training["holdout"] == 0.1 and s.training["rounds"] == 20 and s.seed == 0 for s in specs)


def test_each_partition_picks_its_own_cell_and_never_a_diverged_one(study):
    for entries in continuation_experiments(study).values():
        for rid, _ in entries:
            _write_summary(Path(study.run_dir(rid)) / "summary.json", _cont_acc(study.runs[rid]))
    full = compute_choice(study)
    chosen = full["partitions"]
    assert chosen["iid"]["fedsam"]["params"] == {"rho": 0.01} and chosen["dir0.1"]["fedsam"]["params"] == {"rho": 0.0}
    assert chosen["iid"]["fedavg"]["lr"] == 0.3 and chosen["dir0.3"]["fedavg"]["lr"] == 0.1  # 0.3 diverged there
    study.choice = lambda: full
    finals = final_experiments(study)
    assert {study.runs[r].hparams["rho"] for r, _ in finals["dir0.1"] if study.runs[r].algorithm == "fedsam"} == {0.0}
    abl = ablation_experiments(study)
    # rho = 0 twins: FedSAM on IID and Dir(0.3) (its pick there has rho 0.01) and FedNSAM everywhere; none for
    # FedSAM on Dir(0.1), whose pick already has rho = 0, and none for FedAvg (no radius)
    got = {(part, study.runs[r].algorithm) for part, e in abl.items() for r, _ in e}
    assert got == {(p, "fednsam") for p in ("iid", "dir0.3", "dir0.1")} | {("iid", "fedsam"), ("dir0.3", "fedsam")}
    for part, e in abl.items():
        for r, lab in e:  # v3: the twins run as the finals do (test split, the final seeds), paired with the pick's
            s = study.runs[r]
            assert s.hparams["rho"] == 0.0 and s.training["holdout"] == 0.0 and s.training["rounds"] == 20
            mate = next(study.runs[f] for f, fl in finals[part] if fl["preset"] == lab["preset"] and fl["seed"] == lab["seed"])
            assert mate.training["lr"] == s.training["lr"] and mate.partition_id() == s.partition_id()
        assert sorted({lab["seed"] for _, lab in e}) == [0, 1]
    sam_iid = next(study.runs[r] for r, _ in abl["iid"] if study.runs[r].algorithm == "fedsam")
    # never the continuation's validation run of the same cell (v2's selection-biased twin)
    assert sam_iid.run_id() not in {r for r, _ in continuation_experiments(study)["iid"]}


def test_the_table_ranks_by_completed_seeds_and_reports_the_paired_ablation(study, tmp_path):
    for entries in continuation_experiments(study).values():
        for rid, _ in entries:
            _write_summary(Path(study.run_dir(rid)) / "summary.json", _cont_acc(study.runs[rid]))
    chosen = compute_choice(study)
    study.choice = lambda: chosen
    acc = {"fedavg": 0.80, "fedsam": None, "fednsam": 0.70}  # FedSAM: one seed diverges, the other reaches 70 %
    for part, entries in final_experiments(study).items():
        for rid, lab in entries:
            write_final_run(Path(study.run_dir(rid)), study.runs[rid], acc[study.runs[rid].algorithm], lab["seed"])
    for entries in ablation_experiments(study).values():
        for rid, _ in entries:
            _write_summary(Path(study.run_dir(rid)) / "summary.json", 0.5 if study.runs[rid].algorithm == "fednsam" else 0.84)
    m = table_manifest(study, "leaderboard")
    LeaderboardTable.render(m, tmp_path / "lb")
    csv = pd.read_csv(tmp_path / "lb.csv")
    iid = csv[csv.partition == "iid"].set_index("method")
    # FedSAM's one completed seed (70.0) sits just below FedNSAM's 70.05: third, with stability 1/2 and no band
    assert iid.loc["FedAvg", "rank"] == 1 and iid.loc["FedNSAM", "rank"] == 2 and iid.loc["FedSAM", "rank"] == 3
    assert iid.loc["FedAvg", "band"] == 1 and iid.loc["FedNSAM", "band"] == 2 and iid.loc["FedSAM", "stability"] == 0.5
    md = (tmp_path / "lb.md").read_text()
    c = study.leaderboard["tuning"]["continuation"]
    assert (f"then each method's best {c['cells']} of those cells run the full "
            f"{study.runs[rid].training['rounds']} rounds on every ranked partition") in md  # the header says how it chose
    header = md[md.index("## IID"):].splitlines()[2]
    assert "| Band " in header and "| Trials " in header and "## Does the ascent help? The ρ = 0 ablation" in md
    ab = md[md.index("## Does the ascent help?"):]
    # FedNSAM: 70.0, 70.1 (pick) against 50 (rho = 0) on the same two seeds: helps, after Holm over the twins;
    # FedSAM's pick completed one seed: one pair, not testable
    rows = {r.split("|")[2].strip(): r for r in ab.splitlines() if r.startswith("| IID")}
    assert "ascent helps" in rows["FedNSAM"] and "not testable" in rows["FedSAM"]
    # FedSAM's twin is FedAvg; FedNSAM's (its lam kept) is FedAvg+Nesterov (algorithms.reductions)
    cells = {r.split("|")[2].strip(): r.split("|")[3].strip() for r in ab.splitlines() if r.startswith("| IID")}
    assert cells == {"FedSAM": "FedAvg", "FedNSAM": "FedAvg+Nesterov"}
    assert m["trials"] == {"FedAvg": 3, "FedSAM": 6, "FedNSAM": 3}
    assert m["continued"] == {"FedAvg": 2, "FedSAM": 2, "FedNSAM": 2}
    row = next(r for r in md[md.index("## IID"):].splitlines() if "| FedSAM " in r)
    assert "| 6 + 2 " in row  # screen trials + full-horizon continuations


def test_a_key_the_continued_cells_share_keeps_its_value(tmp_path, monkeypatch):
    """The screen's two best cells share λ = 0.9, the second value of λ's grid, so λ does not vary among the
    continued runs: the pick, its final runs and its ρ = 0 twin must keep λ = 0.9 (a grid-first fallback
    once gave λ = 0.7, a cell never run at the full horizon)."""
    s = load_study(small_config({"fednsam": {"rho": [0.0, 0.01], "lam": [0.7, 0.9]}}, lr=(0.1,),
                                continuation={"cells": 2, "seeds": [0]}))
    monkeypatch.chdir(tmp_path)
    for f in tuning_inputs(s):
        spec = s.runs[run_of_file(f)]
        _write_summary(Path(f), {(0.01, 0.9): 0.80, (0.0, 0.9): 0.79}.get((spec.hparams["rho"], spec.hparams["lam"]), 0.5))
    s.screen = lambda: compute_screen(s)
    assert [c["params"] for c in s.screen()["methods"]["fednsam"]] == [{"rho": 0.01, "lam": 0.9}, {"rho": 0.0, "lam": 0.9}]
    for entries in continuation_experiments(s).values():
        for rid, _ in entries:
            _write_summary(Path(s.run_dir(rid)) / "summary.json", 0.85 if s.runs[rid].hparams["rho"] == 0.01 else 0.84)
    chosen = compute_choice(s)
    assert {part: c["fednsam"]["params"] for part, c in chosen["partitions"].items()} == \
        {part: {"rho": 0.01, "lam": 0.9} for part in ("iid", "dir0.3", "dir0.1")}
    s.choice = lambda: chosen
    assert {(s.runs[r].hparams["rho"], s.runs[r].hparams["lam"]) for e in final_experiments(s).values() for r, _ in e} == {(0.01, 0.9)}
    assert {(s.runs[r].hparams["rho"], s.runs[r].hparams["lam"]) for e in ablation_experiments(s).values() for r, _ in e} == {(0.0, 0.9)}
