"""When the v3 FedSynSAM study's evidence is exported (results/evidence/fedsynsam_v3: runs.csv, cells.csv, tables),
README.md and docs/reproduction.md show its verdicts and tables with no page work: the claims read the runs its
cells.csv lists, the summary counts them, the target tables come from it without the legacy label. Stood in for here
by the catalog's v2 records re-marked as made at one clean commit in portable numerics (their values are beside the
point: what is checked is that the pages pick them up)."""
import shutil
from pathlib import Path

import pandas as pd
import pytest

import fedflat.plugins  # noqa: F401  (the presets the tuning configs' findings name)
from fedflat.evidence.pages import Context, drift, render_all

REPO = Path(__file__).resolve().parents[2]
V3 = "fedsynsam_v3"
TABLES = ("table2_A_fmnist", "table2_B_fmnist", "table2_C_fmnist", "table1_hessian")


@pytest.fixture(scope="module")
def v3_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("v3")
    for p in ("README.md", "docs/reproduction.md", "docs/reproduction_methods.md", "docs/atlas.md"):
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / p, root / p)
    shutil.copytree(REPO / "config", root / "config")
    for d in ("results/evidence", "figures/evidence"):
        shutil.copytree(REPO / d, root / d)
    src, out = root / "results/evidence/fedsynsam", root / "results/evidence" / V3
    shutil.rmtree(out, ignore_errors=True)  # the stand-in replaces whatever of the study is committed so far
    (out / "tables").mkdir(parents=True)
    cells = pd.read_csv(src / "cells.csv", dtype=str)
    cells = cells[cells["table"].isin(TABLES)]
    runs = pd.read_csv(src / "runs.csv", dtype=str)
    runs = runs[runs["run_id"].isin(set(cells["run_id"]))].assign(git_commit="0123456789ab", numerics="portable",
                                                                  legacy="")
    runs.to_csv(out / "runs.csv", index=False)
    cells.to_csv(out / "cells.csv", index=False)
    for t in TABLES:
        for ext in ("md", "csv"):
            shutil.copyfile(src / "tables" / f"{t}.{ext}", out / "tables" / f"{t}.{ext}")
    return root


def test_v3_evidence_fills_the_verdict_and_the_tables_with_no_page_work(v3_repo):
    ctx = Context(root=v3_repo, only=("README.md", "docs/reproduction.md"))
    out = render_all(ctx)
    readme, page = out["README.md"], out["docs/reproduction.md"]
    verdict = readme[readme.index("<!-- generated:readme-fedsynsam-verdict -->"):]
    assert "waiting for runs 31" not in verdict  # the claims read the exported runs
    assert "Evidence: 342 regenerable records of `fedsynsam_v3`, made at commit `0123456789ab` in portable numerics" \
        in verdict
    assert "detects a mean of the per-seed differences" in verdict and "(median over 12 claims)" in verdict
    claims = page[page.index("<!-- generated:fedsynsam-claims -->"):page.index("<!-- /generated:fedsynsam-claims -->")]
    assert "waits for its runs" not in claims and claims.count("| FedSynSAM beats") == 24
    table = page[page.index("<!-- generated:fedsynsam-table2_A_fmnist -->"):]
    table = table[:table.index("<!-- /generated")]
    assert "From `fedsynsam_v3`" in table and "Legacy" not in table
    # a v3 gap over 2 points has no cause until the cause file names one for v3's cells: said, never borrowed from v2
    assert "| none registered |" in table
    assert drift(ctx)  # the committed pages differ: the verdict moved with the evidence
