"""Kind `tables`: a study's exported tables and figures shown as its rules rendered them, once every table is in,
opened by a declared `pattern` rule (FedSOL Combined's reading: the paper's failing rows fail, a reading's row trains)."""
import math
from pathlib import Path

import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.findings.declared import check
from fedflat.evidence.findings.shown import PENDING, supported
from fedflat.evidence.pages import Context, render_all

BASE, DEC, KEPT = "SCAFFOLD (Base)", "Combined, decoupled", "Combined, kept in the step"
RULE = {"threshold": 20, "fails": [BASE], "readings": {"decoupled": DEC, "kept in the step": KEPT}}


def test_the_pattern_needs_every_failing_row_below_and_a_reading_row_at_or_above_the_threshold():
    assert supported({BASE: 13.3, DEC: 80.8, KEPT: 11.0}, RULE) == ["decoupled"]
    assert supported({BASE: 13.3, DEC: 11.0, KEPT: 80.8}, RULE) == ["kept in the step"]
    assert supported({BASE: 13.3, DEC: 80.8, KEPT: 75.0}, RULE) == ["decoupled", "kept in the step"]
    assert supported({BASE: 60.0, DEC: 80.8, KEPT: 11.0}, RULE) == []  # Base trains: not the paper's pattern
    assert supported({BASE: math.nan, DEC: 20.0, KEPT: math.nan}, RULE) == ["decoupled"]  # diverged = failed
    assert supported({BASE: 19.9, DEC: 19.99, KEPT: 5.0}, RULE) == []  # the threshold is the line
    assert supported({DEC: 30.0, KEPT: 30.0}, RULE) == ["decoupled", "kept in the step"]  # a missing row fails


DECLARED = """\
findings:
- id: shown
  question: The study's tables
  kind: tables
  fixed: before_finals
  evidence: s
  tables: [a, b]
  figures: [f]
  pattern:
    table: a
    threshold: 20
    fails: [Base]
    readings: {one: Read1, two: Read2}
    intro: "Below {threshold} % fails: Base {baseline}; {readings}"
    words: {fails: fails, trains: trains, one: "only **{names}**.", several: "several.", none: "none."}
  page: {file: docs/p.md, block: shown}
"""


def _repo(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config/s.yaml").write_text(DECLARED)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/p.md").write_text("# P\n\n<!-- generated:shown -->\n<!-- /generated:shown -->\n")
    tables = tmp_path / "results/evidence/s/tables"
    tables.mkdir(parents=True)
    (tables / "a.md").write_text("# A\n\n| x |\n")
    (tables / "a.csv").write_text("row,ours_mean\nBase,11.0\nRead1,15.0\nRead2,71.5\n")
    return Context(root=tmp_path, figures_root=Path("figs"), only=("docs/p.md",))


def test_a_tables_block_waits_for_every_table_then_shows_the_verdict_tables_and_figures(tmp_path):
    ctx = _repo(tmp_path)
    assert PENDING in render_all(ctx)["docs/p.md"]
    (tmp_path / "results/evidence/s/tables/b.md").write_text("# B\n\n| y |\n")
    (tmp_path / "figs/s").mkdir(parents=True)
    (tmp_path / "figs/s/f.png").write_bytes(b"png")
    text = render_all(Context(root=tmp_path, figures_root=Path("figs"), only=("docs/p.md",)))["docs/p.md"]
    body = text.split("-->\n", 2)[2].split("\n<!-- /generated")[0]
    assert body == ("Below 20 % fails: Base fails; only **two**.\n\n#### A\n\n| x |\n\n#### B\n\n| y |\n\n"
                    "![s f](../figs/s/f.png)")


@pytest.mark.parametrize("change, says", [
    ({"tables": []}, "findings.t.tables"),
    ({"figures": "f"}, "findings.t.figures"),
    ({"pattern": {"table": "a"}}, "findings.t.pattern"),
    ({"pattern": {"table": "a", "threshold": 20, "fails": [], "readings": {"r": "R"}, "intro": "",
                  "words": {"fails": "", "trains": ""}}}, "findings.t.pattern"),
])
def test_a_bad_tables_declaration_is_one_line_naming_the_key(change, says):
    base = {"id": "t", "question": "q", "kind": "tables", "fixed": "before_finals", "evidence": "s", "tables": ["a"],
            "page": {"file": "docs/p.md", "block": "b"}}
    with pytest.raises(ConfigError, match=says):
        check({**base, **change}, "c.yaml")


def test_a_pattern_is_a_rule_so_it_says_when_it_was_fixed_while_plain_tables_need_not():
    base = {"id": "t", "question": "q", "kind": "tables", "evidence": "s", "tables": ["a"],
            "page": {"file": "docs/p.md", "block": "b"}}
    assert check(base, "c.yaml").kind == "tables"
    rule = {"table": "a", "threshold": 20, "fails": ["B"], "readings": {"r": "R"}, "intro": "",
            "words": dict.fromkeys(("fails", "trains", "one", "several", "none"), "")}
    with pytest.raises(ConfigError, match="findings.t.fixed"):
        check({**base, "pattern": rule}, "c.yaml")
