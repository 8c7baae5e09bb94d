"""Evidence export: one record per finished run from the real on-disk files, cells per table, records of runs
made elsewhere kept, nothing exported for a run that has not finished."""
import json
from pathlib import Path

import pandas as pd
import pytest

from fedflat.evidence.export import export_study
from fedflat.evidence.records import COLUMNS
from fedflat.pipeline.study import load_config_file, load_study

from .helpers import write_run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    study = load_study(load_config_file(REPO / "config" / "tiny.yaml"))
    monkeypatch.chdir(tmp_path)
    return study


def test_records_come_from_the_run_files(tiny, tmp_path):
    rids = sorted(tiny.runs)
    done = rids[:3]
    write_run(Path(tiny.run_dir(done[0])), tiny.runs[done[0]], 0.8125, lam=3.5)
    # FedSynSAM Table I's protocols (b) and (c) on the final model: their own record columns
    (Path(tiny.run_dir(done[0])) / "hessian_clients.json").write_text(json.dumps({"lambda_max_mean": 7.5,
                                                                                   "lambda_max_max": 9.25}))
    (Path(tiny.run_dir(done[0])) / "hessian_test.json").write_text(json.dumps({"lambda_max": 4.5}))
    write_run(Path(tiny.run_dir(done[1])), tiny.runs[done[1]], None)  # diverged in its last round
    write_run(Path(tiny.run_dir(done[2])), tiny.runs[done[2]], 0.5, commit="def456")
    n = export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    assert n["runs"] == 3 and n["new"] == 3
    runs = pd.read_csv("ev/tiny/runs.csv", dtype={"git_commit": str})
    assert tuple(runs.columns) == COLUMNS
    r = runs.set_index("run_id")
    a, b = r.loc[done[0]], r.loc[done[1]]
    spec = tiny.runs[done[0]]
    assert a["final_acc"] == pytest.approx(81.25) and a["lambda_max"] == pytest.approx(3.5)
    assert a["trace"] == pytest.approx(35.0) and a["flatness_mean"] == pytest.approx(5.0)
    assert (a["lambda_max_clients_mean"], a["lambda_max_clients_max"], a["lambda_max_test"]) == (7.5, 9.25, 4.5)
    assert pd.isna(r.loc[done[2], "lambda_max_clients_mean"])
    assert a["peak_rss_mb"] == pytest.approx(512.25) and a["git_commit"] == "abc123" and a["status"] == "completed"
    assert a["settings_hash"] == spec.digest() and a["seed"] == spec.seed and a["preset"] == spec.algorithm
    assert json.loads(a["hparams"]) == spec.hparams and a["lr"] == spec.training["lr"]
    assert "digits" in a["data"]
    assert b["status"] == "diverged" and b["diverged_round"] == 4 and pd.isna(b["final_acc"])
    assert r.loc[done[2], "git_commit"] == "def456"
    cells = pd.read_csv("ev/tiny/cells.csv")
    assert set(cells["table"]) <= set(tiny.tables) and len(cells)
    assert set(cells["run_id"]) <= set(tiny.runs)


def test_reexport_keeps_records_of_runs_absent_here_unless_pruned(tiny):
    rids = sorted(tiny.runs)
    for rid in rids[:2]:
        write_run(Path(tiny.run_dir(rid)), tiny.runs[rid], 0.7)
    export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    import shutil

    shutil.rmtree(tiny.run_dir(rids[0]))  # a run made in an earlier session, gone from this machine
    write_run(Path(tiny.run_dir(rids[1])), tiny.runs[rids[1]], 0.9)  # re-run: its record is replaced
    n = export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    runs = pd.read_csv("ev/tiny/runs.csv").set_index("run_id")
    assert n["new"] == 0 and set(runs.index) == set(rids[:2])
    assert runs.loc[rids[1], "final_acc"] == pytest.approx(90.0)
    export_study(tiny, root=Path("ev"), figures_root=Path("fig"), prune=True)
    assert set(pd.read_csv("ev/tiny/runs.csv")["run_id"]) == {rids[1]}


def test_tables_and_figures_are_copied_when_they_exist(tiny):
    t = next(iter(tiny.tables))
    Path(tiny.tables_dir).mkdir(parents=True)
    (Path(tiny.tables_dir) / f"{t}.md").write_text("| a |\n")
    f = next(iter(tiny.figures))
    Path(tiny.figures_dir).mkdir(parents=True)
    (Path(tiny.figures_dir) / f"{f}.png").write_bytes(b"png")
    n = export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    assert n["tables"] == 1 and n["figures"] == 1 and n["runs"] == 0
    assert Path(f"ev/tiny/tables/{t}.md").read_text() == "| a |\n" and Path(f"fig/tiny/{f}.png").exists()


def test_a_kept_record_is_listed_under_every_experiment_that_reuses_its_run_today(tiny):
    """A recorded run whose directory is gone keeps its outcome, but which experiments it belongs to comes from
    today's config: a newer experiment with the same settings (the same run id) lists it too."""
    rid = sorted(tiny.runs)[0]
    write_run(Path(tiny.run_dir(rid)), tiny.runs[rid], 0.7)
    export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    csv = Path("ev/tiny/runs.csv")
    old = pd.read_csv(csv, dtype={"git_commit": str})
    old.loc[old["run_id"] == rid, "experiments"] = "an_experiment_since_renamed"
    old.to_csv(csv, index=False)
    import shutil

    shutil.rmtree(tiny.run_dir(rid))
    export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    got = pd.read_csv(csv).set_index("run_id").loc[rid, "experiments"].split(";")
    want = sorted(e for e, entries in tiny.experiments.items() if any(r == rid for r, _ in entries))
    assert sorted(got) == want and want
    assert pd.read_csv(csv).set_index("run_id").loc[rid, "final_acc"] == pytest.approx(70.0)


def test_a_record_no_experiment_lists_any_more_moves_to_superseded(tiny):
    """A corrected setting gives a cell a new run id: the old run's record, listed under an experiment that today
    holds other runs, leaves runs.csv for superseded.csv (kept, not lost); a record under an experiment this
    machine does not define (a stage whose checkpoint is elsewhere) stays."""
    rid = sorted(tiny.runs)[0]
    write_run(Path(tiny.run_dir(rid)), tiny.runs[rid], 0.7)
    export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    csv = Path("ev/tiny/runs.csv")
    old = pd.read_csv(csv, dtype={"git_commit": str})
    stale, elsewhere = old.iloc[0].copy(), old.iloc[0].copy()
    stale["run_id"], elsewhere["run_id"] = "digits/iid/a_setting_since_corrected/seed0", "digits/iid/final_elsewhere/seed0"
    elsewhere["experiments"] = "final_iid"
    pd.concat([old, pd.DataFrame([stale, elsewhere])], ignore_index=True).to_csv(csv, index=False)
    n = export_study(tiny, root=Path("ev"), figures_root=Path("fig"))
    assert n["superseded"] == 1
    assert set(pd.read_csv(csv)["run_id"]) == {rid, elsewhere["run_id"]}
    gone = pd.read_csv("ev/tiny/superseded.csv")
    assert list(gone["run_id"]) == [stale["run_id"]] and gone["final_acc"].iloc[0] == pytest.approx(70.0)
    assert export_study(tiny, root=Path("ev"), figures_root=Path("fig"))["superseded"] == 0  # idempotent
    assert len(pd.read_csv("ev/tiny/superseded.csv")) == 1
