"""One table per paper built end to end at `tiny` scale (digits stand-ins): the rendered table has
the paper's rows and columns and carries the published numbers, the scale and the seeds. FedSynSAM
Fig. 1 (trainings, landscapes, Hessians, render) too."""
import pandas as pd
import pytest
import torch

from fedflat.pipeline.build import build
from fedflat.results.papers.published import parse_published
from fedflat.results.papers.stated_settings import experiment_targets
from fedflat.pipeline.study import figure_inputs, figure_manifest, load_study, table_inputs

from .paper_helpers import paper_config

ONE_TABLE = {"fednsam": "table5", "fedsagd": "table8", "fedsol": "table5", "fedsynsam": "table4_top", "fedtoga": "table11"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    torch.set_num_threads(1)
    return tmp_path_factory.mktemp("papers")


@pytest.mark.parametrize("paper", sorted(ONE_TABLE))
def test_one_table_per_paper_end_to_end(paper, workdir):
    cfg = paper_config(paper, "tiny")
    study = load_study(cfg)
    name = ONE_TABLE[paper]
    md, csv, tex = build(study, name, workdir / paper)
    entry = cfg["tables"][name]
    rows = [r if isinstance(r, str) else r["label"] for r in entry["rows"]]
    long = pd.read_csv(csv)
    assert list(dict.fromkeys(long["row"])) == rows
    n_cols = sum(len(g.get("metrics") or entry.get("metrics") or ["acc"]) for g in entry.get("columns") or [{}])
    assert len(long) == len(rows) * n_cols
    assert (long["scale"] == "tiny").all() and (long["seeds_selected"] > 0).all()
    for label, values in entry["published"].items():
        got = long[long["row"] == label]["published_mean"].tolist()
        want = [parse_published(v).mean for v in values]
        assert got == pytest.approx(want), label
    text = md.read_text()
    assert "Scale: tiny" in text and "digits stand-ins" in text and "Seeds: [" in text
    assert all(f"| {r} " in text for r in rows)
    assert "\\begin{table}" in tex.read_text()


def test_fedsynsam_fig1_landscape_end_to_end(workdir):
    """Fig. 1 is one target with the paper's four panels: the compressed FedAvg run of each setting
    over the uncompressed run of the same partition; λ_max comes from Table I's files under its stated reading
    (hessian_clients.json: the clients' mean)."""
    cfg = paper_config("fedsynsam", "tiny")
    assert not [n for n in {**cfg.get("figures", {}), **cfg["pending_figures"]} if n.startswith("fig1_landscape_")]
    assert "fig_hessian_density" in cfg["pending_figures"]
    assert {"fig1_landscape", "table1_hessian"} <= set(experiment_targets(cfg)["t1_iid_none"])
    study = load_study(cfg)
    seed0 = {e: [study.run_dir(r) for r, lab in study.experiments[e] if lab["seed"] == 0][0] for e in study.experiments}
    m = figure_manifest(study, "fig1_landscape")
    want = [("(a) 4 bit Quantization, IID", "t1_iid_q4", "t1_iid_none"),
            ("(b) Top-k 0.25 sparsity, IID", "t1_iid_k25", "t1_iid_none"),
            ("(c) 8 bit Quantization, IID", "t1_iid_q8", "t1_iid_none"),
            ("(d) 8 bit Quantization, Dir(0.01)", "t1_dir001_q8", "t1_dir001_none")]
    assert [(p["title"], p["main"]["file"], p["overlay"]["file"]) for p in m["panels"]] == [
        (t, f"{seed0[a]}/landscape_2d.npz", f"{seed0[b]}/landscape_2d.npz") for t, a, b in want]
    hess = {f for f in figure_inputs(study, "fig1_landscape") if f.endswith("hessian_clients.json")}
    assert len(hess) == 6 and hess <= set(table_inputs(study, "table1_hessian"))  # the same files as Table I
    pdf, png = build(study, "fig1_landscape", workdir / "fedsynsam", section="figures")
    assert pdf.stat().st_size > 0 and png.stat().st_size > 0
