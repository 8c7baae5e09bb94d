"""`python -m fedflat.leaderboard --progress`: runs done per stage (screen or tuning, continuation, final,
ablation), and which checkpoint a stage still waits for; on fake runs."""
import json
import shutil
from pathlib import Path

import pytest

from fedflat.results.leaderboard.flow import (choice_path, continuation_experiments, final_experiments, screen_path,
                                              tuning_inputs, write_choice, write_screen)
from fedflat.results.leaderboard.progress import progress
from fedflat.core.run_paths import run_of_file
from fedflat.pipeline.study import load_study

from .helpers import small_config, write_final_run

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.0, 0.01]}, "fednsam": {"rho": [0.1], "lam": [0.9]}}
LR = (0.03, 0.1, 0.3)


def _summary(path: Path, acc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"status": "completed" if acc is not None else "diverged", "eval_split": "validation",
                                "last10_acc": acc, "final_acc": acc}))


def _screen_acc(spec):
    """FedSAM's cell (lr 0.3, rho 0.01) diverges in the screen; every other cell completes."""
    if spec.algorithm == "fedsam" and (spec.training["lr"], spec.hparams["rho"]) == (0.3, 0.01):
        return None
    return 0.5 + spec.training["lr"]


@pytest.fixture
def v2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return load_study(small_config(METHODS, seeds=(0, 1), lr=LR, continuation={"cells": 2, "seeds": [0]}))


def test_progress_walks_the_screen_the_continuation_the_final_runs_and_the_ablations(v2):
    rows = dict(progress(v2))
    assert rows == {"screen": "0 of 12 runs (0 diverged)",
                    "continuation": "waits for the screen (checkpoint leaderboard_screen)",
                    "left": "not known yet: no screen run measured here"}  # these fake runs record no wall time
    for f in tuning_inputs(v2):
        _summary(Path(f), _screen_acc(v2.runs[run_of_file(f)]))
    write_screen(v2, screen_path(v2))
    rows = dict(progress(v2))
    assert rows.pop("left") == "not known yet: no continuation run measured here"
    assert rows == {"screen": "12 of 12 runs (1 diverged)", "continuation": "0 of 18 runs (0 diverged)",
                    "final": "waits for the tuning choice (checkpoint leaderboard_choice)"}
    for entries in continuation_experiments(v2).values():
        for rid, _ in entries:
            _summary(Path(v2.run_dir(rid)) / "summary.json", 0.6)
    write_choice(v2, choice_path(v2))
    rows = progress(v2)
    assert [stage for stage, _ in rows] == ["screen", "continuation", "final", "ablation", "left"]
    rows = dict(rows)
    # the Hessians' fixed cost is known; the runs' pace is not, until one is measured here
    assert rows["left"].endswith("; not counted: final, ablation (no run of it measured here yet)")
    assert rows["continuation"] == "18 of 18 runs (0 diverged)"
    assert rows["final"] == "0 of 18 runs (0 diverged), 0 of 18 Hessians"
    n_abl = int(rows["ablation"].split(" of ")[1].split()[0])
    assert n_abl > 0 and rows["ablation"].endswith(f"of {n_abl} runs (0 diverged)")
    for rid, lab in (e for entries in final_experiments(v2).values() for e in entries):
        write_final_run(Path(v2.run_dir(rid)), v2.runs[rid], None if v2.runs[rid].algorithm == "fedsam" else 0.8,
                        lab["seed"])
    assert dict(progress(v2))["final"] == "18 of 18 runs (3 diverged), 18 of 18 Hessians"


def test_progress_without_the_continuation_and_with_runs_read_from_the_committed_evidence(tmp_path, monkeypatch):
    """The screen's choice goes straight to the final runs (no continuation, no ablation)."""
    from fedflat.evidence.export import export_study

    monkeypatch.chdir(tmp_path)
    study = load_study(small_config(METHODS, seeds=(0, 1), lr=LR))
    for f in tuning_inputs(study):
        _summary(Path(f), _screen_acc(study.runs[run_of_file(f)]))
    rows = dict(progress(study))
    assert rows == {"tuning": "12 of 12 runs (1 diverged)",
                    "final": "waits for the tuning choice (checkpoint leaderboard_choice)"}
    write_choice(study, choice_path(study))
    assert dict(progress(study))["final"] == "0 of 18 runs (0 diverged), 0 of 18 Hessians"  # reads the choice
    finals = sorted(rid for entries in final_experiments(study).values() for rid, _ in entries)
    for rid in finals:
        write_final_run(Path(study.run_dir(rid)), study.runs[rid], 0.8, study.runs[rid].seed)
    assert progress(study) == [("tuning", "12 of 12 runs (1 diverged)"), ("final", "18 of 18 runs (0 diverged), 18 of 18 Hessians")]
    export_study(study, keep_legacy=True)  # a new machine (the fake screen runs record no commit: kept, marked)
    shutil.rmtree(study.run_dir(finals[0]))
    assert dict(progress(study))["final"] == "18 of 18 runs (0 diverged, 1 read from the committed evidence), 18 of 18 Hessians"


def test_time_left_at_the_measured_pace():
    from fedflat.results.leaderboard.plan import HESSIAN_JOB_S
    from fedflat.results.leaderboard.progress import time_left

    final = {"runs": 10, "done": 6, "hessians": 4, "wall": [3600.0, 3 * 3600.0], "with_hessians": True}
    # 4 pending runs at the mean 7200 s and 6 Hessians, over 2 jobs at once
    want = (4 * 7200 + 6 * HESSIAN_JOB_S) / 3600 / 2
    assert time_left({"final": final}, 2) == f"about {want:.1f} h on 2 jobs at once (7200 s per final run)"
    ablation = {"runs": 3, "done": 0, "hessians": 0, "wall": [], "with_hessians": False}
    assert time_left({"final": final, "ablation": ablation}, 2).endswith(
        "; not counted: ablation (no run of it measured here yet)")
    done = {"runs": 3, "done": 3, "hessians": 3, "wall": [5.0], "with_hessians": True}
    assert time_left({"final": done}, 2) is None
