"""The result pages against the committed evidence: the drift check is green on the repository, it fails when
one number of a generated block is edited, and no measured number stands outside a generated block."""
import shutil
from pathlib import Path

import pytest

from fedflat.evidence.pages import CHECKED, Context, drift, pages, stray_numbers, stray_report

REPO = Path(__file__).resolve().parents[2]
PAGES = list(pages(Context(root=REPO)))  # the pages code renders and those the findings declare


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The pages, configs and evidence of the repository in a scratch directory (no run directory needed)."""
    root = tmp_path_factory.mktemp("repo")
    for p in list(PAGES) + ["docs/atlas.md"]:
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / p, root / p)
    shutil.copytree(REPO / "config", root / "config")
    for d in ("results/evidence", "figures/evidence"):
        if (REPO / d).exists():
            shutil.copytree(REPO / d, root / d)
    return root


def test_the_committed_pages_match_the_committed_evidence(copy):
    assert drift(Context(root=copy)) == []


def test_editing_one_number_in_a_generated_block_is_caught(copy, tmp_path):
    edited = tmp_path / "edited"
    shutil.copytree(copy, edited)
    page = edited / "docs/leaderboard.md"
    text = page.read_text()
    start = text.index("<!-- generated:leaderboard-cost -->")
    row = text.index("| tuning |", start)
    cell = text.index("|", row + len("| tuning |"))  # the runs column
    n = text[row + len("| tuning |"):cell].strip()
    page.write_text(text[:row] + f"| tuning | {int(n) + 1} " + text[cell:])
    bad = drift(Context(root=edited))
    assert len(bad) == 1 and bad[0].startswith("docs/leaderboard.md: differs from what the committed evidence renders")


def test_no_measured_number_outside_a_generated_block():
    assert stray_report(REPO) == [], "move the number into a generated block (fedflat.evidence.pages) or remove it"
    assert set(CHECKED) <= set(PAGES)


def test_the_number_check_can_fail():
    page = ("## Results on real data\nFedAvg reaches 83.53 ± 0.91 here.\nat lr 0.1, ρ 0.05, Dir(0.3), {0.03, 0.1}\n"
            "<!-- generated:x -->\n84.28\n<!-- /generated:x -->\n## Other\n1.23 is out of scope\n")
    assert stray_numbers(page, ("## Results on real data",)) == ["line 2: FedAvg reaches 83.53 ± 0.91 here."]
    assert len(stray_numbers(page)) == 2  # the whole page checked: the last line too


def _top_headings(text: str) -> list[str]:
    """The page's "# " headings outside fenced and indented code."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            out.append(line)
    return out


def test_an_embedded_table_title_does_not_open_a_second_top_level_heading():
    from fedflat.core.util.markdown import embed

    assert embed("#  Table II (A): Diagnostic\n\n| a |\n# not a title\n") == \
        "#### Table II (A): Diagnostic\n\n| a |\n#### not a title"
    for page in list(PAGES) + ["docs/atlas.md"]:
        assert len(_top_headings((REPO / page).read_text())) == 1, page


def test_a_method_added_to_the_live_config_only_shows_as_not_yet_run(copy, tmp_path):
    """The pages render against the config snapshot committed with the evidence (export.snapshot_config): a preset
    added to config/leaderboard.yaml before its runs exist changes no committed block but the status line that
    names it as not yet run (issue 47: adding a method broke the pages and deleted the published ranking)."""
    import yaml

    from fedflat.evidence.pages import render_all

    added = tmp_path / "added"
    shutil.copytree(copy, added)
    # a leaderboard with evidence and its config snapshot (v2's, standing in for the current study's)
    shutil.rmtree(added / "results/evidence/leaderboard", ignore_errors=True)
    shutil.copytree(added / "results/evidence/leaderboard_v2", added / "results/evidence/leaderboard")
    before = render_all(Context(root=added))
    live = added / "config/leaderboard.yaml"
    cfg = yaml.safe_load(live.read_text())
    cfg["leaderboard"]["methods"]["fednew"] = {"rho": [0.0, 0.01, 0.02, 0.05]}
    live.write_text(yaml.safe_dump(cfg))
    after = render_all(Context(root=added))
    for page in before:
        old, new = before[page].splitlines(), after[page].splitlines()
        changed = [(a, b) for a, b in zip(old, new) if a != b]
        assert len(old) == len(new) and all(b.startswith("Not yet run") and "fednew" in b for _, b in changed)
    assert any(before[p] != after[p] for p in before)  # the status names it
