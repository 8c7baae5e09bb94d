"""Every module the pages and configs name exists: a `src/fedflat/...` or `tests/...` path (a file, a folder or a
glob such as `presets*.py`), and a dotted
`fedflat.a.b[.name]` (its longest module prefix imports and holds the rest's first name). Moving a module (issue 49's
layout by layers) leaves such names behind in prose until each is pointed at the new place. A name recorded as
history stays: a path "written into" at a commit (a finding's fixed_note), one the text says is "now" elsewhere, and the
frozen v2 pages (the v2 leaderboard, FedSynSAM's v2 reproduction methods: they describe v2's code as it was). A `# src/fedflat/...py` line opening a fenced example
(docs/extending.md) names the file the reader writes."""
import importlib
import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PATH = re.compile(r"(?<![\w/.])((?:src/fedflat|tests)/(?:[\w*]+/)*(?:[\w*]+\.py\b|[\w*]+\b/?)?)")
DOTTED = re.compile(r"(?<![\w./-])(fedflat(?:\.[A-Za-z_]\w*)+)")
HISTORY_BEFORE = re.compile(r"written into\s*$")
HISTORY_AFTER = re.compile(r"^`?,? \(?now\b")
FROZEN = {"docs/leaderboard_v2.md", "docs/reproduction_methods.md"}
EXAMPLE = re.compile(r"^```\w*\n# (src/fedflat/\S+\.py)\n", re.M)


def pages(root: Path) -> list[Path]:
    listed = [root / "README.md", root / "Snakefile", root / "Makefile", *sorted((root / "docs").rglob("*.md")),
            *sorted((root / "config").rglob("*.yaml")), *sorted((root / "workflow").rglob("*.smk")),
            *sorted((root / "workflow").rglob("*.yaml"))]
    return [p for p in listed if p.is_file() and str(p.relative_to(root)) not in FROZEN]


def _is_history(text: str, m: re.Match) -> bool:
    return bool(HISTORY_BEFORE.search(text[max(0, m.start() - 20):m.start()]) or HISTORY_AFTER.match(text[m.end():]))


def _path_exists(root: Path, path: str) -> bool:
    path = path.rstrip("/")
    return any(root.glob(path)) if "*" in path else (root / path).exists()


def _dotted_exists(name: str) -> bool:
    parts = name.split(".")
    if "__main__" in parts:  # a command's main runs when imported: look it up without importing it
        try:
            return importlib.util.find_spec(".".join(parts[:parts.index("__main__") + 1])) is not None
        except ModuleNotFoundError:
            return False
    for i in range(len(parts), 0, -1):
        try:
            mod = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        return i == len(parts) or hasattr(mod, parts[i])
    return False


def stale(root: Path) -> list[str]:
    """'page: name' for every path or dotted module name that names nothing in the package or the tests."""
    out = []
    for page in pages(root):
        text = page.read_text()
        examples = {m.start(1) for m in EXAMPLE.finditer(text)}
        for m in PATH.finditer(text):
            if not _path_exists(root, m.group(1)) and not _is_history(text, m) and m.start() not in examples:
                out.append(f"{page.relative_to(root)}: {m.group(1)}")
        for m in DOTTED.finditer(text):
            if not _dotted_exists(m.group(1).rstrip(".")) and not _is_history(text, m):
                out.append(f"{page.relative_to(root)}: {m.group(1)}")
    return out


def test_every_module_named_in_the_pages_and_configs_exists():
    assert stale(REPO) == []


def test_a_moved_module_named_in_a_page_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "see `src/fedflat/util/stats.py`, `src/fedflat/algorithms/presets*.py`, `src/fedflat/synsam/` and "
        "fedflat.util.stats.tie_bands, fedflat.core.util.rank_stats.nosuch;\n"
        "kept: `src/fedflat/evidence/pages.py`, `src/fedflat/evidence/p*.py`, `src/fedflat/evidence/`, "
        "fedflat.evidence.pages.write, `python -m fedflat.leaderboard`;\n"
        "history: written into src/fedflat/evidence/margin.py at 093ec1c, `src/fedflat/evidence/ordering.py`, now a "
        "finding\n```python\n# src/fedflat/training/data/wine.py\n```\n")
    for name in ("README.md", "Snakefile", "Makefile"):
        (tmp_path / name).write_text("")
    (tmp_path / "docs" / "leaderboard_v2.md").write_text("frozen: `fedflat.util.stats.tie_bands`\n")
    (tmp_path / "src" / "fedflat" / "evidence").mkdir(parents=True)
    (tmp_path / "src" / "fedflat" / "evidence" / "pages.py").write_text("")
    assert stale(tmp_path) == ["docs/a.md: src/fedflat/util/stats.py", "docs/a.md: src/fedflat/algorithms/presets*.py",
                               "docs/a.md: src/fedflat/synsam/", "docs/a.md: fedflat.util.stats.tie_bands",
                               "docs/a.md: fedflat.core.util.rank_stats.nosuch"]
