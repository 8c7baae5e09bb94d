"""`python -m fedflat.papers --plan`: CPU hours at reduced scale come from the shared throughput cache."""
from fedflat.papers.__main__ import main
from fedflat.papers.compute import dataset_family, run_sample_grads, summarise

from .paper_helpers import load_or_skip, paper_config


def test_summarise_uses_the_shared_cache_and_counts_shared_runs_once():
    study = load_or_skip(paper_config("fedsagd", "tiny"))
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
    study = load_or_skip(paper_config("fedsagd", "paper"))
    spec = next(s for s in study.runs.values() if s.dataset == "emnist-l10" and s.algorithm == "fedavg")
    assert spec.training["local_epochs"] == 20 and spec.clients_per_round == 5
    assert run_sample_grads(spec) == 2000 * 5 * 20 * 96
