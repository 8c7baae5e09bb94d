"""A legacy record (one that cannot be regenerated: marked by its export, or made from a modified tree, or before the
numerics fields existed) never feeds a verdict: a finding reads regenerable records only (the `records: all` variant
went with the legacy v2 findings that declared it)."""
import pandas as pd
import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.findings.decide import evaluate
from fedflat.evidence.legacy import label, reason, regenerable_only

from .helpers import finding, record, write_runs

DIRTY = "made from a modified working tree (87632fb05307-dirty)"
DIFFS = [2.0, 2.1, 1.9]  # treatment - baseline per seed: supported against a paper margin of 2


def _claim(tmp_path, treatment_kw=None, **spec):
    """FedSAM beats FedAvg by 2 on seeds 0-2; `treatment_kw[seed]` changes that seed's treatment record."""
    kw = treatment_kw or {}
    rows = [record("fedsam", s, 80.0 + d, **kw.get(s, {})) for s, d in enumerate(DIFFS)]
    rows += [record("fedavg", s, 80.0) for s in range(3)]
    ctx = write_runs(tmp_path, rows)
    f = finding(kind="paired_claim", seeds=[0, 1, 2], units=[{"name": "u"}], treatment={"preset": "fedsam"},
                baseline={"preset": "fedavg"}, paper={"value": 2.0}, **spec)
    return ctx, f, evaluate(ctx, f)["units"][0]


def test_a_planted_legacy_record_leaves_the_claim_waiting_and_says_so(tmp_path):
    _, _, clean = _claim(tmp_path / "clean")
    assert clean["state"] == "supported"
    for i, planted in enumerate(({"legacy": DIRTY}, {"git_commit": "87632fb05307-dirty"}, {"numerics": ""},
                                 {"git_commit": ""})):
        _, _, r = _claim(tmp_path / str(i), {2: planted})
        assert r["state"] == "waits", planted  # the seed's record is set aside, so the claim has 5 of its 6 runs
        assert r["verdict"] == "waits for its runs: 5 of 6 in `study`; 1 legacy record(s) set aside", planted
        assert r["ours"] != r["ours"] or r["n"] == 2  # no verdict was computed from it


def test_a_legacy_record_never_moves_a_verdict(tmp_path):
    """A legacy record of a seed the claim already holds (another experiment, a value that would flip the claim) is
    dropped before the cells are formed: the verdict is the clean one, and no 'two records of one seed' error."""
    rows = [record("fedsam", s, 80.0 + d) for s, d in enumerate(DIFFS)] + [record("fedavg", s, 80.0) for s in range(3)]
    rows += [record("fedsam", s, 60.0, experiment="old", legacy=DIRTY) for s in range(3)]
    ctx = write_runs(tmp_path, rows)
    f = finding(kind="paired_claim", seeds=[0, 1, 2], units=[{"name": "u"}], treatment={"preset": "fedsam"},
                baseline={"preset": "fedavg"}, paper={"value": 2.0})
    r = evaluate(ctx, f)["units"][0]
    assert r["state"] == "supported" and r["ours"] == pytest.approx(2.0)
    # the same records not marked legacy are two per seed: the marked ones did reach the filters and were dropped
    ctx = write_runs(tmp_path / "unmarked", [{**x, "legacy": ""} for x in rows])
    with pytest.raises(ConfigError, match="share a seed"):
        evaluate(ctx, finding(id="g", kind="paired_claim", seeds=[0, 1, 2], units=[{"name": "u"}],
                              treatment={"preset": "fedsam"}, baseline={"preset": "fedavg"}, paper={"value": 2.0}))


def test_the_record_rule_and_the_label():
    ok = record("fedsam", 0, 80.0)
    assert reason(ok) is None
    assert reason({**ok, "legacy": "kept by --keep-legacy"}) == "kept by --keep-legacy"
    assert reason({**ok, "git_commit": "abc-dirty"}).startswith("made from a modified working tree")
    assert reason({**ok, "numerics": float("nan")}).startswith("no numerics fields")
    runs = pd.DataFrame([ok, {**ok, "legacy": DIRTY},
                         {**ok, "legacy": "made from a modified working tree (f00ba4-dirty)"},
                         {**ok, "git_commit": "", "legacy": ""}])
    assert len(regenerable_only(runs)) == 1
    assert label(runs, "Legacy v2") == (
        "**Legacy v2 (not regenerable)**: 3 of the 4 records behind this block cannot be re-run from the commit they "
        "name (made from a modified working tree: 2; no commit recorded: 1); shown as they were measured, they feed "
        "no verdict.")
    assert label(runs.iloc[:1]) == ""


def test_a_table_arm_reads_only_the_regenerable_runs_its_cells_csv_names(tmp_path):
    """v3's claims name a row of an exported table: the runs cells.csv lists for it, legacy ones set aside."""
    rows = [record("fedsam", s, 80.0 + d) for s, d in enumerate(DIFFS)] + [record("fedavg", s, 80.0) for s in range(3)]
    rows[1]["legacy"] = DIRTY
    ctx = write_runs(tmp_path, rows)
    cells = [{"table": "t2", "row": "FedSAM" if r["preset"] == "fedsam" else "FedAvg", "column": "Q4 / acc",
              "run_id": r["run_id"]} for r in rows]
    pd.DataFrame(cells).to_csv(tmp_path / "results/evidence/study/cells.csv", index=False)
    spec = dict(kind="paired_claim", seeds=[0, 1, 2], metric="final_acc", select={"table": "t2", "column": "Q4"},
                treatment={"row": "FedSAM"}, baseline={"row": "FedAvg"}, paper={"value": 2.0})
    r = evaluate(ctx, finding(**spec))["units"][0]
    assert r["state"] == "waits" and "5 of 6" in r["verdict"] and "1 legacy record(s) set aside" in r["verdict"]
    rows[1]["legacy"] = ""  # the same record, regenerable: the claim has its six runs
    ctx = write_runs(tmp_path / "unmarked", rows)
    pd.DataFrame(cells).to_csv(tmp_path / "unmarked/results/evidence/study/cells.csv", index=False)
    r = evaluate(ctx, finding(id="g", **spec))["units"][0]
    assert r["state"] == "supported"
