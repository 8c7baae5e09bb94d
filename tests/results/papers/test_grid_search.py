"""Table kind grid_search: a validation-split search and the value it picks; test-split runs are refused."""
import json
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.results.papers.kinds_tuning import GridSearchTable, render_grid
from fedflat.pipeline.study import load_study


def _config(holdout=0.1):
    return {"study": "g", "training": {"num_clients": 4, "participation": 1.0, "rounds": 2, "holdout": holdout},
            "experiments": {"rho": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0, 1],
                                    "algorithms": [{"preset": "fedsam", "label": f"r{r}", "params": {"rho": r}}
                                                   for r in (0.01, 0.1)]}},
            "tables": {"search": {"kind": "grid_search", "experiments": ["rho"], "param": "rho"}}}


def _fake_runs(study, tmp_path, acc, split="validation"):
    m = GridSearchTable.manifest(study, "search", study.tables["search"])
    for e in m["entries"]:
        e["dir"] = str(tmp_path / e["dir"])
        Path(e["dir"]).mkdir(parents=True, exist_ok=True)
        a = acc(e["method"], e["value"], e["seed"])
        (Path(e["dir"]) / "summary.json").write_text(json.dumps(
            {"status": "completed" if a is not None else "diverged", "eval_split": split,
             "last10_acc": a, "final_acc": a}))
    return m


def test_picks_the_best_mean_over_seeds_per_method(tmp_path):
    study = load_study(_config())
    m = {"entries": [e for e in _fake_runs(study, tmp_path, lambda meth, v, s: 0.8 + (0.05 if v == 0.01 else 0.0)
                                           + 0.01 * s)["entries"] if e["method"] == "FedSAM"],
         "title": "t", "param": "rho", "metric": "last10_acc"}
    chosen = render_grid(m, tmp_path / "out")
    assert chosen == {"FedSAM": 0.01}
    md = (tmp_path / "out.md").read_text()
    assert "**85.50**" in md and "80.50" in md and "never used" in md


def test_a_method_that_diverges_everywhere_has_no_choice(tmp_path):
    study = load_study(_config())
    m = _fake_runs(study, tmp_path, lambda meth, v, s: None)
    m["entries"] = [e for e in m["entries"] if e["method"] == "FedSAM"]
    assert render_grid(m, tmp_path / "out") == {"FedSAM": None}
    assert "diverged" in (tmp_path / "out.md").read_text()


def test_runs_on_the_test_split_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"tables.search: experiment rho evaluates on the test split; .*holdout"):
        load_study(_config(holdout=0.0))
    study = load_study(_config())
    m = _fake_runs(study, tmp_path, lambda *a: 0.8, split="test")
    with pytest.raises(ConfigError, match="not on a validation split"):
        render_grid(m, tmp_path / "out")


def test_unknown_param_names_the_key():
    cfg = _config()
    cfg["tables"]["search"]["param"] = "rhoo"
    with pytest.raises(ConfigError, match=r"tables.search.param: 'rhoo' is neither"):
        load_study(cfg)


def test_runs_that_differ_only_in_an_unshown_setting_are_refused():
    """Same method, param value and seed but another uplink: averaging them as seeds would hide both."""
    cfg = _config()
    other = dict(cfg["experiments"]["rho"], uplink={"kind": "quant", "bits": 4})
    cfg["experiments"]["rho_q4"] = other
    cfg["tables"]["search"]["experiments"] = ["rho", "rho_q4"]
    with pytest.raises(ConfigError, match=r"tables.search: runs .* fall in one cell"):
        load_study(cfg)


def test_a_choice_on_the_edge_of_a_three_point_grid_is_marked(tmp_path):
    """Best at the largest of 3 values: the table says the best value may lie outside the grid; a 2-point grid
    (every choice an edge) and an interior choice are not marked."""
    cfg = _config()
    cfg["experiments"]["rho"]["algorithms"] = [{"preset": "fedsam", "label": f"r{r}", "params": {"rho": r}}
                                               for r in (0.01, 0.1, 0.5)]
    for i, (best, marked) in enumerate(((0.5, "rho at the top of its grid"), (0.01, "rho at the bottom of its grid"),
                                        (0.1, None))):
        study = load_study(cfg)
        m = _fake_runs(study, tmp_path / f"runs{i}", lambda meth, v, s: 0.9 if v == best else 0.8)
        m["entries"] = [e for e in m["entries"] if e["method"] == "FedSAM"]
        assert render_grid(m, tmp_path / f"out{i}") == {"FedSAM": best}
        row = [ln for ln in (tmp_path / f"out{i}.md").read_text().splitlines() if ln.startswith("| FedSAM")][0]
        assert (marked in row) if marked else ("of its grid" not in row)
    study = load_study(_config())  # two values: no mark
    m = _fake_runs(study, tmp_path / "two", lambda meth, v, s: 0.9 if v == 0.1 else 0.8)
    m["entries"] = [e for e in m["entries"] if e["method"] == "FedSAM"]
    render_grid(m, tmp_path / "two")
    assert "of its grid |" not in (tmp_path / "two.md").read_text()


def test_a_cell_with_one_diverged_seed_is_never_picked(tmp_path):
    """rho 0.1's surviving seed scores highest of all, but its other seed diverged: the setting diverged during
    tuning, so it is shown as diverged and 0.01 is picked (not the mean of the seeds that survived)."""
    study = load_study(_config())
    m = _fake_runs(study, tmp_path, lambda meth, v, s: (None if s == 1 else 0.95) if v == 0.1 else 0.8)
    m["entries"] = [e for e in m["entries"] if e["method"] == "FedSAM"]
    assert render_grid(m, tmp_path / "out") == {"FedSAM": 0.01}
    assert "95.00" not in (tmp_path / "out.md").read_text()


def test_a_value_a_method_never_ran_is_not_shown_as_diverged(tmp_path):
    config = _config()  # FedSAM runs both radii, FedLESAM only the first: a grid extended for one method
    config["experiments"]["rho"]["algorithms"] = [{"preset": "fedsam", "params": {"rho": r}} for r in (0.01, 0.1)] + [
        {"preset": "fedlesam", "params": {"rho": 0.01}}]
    m = _fake_runs(load_study(config), tmp_path, lambda meth, v, s: None if v == 0.1 else 0.8)
    render_grid(m, tmp_path / "out")
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:4]]
            for line in (tmp_path / "out.md").read_text().splitlines() if line.startswith("| Fed")}
    assert rows == {"FedSAM": ["**80.00**", "diverged"], "FedLESAM": ["**80.00**", "–"]}
