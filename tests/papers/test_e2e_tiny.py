"""One table per paper built end to end at `tiny` scale (digits stand-ins): the rendered table has
the paper's rows and columns and carries the published numbers, the scale and the seeds."""
import pandas as pd
import pytest
import torch

from fedflat.papers.build import build
from fedflat.papers.published import parse_published

from .paper_helpers import load_or_skip, paper_config

ONE_TABLE = {"fednsam": "table5", "fedsagd": "table8", "fedsol": "table5", "fedsynsam": "table4_top", "fedtoga": "table11"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    torch.set_num_threads(1)
    return tmp_path_factory.mktemp("papers")


@pytest.mark.parametrize("paper", sorted(ONE_TABLE))
def test_one_table_per_paper_end_to_end(paper, workdir):
    cfg = paper_config(paper, "tiny")
    study = load_or_skip(cfg)
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
