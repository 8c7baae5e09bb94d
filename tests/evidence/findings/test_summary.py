"""The summary kind: five lines over groups of declared paired claims, counted by verdict (supported, contradicted,
inconclusive, waiting), the design's power, the cells no run can test with the paper's margins there, and the
records the verdicts rest on; rendered into every page it names, its link relative to each."""
import pandas as pd
import pytest

from fedflat.core.errors import ConfigError
from fedflat.evidence.findings.declared import check
from fedflat.evidence.pages import Context, render_all

from .helpers import record, write_runs

# per seed, treatment - baseline (the row AVG): SAM +2 (supported at a margin of 2), LESAM 0 (contradicted),
# NOISY spread (inconclusive); NONE has no run yet (waits)
ROWS = {"SAM": [2.0, 2.1, 1.9], "LESAM": [0.0, 0.1, -0.1], "NOISY": [2.0, -1.5, 3.0]}
CLAIM = ("- {{id: {i}, question: {i} beats AVG, kind: paired_claim, fixed: before_finals, evidence: study,\n"
         "   metric: final_acc, seeds: [0, 1, 2], select: {{table: t2, column: Q4}}, treatment: {{row: {row}}},\n"
         "   baseline: {{row: AVG}}, paper: {{value: {paper}}}, family: {fam}, page: {{file: docs/r.md, block: c}}}}\n")
SUMMARY = """\
- id: verdict
  question: what the claims show
  kind: summary
  evidence: study
  of:
  - {name: G1, where: {family: fam1}}
  - {name: G2, where: {family: fam2}}
  untestable:
    name: the other columns
    why: no data offline
    catalog: cat
    treatment: SAM
    baselines: [AVG]
    cells: [{tables: [t9], columns: [X, Y]}]
  link: docs/r.md#verdict
  page:
  - {file: TOP.md, block: v}
  - {file: docs/r.md, block: v}
"""
CATALOG = """\
tables:
  t9: {ref: Table IX, columns: [{group: X}, {group: Y}], published: {SAM: [85.0, 80.0], AVG: [80.0, 79.0]}}
"""


def _repo(tmp_path, summary=SUMMARY):
    rows = [record("fedavg", s, 80.0) for s in range(3)]
    rows += [record(p.lower(), s, 80.0 + d) for p, ds in ROWS.items() for s, d in enumerate(ds)]
    rows += [record("fedsam", 0, 10.0, experiment="old", legacy="made from a modified working tree (f00-dirty)")]
    ctx = write_runs(tmp_path, rows)
    label = {"fedavg": "AVG", "sam": "SAM", "lesam": "LESAM", "noisy": "NOISY"}
    cells = [{"table": "t2", "row": label[r["preset"]], "column": "Q4 / acc", "run_id": r["run_id"]}
             for r in rows if r["experiments"] == "e"]
    pd.DataFrame(cells).to_csv(tmp_path / "results/evidence/study/cells.csv", index=False)
    (tmp_path / "config/papers").mkdir()
    (tmp_path / "config/papers/cat.yaml").write_text(CATALOG)
    (tmp_path / "config/claims.yaml").write_text(
        "findings:\n" + "".join(CLAIM.format(i=i, row=row, paper=p, fam=fam) for i, row, p, fam in (
            ("s1", "SAM", 2.0, "fam1"), ("c1", "LESAM", 2.0, "fam1"), ("i1", "NOISY", 1.0, "fam2"),
            ("w1", "NONE", 1.0, "fam2"))) + summary)
    block = "<!-- generated:{0} -->\n<!-- /generated:{0} -->\n"
    (tmp_path / "TOP.md").write_text("# R\n\n" + block.format("v"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/r.md").write_text("# P\n\n" + block.format("v") + "\n" + block.format("c"))
    return Context(root=tmp_path, only=("TOP.md", "docs/r.md"))


def _lines(text: str, block: str = "v") -> list[str]:
    start = text.index(f"<!-- generated:{block} -->")
    body = text[start:text.index(f"<!-- /generated:{block} -->")].split("\n")
    return [line[2:] for line in body if line.startswith("- ")]


def test_the_summary_counts_each_verdict_overall_and_per_group(tmp_path):
    out = render_all(_repo(tmp_path))
    lines = _lines(out["TOP.md"])
    assert len(lines) == 5
    assert lines[0] == ("4 claims, 4 of them fixed before the finals: supported 1, contradicted 1, inconclusive 1, "
                        "waiting for runs 1.")
    assert lines[1] == ("By group: G1, 2 claims: supported 1, contradicted 1; G2, 2 claims: inconclusive 1, "
                        "waiting for runs 1.")
    # the per-claim table below agrees, claim by claim
    table = out["docs/r.md"]
    assert "supported: 1; contradicted: 1; inconclusive: 1; waiting for runs: 1." in table
    assert "| w1 beats AVG | +1.00 | - | - | waits for its runs: 3 of 6 in `study` | - |" in table


def test_the_power_line_states_the_design_and_once_measured_the_detectable_difference(tmp_path):
    from fedflat.core.util.paired import detectable

    power = _lines(render_all(_repo(tmp_path))["TOP.md"])[2]
    assert power.startswith("Power (two-sided paired t at α 0.05, 80 %, before Holm): the design detects a mean of "
                            f"the per-seed differences of {detectable(1.0, 3):.2f} times their seed sd with 3 seeds")
    sd = pd.Series(ROWS["SAM"]).std(), pd.Series(ROWS["LESAM"]).std()
    median = sorted(detectable(x, 3) for x in sd)
    assert f"G1: {(median[0] + median[1]) / 2:.2f} (median over 2 claims) against the paper's margins 2.00 to 2.00" \
           in power
    assert "0 of 2 below it" in power


def test_the_untestable_cells_and_their_margins_come_from_the_catalog(tmp_path):
    line = _lines(render_all(_repo(tmp_path))["TOP.md"])[3]
    # SAM - AVG on X and Y: 5 and 1 (median 3), against the margin of 2 declared for the claim tested here
    assert line == ("Not testable offline: the other columns (Table IX: 2 columns; no data offline), where the "
                    "paper's margins are largest: SAM over AVG by 1.00 to 5.00 points (median 3.00); on the cells "
                    "tested here over AVG 2.00 to 2.00 (median 2.00).")


def test_the_evidence_line_names_the_records_and_links_relative_to_each_page(tmp_path):
    out = render_all(_repo(tmp_path))
    readme, page = _lines(out["TOP.md"])[4], _lines(out["docs/r.md"])[4]
    assert readme == ("Evidence: 12 regenerable records of `study`, made at commit `abc123` in portable numerics; "
                      "1 legacy record(s) set aside; per claim: [the verdict table](docs/r.md#verdict).")
    assert page.endswith("[the verdict table](#verdict).")


def test_a_group_that_matches_no_claim_and_a_malformed_summary_are_one_line_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"findings.verdict.of\[1\]: \{'family': 'fam3'\} matches no paired finding"):
        render_all(_repo(tmp_path, SUMMARY.replace("family: fam2", "family: fam3")))
    base = {"id": "s", "question": "q", "kind": "summary", "evidence": "e", "page": {"file": "p", "block": "b"}}
    for bad, key in (({"of": []}, "of"), ({"of": [{"name": "g"}]}, "of"),
                     ({"of": [{"name": "g", "where": {}}], "untestable": {"why": "x"}}, "untestable")):
        with pytest.raises(ConfigError) as e:
            check({**base, **bad}, "c.yaml")
        assert f"findings.s.{key}:" in str(e.value) and "\n" not in str(e.value)
