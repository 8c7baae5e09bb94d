"""Settings a grid search of the same study picks (fedflat.results.papers.picks): an experiment waits until its grid's runs
are done, then runs at the grid rule's pick (best mean validation score; ties: the smaller value; a diverged cell
never); stages chain; every cell diverged takes the grid's smallest value, said so; bad picks fail in one line.
The grids' outcomes are planted as summary.json files (nothing trains)."""
import copy
import json
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.results.papers.picks import render, resolve
from fedflat.pipeline.study import load_study

BASE = {"study": "picks_test", "scale": "paper",
        "training": {"num_clients": 4, "participation": 1.0, "rounds": 3, "local_steps": 2, "batch_size": 16}}
HOLD = {"holdout": 0.2}


def grid(name, lrs, rho=0.05, extra=None):
    algos = [{"preset": "fedavg", "training": {"lr": lr}} for lr in lrs]
    algos += [{"preset": "fedsam", "params": {"rho": rho}, "training": {"lr": lr}} for lr in lrs]
    return {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0, 1], "training": HOLD,
            "algorithms": algos, **(extra or {})}


def config():
    cfg = copy.deepcopy(BASE)
    cfg["experiments"] = {
        "lr_grid": grid("lr_grid", [0.05, 0.3]),
        # stage 2: FedSAM's radius at the lr stage 1 picked for it
        "rho_grid": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0, 1],
                     "training": HOLD,
                     "algorithms": [{"preset": "fedsam", "params": {"rho": r}, "training": {"lr": {"pick": "lr"}}}
                                    for r in (0.01, 0.1)]},
        "final": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0, 1, 2],
                  "algorithms": [{"preset": "fedavg", "training": {"lr": {"pick": "lr"}}},
                                 {"preset": "fedsam", "params": {"rho": {"pick": "rho"}},
                                  "training": {"lr": {"pick": "lr"}}}]}}
    cfg["tables"] = {"lr": {"kind": "grid_search", "experiments": ["lr_grid"], "param": "lr", "metric": "last10_acc"},
                     "rho": {"kind": "grid_search", "experiments": ["rho_grid"], "param": "rho",
                             "metric": "last10_acc"},
                     "final_acc": {"experiment": "final"}}
    return cfg


def plant(study, experiment, score):
    """A summary.json for every run of `experiment`: score(run spec) -> validation last10_acc (None: diverged)."""
    for rid, _ in study.experiments[experiment]:
        acc = score(study.runs[rid])
        d = Path(study.run_dir(rid))
        d.mkdir(parents=True, exist_ok=True)
        (d / "summary.json").write_text(json.dumps(
            {"status": "completed" if acc is not None else "diverged", "eval_split": "validation",
             "last10_acc": acc, "final_acc": acc}))


def lr_of(study, experiment, preset):
    return {study.runs[r].training["lr"] for r, lab in study.experiments[experiment] if lab["preset"] == preset}


def test_stages_wait_then_run_at_the_picks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # run directories (results/runs/...) and no committed evidence
    s = load_study(config())
    assert set(s.experiments) == {"lr_grid"} and set(s.tables) == {"lr"}  # stage 2 and the finals wait
    assert s.picks["waiting"] == {"final": ["lr", "rho"], "rho_grid": ["lr"]}
    assert sorted(s.picks["held"]) == ["tables.final_acc", "tables.rho"]
    # stage 1 done: FedAvg is best at 0.3; FedSAM diverged at 0.3 (never picked) and takes 0.05
    plant(s, "lr_grid", lambda r: {("fedavg", 0.05): 0.80, ("fedavg", 0.3): 0.85, ("fedsam", 0.05): 0.82,
                                   ("fedsam", 0.3): None}[(r.algorithm, r.training["lr"])])
    s = load_study(config())
    assert set(s.experiments) == {"lr_grid", "rho_grid"} and s.picks["waiting"] == {"final": ["rho"]}
    assert lr_of(s, "rho_grid", "fedsam") == {0.05}
    assert s.picks["resolved"]["lr"]["FedAvg"] == {"value": 0.3, "score": pytest.approx(85.0), "fallback": False,
                                                   "provisional": False}
    # stage 2 done, a tie: the smaller radius
    plant(s, "rho_grid", lambda r: 0.9)
    s = load_study(config())
    assert not s.picks["waiting"] and "final_acc" in s.tables
    assert lr_of(s, "final", "fedavg") == {0.3} and lr_of(s, "final", "fedsam") == {0.05}
    assert {s.runs[r].hparams["rho"] for r, lab in s.experiments["final"] if lab["preset"] == "fedsam"} == {0.01}
    assert "| `rho` | FedSAM | 0.01 | 90.00 % |" in render(s.picks)


def test_a_grid_whose_every_cell_diverged_takes_its_smallest_value_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = load_study(config())
    plant(s, "lr_grid", lambda r: None if r.algorithm == "fedsam" else 0.8)
    s = load_study(config())
    c = s.picks["resolved"]["lr"]["FedSAM"]
    assert c["fallback"] and c["value"] == 0.05 and lr_of(s, "rho_grid", "fedsam") == {0.05}
    assert "every cell diverged" in render(s.picks)


def test_provisional_expands_every_stage_without_reading_a_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg, state = resolve(config(), provisional=True)
    assert set(cfg["experiments"]) == {"lr_grid", "rho_grid", "final"} and not state["waiting"]
    assert all(c["provisional"] for ms in state["resolved"].values() for c in ms.values())
    assert load_study(cfg).experiments["final"]


@pytest.mark.parametrize("change, key", [
    (lambda c: c["experiments"]["final"]["algorithms"][0]["training"].update(lr={"pick": "nope"}), "'nope'"),
    (lambda c: c["experiments"]["final"]["algorithms"][0]["training"].update(lr={"pick": "final_acc"}),
     "tables.final_acc"),
    (lambda c: c["experiments"]["final"]["algorithms"][0]["training"].update(lr={"pick": "lr", "x": 1}), "a pick is"),
])
def test_a_bad_pick_is_refused_in_one_line_naming_it(tmp_path, monkeypatch, change, key):
    monkeypatch.chdir(tmp_path)
    cfg = config()
    change(cfg)
    with pytest.raises(ConfigError) as e:
        load_study(cfg)
    assert key in str(e.value) and "\n" not in str(e.value)


def test_a_method_the_grid_does_not_search_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = config()
    cfg["experiments"]["final"]["algorithms"].append({"preset": "fedlesam", "training": {"lr": {"pick": "lr"}}})
    s = load_study(config())
    plant(s, "lr_grid", lambda r: 0.8)
    with pytest.raises(ConfigError, match="has no grid of FedLESAM"):
        load_study(cfg)
