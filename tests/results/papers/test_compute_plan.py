"""`python -m fedflat.papers --plan`: CPU hours at reduced scale come from the shared throughput cache."""
from fedflat.results.papers.__main__ import main
from fedflat.results.papers.compute import dataset_family, run_sample_grads, summarise
from fedflat.pipeline.study import load_study

from .paper_helpers import paper_config


def test_summarise_uses_the_shared_cache_and_counts_shared_runs_once():
    study = load_study(paper_config("fedsagd", "tiny"))
    cache = {f"{s.model}|{dataset_family(s.dataset)}": 1000.0 for s in study.runs.values()}
    rows = summarise(study, measure=True, cache=cache)
    total = rows[-1]
    assert total["target"] == "(all, deduplicated)" and total["runs"] == len(study.runs)
    grads = sum(run_sample_grads(s) for s in study.runs.values())
    assert abs(total["hours"] - grads / 1000.0 / 3600) < 1e-12
    # a table's runs are a subset of all runs, so no target can cost more than the whole catalog
    assert all(r["hours"] <= total["hours"] + 1e-12 and r["runs"] <= total["runs"] for r in rows)


def test_plan_refuses_a_missing_catalog(tmp_path, capsys):
    assert main(["nosuchpaper", "--plan", "--config-dir", str(tmp_path)]) == 2
    assert "nosuchpaper.yaml" in capsys.readouterr().err


def test_epochs_are_planned_on_the_data_sets_own_size():
    """FedSAGD's EMNIST-L (the first 10 letters: 48000 samples over 500 clients) runs 20 epochs of 96
    samples, not of EMNIST's 124800/500."""
    study = load_study(paper_config("fedsagd", "paper"))
    spec = next(s for s in study.runs.values() if s.dataset == "emnist-l10" and s.algorithm == "fedavg")
    assert spec.training["local_epochs"] == 20 and spec.clients_per_round == 5
    assert run_sample_grads(spec) == 2000 * 5 * 20 * 96


def test_left_counts_only_the_runs_the_committed_evidence_does_not_hold(tmp_path, monkeypatch):
    import csv

    from fedflat.evidence.records import COLUMNS

    study = load_study(paper_config("fedsagd", "tiny"))
    cache = {f"{s.model}|{dataset_family(s.dataset)}": 1000.0 for s in study.runs.values()}
    monkeypatch.chdir(tmp_path)
    before = summarise(study, measure=True, cache=cache)
    assert all(r["left"] == r["runs"] for r in before)  # no evidence here: every run is still to run
    out = tmp_path / "results/evidence/fedsagd"
    out.mkdir(parents=True)
    with (out / "runs.csv").open("w", newline="") as fh:  # every run recorded, completed, with its Hessian
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        for rid in study.runs:
            w.writerow({**dict.fromkeys(COLUMNS, ""), "run_id": rid, "status": "completed", "final_acc": 50,
                        "last10_acc": 50, "lambda_max": 1, "trace": 1})
    after = summarise(study, measure=True, cache=cache)
    assert [r["runs"] for r in after] == [r["runs"] for r in before]  # the cost of a target does not change
    assert any(r["left"] == 0 < r["runs"] for r in after) and after[-1]["left"] < after[-1]["runs"]
