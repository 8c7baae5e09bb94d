"""The tuning choice (what the checkpoint writes) and the final runs it registers, on fake tuning outputs."""
import json
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.results.leaderboard.flow import compute_choice, final_experiments, tuning_inputs
from fedflat.results.papers.kinds_tuning import GridSearchTable, render_grid
from fedflat.pipeline.study import load_study

from .helpers import small_config

METHODS = {"fedavg": {}, "fedsam": {"rho": [0.01, 0.1]}, "fedacg": {"lam": [0.7], "mu": [0.001, 0.01]}, "scaffold": {}}


def _acc(spec):
    """Validation accuracy of a fake tuning run; SCAFFOLD diverges at every grid point."""
    if spec.algorithm == "scaffold":
        return None
    best = {"fedavg": (0.03, {}), "fedsam": (0.1, {"rho": 0.01}), "fedacg": (0.03, {"mu": 0.01})}[spec.algorithm]
    hit = spec.training["lr"] == best[0] and all(spec.hparams[k] == v for k, v in best[1].items())
    return 0.8 if hit else 0.7


def _fake_tuning(study, root: Path):
    for f in tuning_inputs(study):
        spec = study.runs[str(Path(f).parent)[len("results/runs/"):]]
        a = _acc(spec)
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text(json.dumps({"status": "completed" if a is not None else "diverged",
                                          "eval_split": "validation", "last10_acc": a, "final_acc": a}))


def test_choice_is_the_best_validation_cell_over_lr_and_the_methods_own_grid(tmp_path, monkeypatch):
    study = load_study(small_config(METHODS, lr=(0.03, 0.1)))
    monkeypatch.chdir(tmp_path)
    _fake_tuning(study, tmp_path)
    chosen = compute_choice(study)["partitions"]["dir0.3"]
    assert chosen["fedavg"] == {"lr": 0.03, "params": {}, "score": pytest.approx(80.0)}
    assert chosen["fedsam"]["lr"] == 0.1 and chosen["fedsam"]["params"] == {"rho": 0.01}
    # a key with one value does not vary among the runs, yet it is part of the chosen setting
    assert chosen["fedacg"]["params"] == {"lam": 0.7, "mu": 0.01} and chosen["fedacg"]["lr"] == 0.03
    assert chosen["scaffold"] is None
    # the grid_search table shows every (method, setting) row and the same choice
    spec = study.tables["tuning"]
    render_grid(GridSearchTable.manifest(study, "tuning", spec), tmp_path / "tuning")
    md = (tmp_path / "tuning.md").read_text()
    assert "| FedSAM (ρ=0.01)" in md and "| FedSAM (ρ=0.1)" in md and "lr=0.1, ρ=0.01" in md
    assert "| FedACG (μ=0.01)" in md and "never used" in md
    assert "| chosen" in md and "partitions not tuned take that choice" in md  # no continuation: the screen chooses


def test_final_runs_are_registered_once_the_choice_is_known(tmp_path, monkeypatch):
    study = load_study(small_config(METHODS, seeds=(0, 1), lr=(0.03, 0.1)))
    with pytest.raises(ConfigError, match="tuning choice is unknown"):
        final_experiments(study)
    monkeypatch.chdir(tmp_path)
    _fake_tuning(study, tmp_path)
    n_tuning = len(study.runs)
    study.choice = lambda: compute_choice(study)
    finals = final_experiments(study)
    assert list(finals) == ["iid", "dir0.3", "dir0.1"]
    runs = [study.runs[r] for entries in finals.values() for r, _ in entries]
    assert len(runs) == 3 * 3 * 2 and len(study.runs) == n_tuning + len(runs)  # SCAFFOLD: no working setting
    for s in runs:  # the train and partition rules find every final run and partition in the study
        assert study.partitions[s.partition_id()]["seed"] == s.seed
        assert s.training["holdout"] == 0.0
    fedacg = [s for s in runs if s.algorithm == "fedacg"]
    assert {(s.training["lr"], s.hparams["lam"], s.hparams["mu"]) for s in fedacg} == {(0.03, 0.7, 0.01)}
