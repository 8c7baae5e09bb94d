"""The leaderboard (v2) at tiny scale end to end: in-process (every target) and through Snakemake, where the screen
and the choice are checkpoints whose outputs bring the continuation, the final runs and the ablations into the
DAG."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from fedflat.pipeline.build import build
from fedflat.pipeline.study import load_study

from .helpers import REPO, small_config

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.0, 0.1]}}
CONTINUATION = {"cells": 2, "seeds": [0]}
FIGURES = ("pareto_communication", "pareto_compute", "flatness_vs_accuracy", "rank_stability", "critical_difference")


def _check_outputs(root: Path):
    screen = json.loads((root / "results/leaderboard/screen_choice.json").read_text())
    assert all(len(cells) == 2 for cells in screen["methods"].values())  # the best 2 cells of every method
    choice = json.loads((root / "results/leaderboard/tuning_choice.json").read_text())
    assert choice["stage"] == "continuation" and set(choice["partitions"]) == {"iid", "dir0.3", "dir0.1"}
    for picks in choice["partitions"].values():  # every partition picks among the continued cells
        assert set(picks) == {"fedavg", "fedsam"} and picks["fedsam"]["params"]["rho"] in (0.0, 0.1)
        assert {(c["lr"], json.dumps(c["params"])) for c in screen["methods"]["fedsam"]} >= {
            (picks["fedsam"]["lr"], json.dumps(picks["fedsam"]["params"]))}
    csv = pd.read_csv(root / "results/leaderboard/leaderboard.csv")
    assert len(csv) == 2 * 3 and set(csv["partition"]) == {"iid", "dir0.3", "dir0.1"}
    assert (csv["lambda_max"] > 0).all() and (csv["up_floats"] > 0).all() and csv["rank"].notna().all()
    assert "Scale: tiny" in (root / "results/leaderboard/leaderboard.md").read_text()
    tuning = (root / "results/leaderboard/tuning.md").read_text()
    # with the continuation, the screen's best cell is marked as such and never called the choice
    assert "FedSAM (ρ=0.1)" in tuning and "| screen best" in tuning and "The screen's best is not the choice" in tuning
    assert "partitions not tuned take that choice" not in tuning
    for f in FIGURES:
        assert (root / f"figures/leaderboard/{f}.pdf").stat().st_size > 5000


def test_tiny_leaderboard_builds_in_process(tmp_path):
    torch.set_num_threads(1)
    study = load_study(small_config(METHODS, lr=(0.1, 0.3), continuation=CONTINUATION))
    build(study, "leaderboard", tmp_path, data_root=str(REPO / "data"))
    build(study, "tuning", tmp_path, data_root=str(REPO / "data"))
    for f in FIGURES:
        build(study, f, tmp_path, data_root=str(REPO / "data"), section="figures")
    _check_outputs(tmp_path)


@pytest.mark.e2e
def test_tiny_leaderboard_through_snakemake(tmp_path):
    cfg = tmp_path / "leaderboard_tiny.yaml"
    cfg.write_text(yaml.safe_dump(small_config(METHODS, lr=(0.1, 0.3), continuation=CONTINUATION)))
    cmd = [str(Path(sys.executable).with_name("snakemake")), "-s", str(REPO / "Snakefile"), "--directory",
           str(tmp_path), "--configfile", str(cfg)]
    res = subprocess.run(cmd + ["--cores", "2"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    _check_outputs(tmp_path)
    again = subprocess.run(cmd + ["-n"], capture_output=True, text=True)
    assert "Nothing to be done" in again.stdout + again.stderr
    # one final run asked for by its path in a new process: known from the choice file, re-run alone
    choice = json.loads((tmp_path / "results/leaderboard/tuning_choice.json").read_text())
    study = load_study(yaml.safe_load(cfg.read_text()))
    study.choice = lambda: choice
    from fedflat.results.leaderboard.flow import final_experiments

    rid = final_experiments(study)["dir0.1"][0][0]
    target = tmp_path / f"results/runs/{rid}/summary.json"
    before = json.loads(target.read_text())
    target.unlink()
    one = subprocess.run(cmd + ["--cores", "1", f"results/runs/{rid}/summary.json"], capture_output=True, text=True)
    assert one.returncode == 0, one.stderr[-3000:]
    assert json.loads(target.read_text())["final_acc"] == before["final_acc"]  # the same run, bit for bit
    bad = subprocess.run(cmd + ["--cores", "1", "results/runs/fmnist/iid/x/fedavg/0000000000/seed0/summary.json"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no run of study" in bad.stderr.strip().splitlines()[-1]
