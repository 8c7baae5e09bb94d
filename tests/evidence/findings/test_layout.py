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
