"""The result pages: which Markdown file holds which generated block, rendering them from the committed
evidence, and the drift check (a page that differs from what the evidence renders).

    python -m fedflat.evidence pages           # re-render every page in place (byte-identical when nothing moved)
    python -m fedflat.evidence pages --check   # exit 1 and name each page and block that drifted

docs/atlas.md is generated whole; the other pages keep their hand-written prose around marked blocks."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..results.leaderboard import page_blocks as lb
from ..results.leaderboard import page_verdicts as lbv
from . import paper_targets, verify
from .export import EVIDENCE, FIGURES
from .markers import replace
from .store import Evidence, load

ATLAS = "docs/atlas.md"
# docs/reproduction_methods.md (FedSynSAM's v2 tuning stages, reading tests and diagnostics) is no page of this
# module: its blocks read legacy v2 evidence only, so it was frozen as static text (its banner; docs/architecture.md)

# file -> {block name: renderer(ctx) -> Markdown}; the blocks a finding declares (its `page:`) and those of a paper's
# declared reproduction (docs/reproduction.md: `paper: reproduction:` of config/papers/fedsynsam.yaml) come on top of
# these, e.g. FedSynSAM's verdict in README.md and docs/reproduction.md (config/papers/tuning/fedsynsam_fmnist_v3.yaml)
PAGES: dict[str, dict[str, Callable]] = {
    "README.md": {"readme-leaderboard-status": lb.status,
                  "readme-leaderboard-top": lb.top,
                  "readme-leaderboard-claims": lbv.claims_summary},
    "docs/leaderboard.md": {"leaderboard-status": lb.status, "leaderboard-screen": lb.screen,
                            "leaderboard-choice": lb.choice, "leaderboard-top": lb.ranking,
                            "leaderboard-stability": lb.stability, "leaderboard-ablation": lbv.ablation,
                            "leaderboard-claims": lbv.claims, "leaderboard-statistics": lbv.statistics,
                            "leaderboard-cost": lb.cost, "leaderboard-figures": lb.figures},
    "docs/reproducibility.md": {"verification-legacy": verify.reports_block},
}


@dataclass
class Context:
    """Where the evidence, figures and configs are (a test points these at a copy), with per-render caches."""
    root: Path = Path(".")
    evidence_root: Path = EVIDENCE
    figures_root: Path = FIGURES
    only: tuple | None = None  # render these pages only (a test's scratch repository); None: every page
    _atlas: dict = field(default_factory=dict)
    _evidence: dict = field(default_factory=dict)
    _studies: dict = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)

    def memo(self, key, make: Callable):
        """make() once per render (the findings' records, catalogs, verdicts)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def config(self, name: str, study: str | None = None) -> Path:
        """config/<name> as `study`'s committed evidence was made with it (the snapshot its export wrote beside the
        records, export.snapshot_config), else the live file."""
        snap = self.root / self.evidence_root / study / "config" / name if study else None
        return snap if snap is not None and snap.exists() else self.root / "config" / name

    def live_config(self, name: str) -> Path:
        return self.root / "config" / name

    def evidence(self, study: str) -> Evidence:
        if study not in self._evidence:
            self._evidence[study] = load(study, self.root / self.evidence_root)
        return self._evidence[study]

    def figure_link(self, study: str, name: str) -> str | None:
        """The committed PNG of a study's figure as a page under docs/ links it; None if it is not committed."""
        png = self.figures_root / study / f"{name}.png"
        return f"../{png.as_posix()}" if (self.root / png).exists() else None

    def study(self, paper: str):
        """The paper's catalog at the paper's scale, loaded once per render."""
        from .atlas import paper_study

        if paper not in self._studies:
            self._studies[paper] = paper_study(paper, self.root / "config/papers")
        return self._studies[paper]

    def atlas(self, paper: str) -> list[dict]:
        from .atlas import paper_rows

        if paper not in self._atlas:
            self._atlas[paper] = paper_rows(paper, self.root / "config/papers", self.root / self.evidence_root,
                                            self.root / self.figures_root, study=self.study(paper))
        return self._atlas[paper]


def pages(ctx: Context) -> dict[str, dict[str, Callable]]:
    """{page: {block: renderer}}: the blocks written as code (PAGES), those of every paper's declared reproduction
    (evidence/paper_targets.py) and those every finding declares (fedflat.evidence.findings); one block named twice
    is an error."""
    from .findings.layout import page_blocks
    from .markers import MarkerError

    out = {path: dict(blocks) for path, blocks in PAGES.items()}
    for declared in (paper_targets.page_blocks(ctx), page_blocks(ctx)):
        for path, blocks in declared.items():
            twice = sorted(set(blocks) & set(out.get(path, {})))
            if twice:
                raise MarkerError(f"{path}: block {twice[0]!r} is rendered twice (by code or a declaration)")
            out.setdefault(path, {}).update(blocks)
    return out


def render_all(ctx: Context | None = None) -> dict[str, str]:
    """{path: the page's text as the evidence renders it}."""
    from .atlas import render as render_atlas

    ctx = ctx or Context()
    out = {}
    for path, blocks in pages(ctx).items():
        if ctx.only is None or path in ctx.only:
            text = (ctx.root / path).read_text()
            out[path] = replace(text, {name: f(ctx) for name, f in blocks.items()}, where=path)
    if ctx.only is None or ATLAS in ctx.only:
        out[ATLAS] = render_atlas(rows=ctx.atlas)  # the catalogs are read once per render
    return out


def _changes(ctx: Context) -> list[tuple[str, str, str]]:
    """(path, committed text, rendered text) of every page whose text the evidence would change."""
    out = []
    for path, text in render_all(ctx).items():
        p = ctx.root / path
        old = p.read_text() if p.exists() else ""
        if old != text:
            out.append((path, old, text))
    return out


def write(ctx: Context | None = None) -> list[str]:
    """Re-render every page in place; returns the paths whose text changed."""
    from ..core.util.io import write_text

    ctx = ctx or Context()
    changes = _changes(ctx)
    for path, _, text in changes:
        write_text(ctx.root / path, text)
    return [path for path, _, _ in changes]


def drift(ctx: Context | None = None) -> list[str]:
    """One line per page whose committed text differs from what the evidence renders, with its first change."""
    import difflib

    out = []
    for path, old, text in _changes(ctx or Context()):
        diff = [l for l in difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=0)
                if l.startswith(("+", "-")) and not l.startswith(("+++", "---"))]
        out.append(f"{path}: differs from what the committed evidence renders ({len(diff)} lines, first: "
                   f"{diff[0][:120] if diff else '?'}); run `python -m fedflat.evidence pages`")
    return out


# Where a measured number may only appear inside a generated block: whole pages, or (README) named sections.
CHECKED = {"docs/leaderboard.md": None, "docs/reproduction.md": None,
           "README.md": ("## Results on real data", "## Leaderboard: every method under one protocol"),
           **{page: ("## Measured",) for page in ("docs/papers.md", "docs/algorithms_sam.md", "docs/fedsynsam.md")}}

_MEASURED = re.compile(r"\d\s*±\s*\d|\b\d+\.\d+\b")
# Protocol settings may stay in prose: a number right after a hyperparameter symbol or name, inside a
# Dirichlet spec, a Top-k fraction or a set/list of grid values, a version, or in `code`.
_SETTING = re.compile(r"(?:\blr|\bρ|\bα|\bβ|\bμ|\bλ|\bκ|\bη\w*|Dir\(|dir|Top-k|torch|=|≈ ?|[{\[,(]) ?$")


def _sections(text: str, heads: tuple[str, ...] | None) -> set[int]:
    """Line numbers (1-based) inside the named `## ` sections (all lines when `heads` is None)."""
    lines = text.split("\n")
    if heads is None:
        return set(range(1, len(lines) + 1))
    keep, on = set(), False
    for i, line in enumerate(lines, 1):
        if line.startswith("## "):
            on = any(line.startswith(h) for h in heads)
        if on:
            keep.add(i)
    return keep


def stray_numbers(text: str, heads: tuple[str, ...] | None = None) -> list[str]:
    """Measured-looking numbers (a decimal, or a ± between digits) outside generated blocks and code, in the checked sections:
    one 'line N: text' per offending line. Protocol settings (ρ 0.05, lr in {0.03, 0.1}, Dir(0.3)) pass."""
    from .markers import outside

    checked = _sections(text, heads)
    out = []
    for n, line in outside(text):
        if n not in checked:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        for m in _MEASURED.finditer(prose):
            if "±" in m.group() or not _SETTING.search(prose[:m.start()][-12:]):
                out.append(f"line {n}: {line.strip()[:100]}")
                break
    return out


def stray_report(root: Path = Path(".")) -> list[str]:
    return [f"{path} {hit}" for path, heads in CHECKED.items()
            for hit in stray_numbers((Path(root) / path).read_text(), heads)]
