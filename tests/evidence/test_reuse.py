"""Runs recorded in the committed evidence are read back instead of re-run (fedflat.core.recorded): a selection reads
the same numbers from a record as from the run's summary.json, the workflow's inputs leave recorded runs out,
and `reuse_evidence: false` or a missing measurement brings them back."""
import json
import shutil
from pathlib import Path

import pytest

from fedflat.evidence.export import export_study
from fedflat.results.papers.kinds_tuning import GridSearchTable
from fedflat.pipeline.report.grids import grid_choice, grid_scores
from fedflat.results.papers.cell_stats import summary_metric
from fedflat.core.recorded import covers, read_outcome, recorded
from fedflat.pipeline.study import load_study

from .helpers import write_run


def _config(**top):
    return {"study": "g", "training": {"num_clients": 4, "participation": 1.0, "rounds": 2, "holdout": 0.1},
            "experiments": {"rho": {"datasets": ["digits"], "models": ["mlp"], "partitions": ["iid"], "seeds": [0, 1],
                                    "algorithms": [{"preset": "fedsam", "label": f"r{r}", "params": {"rho": r}}
                                                   for r in (0.01, 0.1)]}},
            "tables": {"search": {"kind": "grid_search", "experiments": ["rho"], "param": "rho"}}, **top}


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = load_study(_config())
    # rho 0.01 wins by 5 points; one rho 0.1 seed diverged
    for rid, spec in s.runs.items():
        diverged = spec.hparams["rho"] == 0.1 and spec.seed == 1
        write_run(Path(s.run_dir(rid)), spec, None if diverged else 0.8 + (0.05 if spec.hparams["rho"] == 0.01 else 0)
                  + 0.01 * spec.seed, lam=2.0 if spec.seed == 0 else None, eval_split="validation")
    return s


def _manifest(s):
    return GridSearchTable.manifest(s, "search", s.tables["search"])


def test_a_record_reads_back_as_the_summary_it_came_from(study):
    before = grid_scores(_manifest(study))
    export_study(study)
    summaries = {rid: json.loads(Path(study.run_dir(rid), "summary.json").read_text()) for rid in study.runs}
    shutil.rmtree("results/runs")  # a new machine: the run directories are gone, the evidence is committed
    for rid, s in summaries.items():
        got = study.outcome(rid)
        assert got["status"] == s["status"] and got["eval_split"] == "validation"
        if s["status"] == "completed":  # percent in the record, a fraction in summary.json
            assert got["last10_acc"] == pytest.approx(s["last10_acc"]) and got["final_acc"] == pytest.approx(s["final_acc"])
        else:
            assert got["last10_acc"] is None
        assert got["source"].startswith("evidence:g@")
    after = grid_scores(_manifest(study))
    assert after.drop(columns="acc").equals(before.drop(columns="acc"))
    ok = before["status"] == "completed"  # a diverged run's accuracy is None in fl.engine's summary, NaN here
    assert after["acc"][ok].tolist() == pytest.approx(before["acc"][ok].tolist()) and after["acc"][~ok].isna().all()
    assert grid_choice(_manifest(study))["FedSAM"]["value"] == 0.01
    dirs = [study.run_dir(r) for r in study.runs if study.runs[r].hparams["rho"] == 0.1]
    cell = summary_metric(dirs, "last10_acc")
    assert cell.mean == pytest.approx(80.0) and cell.diverged == 1


def test_the_workflow_skips_recorded_runs_unless_told_not_to(study):
    rids = sorted(study.runs)
    assert len(GridSearchTable.inputs(study, "search", study.tables["search"])) == len(rids)
    export_study(study)
    shutil.rmtree("results/runs")
    assert GridSearchTable.inputs(study, "search", study.tables["search"]) == []
    fresh = load_study(_config(reuse_evidence=False))
    assert len(GridSearchTable.inputs(fresh, "search", fresh.tables["search"])) == len(rids)
    # a completed run whose Hessian is not recorded is still needed by a reader of lambda_max; the diverged one
    # (rho 0.1, seed 1) has no model to measure, and its record covers it as it is
    seed1 = [r for r in rids if study.runs[r].seed == 1]
    ok1 = [r for r in seed1 if study.runs[r].hparams["rho"] == 0.01]
    assert all(covers(r) for r in rids) and not any(covers(r, ("lambda_max",)) for r in ok1)
    assert all(covers(r, ("lambda_max",)) for r in set(seed1) - set(ok1))
    assert sorted(study.outcome_inputs(rids, needs=("lambda_max",))) == sorted(
        f"{study.run_dir(r)}/summary.json" for r in ok1)


def test_a_run_neither_on_disk_nor_recorded_is_named(study):
    rid = sorted(study.runs)[0]
    shutil.rmtree(study.run_dir(rid))
    assert recorded(rid) is None
    with pytest.raises(FileNotFoundError, match=r"summary.json: missing, and no committed evidence records run"):
        read_outcome(study.run_dir(rid), rid)


def test_reuse_evidence_takes_what_users_type_and_nothing_else():
    """`snakemake --config reuse_evidence=false` passes the string 'false' (the README's re-run command)."""
    from fedflat.core.errors import ConfigError

    for typed, want in (("false", False), ("False", False), ("no", False), ("true", True), (False, False), (1, True)):
        assert load_study(_config(reuse_evidence=typed)).reuse_evidence is want, typed
    for bad in ("maybe", 2, [True]):
        with pytest.raises(ConfigError, match="reuse_evidence: must be true or false"):
            load_study(_config(reuse_evidence=bad))


def test_a_portable_study_reuses_only_portable_records_of_todays_numerics_version(study):
    """A native record, one of another numerics version, a dirty one or one marked legacy never stands for a run of
    a portable study; a native study (no promise across machines) reuses any record of the run."""
    import pandas as pd

    from fedflat.core.util.numerics import NUMERICS_VERSION

    export_study(study)
    shutil.rmtree("results/runs")
    rid = sorted(study.runs)[0]
    assert covers(rid, numerics="portable") and covers(rid, numerics="native")
    assert study.outcome(rid)["status"] in ("completed", "diverged", "collapsed")
    path = Path("results/evidence/g/runs.csv")
    good = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col, value in (("numerics", "native"), ("numerics_version", str(NUMERICS_VERSION + 1)),
                       ("git_commit", "abc123-dirty"), ("legacy", "made from a modified working tree")):
        bad = good.copy()
        bad.loc[bad["run_id"] == rid, col] = value
        bad.to_csv(path, index=False)
        assert not covers(rid, numerics="portable"), col
        assert covers(rid, numerics="native"), col
        assert study.numerics == "portable" and rid in study.unrecorded([rid])
        with pytest.raises(FileNotFoundError):  # its progress and tables never read the record as this study's run
            study.outcome(rid)


def test_a_table_of_analysis_values_reads_the_records_the_evidence_keeps(tmp_path, monkeypatch):
    """A paper_table whose file: metric a record keeps (hessian_clients.json's lambda_max_mean, FedSynSAM Table I's
    stated reading) asks only for the runs the evidence lacks that value for, and renders the recorded value;
    a file the record does not keep (metrics.csv columns, other keys) still needs the run directory."""
    from fedflat.results.papers.kinds_paper import PaperTable
    from fedflat.results.papers.cell_stats import file_metric

    monkeypatch.chdir(tmp_path)
    metric = "file:hessian_clients.json:lambda_max_mean"
    cfg = _config(tables={"t1": {"kind": "paper_table", "experiment": "rho", "rows": ["r0.01", "r0.1"],
                                 "metrics": [metric, "acc"]}})
    s = load_study(cfg)
    for rid, spec in s.runs.items():
        write_run(Path(s.run_dir(rid)), spec, 0.8, eval_split="validation")
        if spec.seed == 0:  # only seed 0 has protocol (b) measured
            Path(s.run_dir(rid), "hessian_clients.json").write_text(json.dumps({"lambda_max_mean": 3.0 + spec.hparams["rho"]}))
    export_study(s)
    shutil.rmtree("results/runs")
    needed = PaperTable.inputs(s, "t1", s.tables["t1"])
    seed1 = sorted(r for r in s.runs if s.runs[r].seed == 1)
    assert sorted(needed) == sorted([f"{s.run_dir(r)}/summary.json" for r in seed1]
                                    + [f"{s.run_dir(r)}/hessian_clients.json" for r in seed1])
    seed0 = [s.run_dir(r) for r in sorted(s.runs) if s.runs[r].seed == 0]
    cell = file_metric(seed0, "hessian_clients.json", "lambda_max_mean")
    assert sorted(cell.per_seed) == pytest.approx([3.01, 3.1])
    with pytest.raises(FileNotFoundError, match=r"hessian_clients.json: missing, and no committed record keeps"):
        file_metric([s.run_dir(seed1[0])], "hessian_clients.json", "lambda_max_mean")
    with pytest.raises(FileNotFoundError, match=r"hessian_clients.json: missing"):
        file_metric(seed0, "hessian_clients.json", "trace_mean")


def test_a_run_written_under_the_old_loss_key_reads_as_final_loss(study):
    """Runs written before 29 Nov 2026 named the eval split's final loss "final_test_loss" (also on validation): the
    record and every reader of summary.json take it as final_loss, and a wrong key would leave the record's NaN."""
    rid = next(r for r, spec in study.runs.items() if spec.seed == 0)
    path = Path(study.run_dir(rid), "summary.json")
    s = json.loads(path.read_text())
    s["final_test_loss"] = 0.25
    del s["final_loss"]
    path.write_text(json.dumps(s))
    got = read_outcome(study.run_dir(rid), rid)
    assert got["final_loss"] == 0.25 and "final_test_loss" not in got
    assert summary_metric([study.run_dir(rid)], "final_loss").mean == pytest.approx(0.25)
    export_study(study)
    import pandas as pd
    runs = pd.read_csv("results/evidence/g/runs.csv").set_index("run_id")
    assert runs.loc[rid, "final_loss"] == pytest.approx(0.25)
