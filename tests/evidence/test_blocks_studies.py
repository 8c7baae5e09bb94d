"""The small studies' blocks: FedSOL Combined's reading rule on fabricated means, and a study block that waits for
every table, then shows tables and figures in order."""
import math
from pathlib import Path

from fedflat.evidence.blocks_studies import PENDING, supported_readings, study_block
from fedflat.evidence.pages import Context

BASE, DEC, KEPT = "SCAFFOLD (Base)", "Combined, decoupled", "Combined, kept in the step"


def test_the_reading_rule_needs_a_failed_base_and_a_combined_that_trains():
    assert supported_readings({BASE: 13.3, DEC: 80.8, KEPT: 11.0}) == ["decoupled"]
    assert supported_readings({BASE: 13.3, DEC: 11.0, KEPT: 80.8}) == ["kept in the step"]
    assert supported_readings({BASE: 13.3, DEC: 80.8, KEPT: 75.0}) == ["decoupled", "kept in the step"]
    assert supported_readings({BASE: 60.0, DEC: 80.8, KEPT: 11.0}) == []  # Base trains: not the paper's pattern
    assert supported_readings({BASE: math.nan, DEC: 20.0, KEPT: math.nan}) == ["decoupled"]  # diverged = failed
    assert supported_readings({BASE: 19.9, DEC: 19.99, KEPT: 5.0}) == []  # twice chance is the line


def test_a_study_block_waits_for_every_table_then_shows_tables_and_figures(tmp_path):
    block = study_block("s", ("a", "b"), ("f",))
    tables = tmp_path / "results/evidence/s/tables"
    tables.mkdir(parents=True)
    (tables / "a.md").write_text("# A\n\n| x |\n")
    ctx = Context(root=tmp_path, figures_root=Path("figs"))
    assert block(ctx) == PENDING
    (tables / "b.md").write_text("# B\n\n| y |\n")
    (tmp_path / "figs/s").mkdir(parents=True)
    (tmp_path / "figs/s/f.png").write_bytes(b"png")
    ctx = Context(root=tmp_path, figures_root=Path("figs"))
    text = block(ctx)
    assert text == "#### A\n\n| x |\n\n#### B\n\n| y |\n\n![s f](../figs/s/f.png)"
