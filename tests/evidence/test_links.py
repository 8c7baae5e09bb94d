"""Every link to an anchor in README.md and docs/ lands: the page exists and holds the anchor (an `<a id>` or a
heading), generated blocks included. Moving a section to another page (docs/reproduction_methods.md, issue 48)
breaks the links into it until each is pointed at its new page."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    out = set(re.findall(r'<a (?:id|name)="([^"]+)"', text))
    fenced = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.add(_slug(line.lstrip("#")))
    return out


def broken(root: Path) -> list[str]:
    """'page: target#anchor' for every anchor link of README.md and docs/**/*.md that does not land."""
    out = []
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for target, anchor in LINK.findall(page.read_text()):
            if target.startswith(("http:", "https:")):
                continue
            dest = (page.parent / target).resolve() if target else page
            if not dest.exists() or anchor not in anchors(dest.read_text()):
                out.append(f"{page.relative_to(root)}: {target}#{anchor}")
    return out


def test_every_anchor_link_of_the_pages_lands():
    assert broken(REPO) == []


def test_a_link_into_a_moved_section_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("See [the picks](docs/a.md#picks) and [b](docs/b.md#moved-here).\n")
    (tmp_path / "docs/a.md").write_text("# A\n\n[here](#local) [up](../README.md#top)\n\n## Local\n")
    (tmp_path / "docs/b.md").write_text('# B\n\n<a id="moved-here"></a>\n')
    assert broken(tmp_path) == ["README.md: docs/a.md#picks", "docs/a.md: ../README.md#top"]
    (tmp_path / "docs/a.md").write_text('# A\n\n<a id="picks"></a>\n[here](#local) [up](../README.md#top)\n\n'
                                        '## Local\n')
    (tmp_path / "README.md").write_text("# Top\n\nSee [the picks](docs/a.md#picks) and [b](docs/b.md#moved-here).\n")
    assert broken(tmp_path) == []
