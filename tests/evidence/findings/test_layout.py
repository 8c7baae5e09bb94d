"""A new diagnostic is one declaration plus a marker in a page: the page list comes from the declarations, the
block renders from the evidence, and the drift check sees it; the table layouts print what the rule decided."""
import pytest

from fedflat.evidence.markers import MarkerError
from fedflat.evidence.pages import Context, drift, pages, render_all, write

from .helpers import grid, record, write_runs

DIAGNOSTIC = """\
findings:
- id: lr_closes_it
  question: Does a larger lr close the shortfall of FedAvg's cell?
  kind: closes_shortfall
  fixed: before_finals
  fixed_note: a test's declaration
  evidence: study
  metric: last10_acc
  seeds: [0, 1]
  units: [{each: [[{method: fedavg}]], paper: {value: 80.0}}]
  candidates: {field: lr, values: [0.05, 0.1, 0.5], head: "lr {value}"}
  baseline: 0.05
  intro: "Validation accuracy (seeds {seeds}; `{evidence}`)."
  page: {file: docs/new.md, block: new-diagnostic}
"""


def _repo(tmp_path, page: str = "# New\n\n<!-- generated:new-diagnostic -->\n<!-- /generated:new-diagnostic -->\n"):
    write_runs(tmp_path, grid({0.05: 70.0, 0.1: 79.0, 0.5: None}))
    (tmp_path / "config/new.yaml").write_text(DIAGNOSTIC)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/new.md").write_text(page)
    return Context(root=tmp_path, only=("docs/new.md",))


def test_one_declaration_and_a_marker_add_a_rendered_block(tmp_path):
    ctx = _repo(tmp_path)
    assert pages(ctx)["docs/new.md"].keys() == {"new-diagnostic"}
    text = render_all(ctx)["docs/new.md"]
    assert ("Validation accuracy (seeds 0-1; `study`).\n\n| method | paper | lr 0.05 | lr 0.1 | lr 0.5 | verdict |\n"
            "|---|---|---|---|---|---|\n| FedAvg | 80.00 | 70.00 | 79.00 | 2/2 seeds diverged | measured: 0.1 "
            "closes the gap |") in text
    bad = drift(Context(root=tmp_path, only=("docs/new.md",)))
    assert len(bad) == 1 and bad[0].startswith("docs/new.md: differs")
    assert write(Context(root=tmp_path, only=("docs/new.md",))) == ["docs/new.md"]
    assert drift(Context(root=tmp_path, only=("docs/new.md",))) == []


def test_a_declared_block_without_its_marker_and_a_block_named_twice_are_errors(tmp_path):
    ctx = _repo(tmp_path, page="# New\n")
    with pytest.raises(MarkerError, match="docs/new.md: no block 'new-diagnostic'"):
        render_all(ctx)
    (tmp_path / "config/new.yaml").write_text(DIAGNOSTIC.replace("file: docs/new.md, block: new-diagnostic",
                                                                  "file: README.md, block: readme-leaderboard-top"))
    twice = r"README.md: block 'readme-leaderboard-top' is rendered twice \(by code or a declaration\)"
    with pytest.raises(MarkerError, match=twice):
        pages(Context(root=tmp_path, only=("README.md",)))


def test_the_adopt_layouts_print_the_paper_the_cells_the_counts_and_the_pick(tmp_path):
    from fedflat.evidence.findings.declared import check
    from fedflat.evidence.findings.layout import render

    rows = [record(p, s, acc, experiment=f"{c}_{k}") for p, c, k, acc in (
        ("fedavg", "q4", "a", 79.0), ("fedavg", "q4", "b", 70.0), ("fedavg", "q8", "a", 60.0), ("fedavg", "q8", "b", 81.0),
        ("fedsam", "q4", "a", 79.0), ("fedsam", "q4", "b", 79.5), ("fedsam", "q8", "a", 50.0), ("fedsam", "q8", "b", 50.0))
        for s in (0, 1)]
    ctx = write_runs(tmp_path, rows)
    spec = {"id": "g", "question": "q", "kind": "adopt_candidate", "fixed": "post_hoc", "evidence": "study",
            "metric": "last10_acc", "seeds": [0, 1], "paper": {"value": 80.0}, "page": {"file": "p", "block": "b"},
            "units": [{"each": [[{"method": "fedavg"}, {"method": "fedsam"}],
                                [{"column": c, "where": {"experiment": [f"{c}_a", f"{c}_b"]}} for c in ("q4", "q8")]]}],
            "candidates": [{"value": k, "where": {"experiment": [f"q4_{k}", f"q8_{k}"]}} for k in "ab"],
            "words": {"pick": "{group}: {candidate} ({count} of {units})", "adopted": "Adopted: {picks}."}}
    by = render(ctx, check({**spec, "per": "method", "layout": {"kind": "by_candidate", "adopted_mark": " *"}}, "t"))
    assert "| FedAvg | paper | 80.00 | 80.00 | |\n| FedAvg | a * | 79.00 | 60.00 | 1 |\n| FedAvg | b | 70.00 | 81.00 | 1 |" \
        in by and by.endswith("Adopted: FedAvg: a (1 of 2); FedSAM: a (1 of 2).")
    across = render(ctx, check({**spec, "id": "h", "layout": {"kind": "across"}, "words": {"adopted": "Adopted: {candidate}; {counts}."}},
                               "t"))
    assert "| method | q4, paper | q8, paper | q4, a | q4, b | q8, a | q8, b |" in across
    assert "| FedSAM | 80.00 | 80.00 | 79.00 * | 79.50 * | 50.00 | 50.00 |" in across
    assert across.endswith("Adopted: a; a: 2, b: 2.")  # a tie: the declared order


def test_paired_claims_sharing_a_block_are_one_table_and_each_says_what_it_waits_for(tmp_path):
    claim = ("- {{id: {i}, question: {q}, kind: paired_claim, fixed: before_finals, evidence: {ev}, metric: final_acc,\n"
             "   seeds: [0, 1, 2], units: [{{name: u}}], treatment: {{preset: {p}}}, baseline: {{preset: fedavg}},\n"
             "   paper: {{value: 1.0}}, page: {{file: docs/new.md, block: claims}}}}\n")
    page = "# New\n\n<!-- generated:claims -->\n<!-- /generated:claims -->\n"
    rows = [record(p, s, 80.0 + d * (s + 1) / 2) for p, d in (("fedsam", 1.0), ("fedlesam", 0.0)) for s in range(3)]
    rows += [record("fedavg", s, 80.0) for s in range(3)]
    write_runs(tmp_path, rows)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/new.md").write_text(page)
    (tmp_path / "config/c.yaml").write_text("findings:\n" + claim.format(i="a", q="SAM beats Avg", ev="study", p="fedsam")
                                            + claim.format(i="b", q="LESAM beats Avg", ev="study", p="fedlesam"))
    text = render_all(Context(root=tmp_path, only=("docs/new.md",)))["docs/new.md"]
    assert "| claim | paper | ours (95 % interval) | p (Holm) | verdict | detectable at 80 % power |" in text
    assert "| SAM beats Avg | +1.00 | +1.00 [" in text and "| LESAM beats Avg | +1.00 | +0.00 [" in text
    assert text.count("| claim |") == 1  # one table, then the count of each verdict
    assert "supported: 0; contradicted: 1; inconclusive: 1; waiting for runs: 0." in text
    # before any record of their study, every claim is a line of the table saying what it waits for
    (tmp_path / "config/c.yaml").write_text("findings:\n" + claim.format(i="a", q="q", ev="later", p="fedsam"))
    text = render_all(Context(root=tmp_path, only=("docs/new.md",)))["docs/new.md"]
    assert "| q | +1.00 | - | - | waits for its runs: 0 of 6 in `later` | - |" in text
    assert "waiting for runs: 1." in text
