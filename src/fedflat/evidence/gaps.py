"""Every gap over 2 points between a reproduced cell and the paper, with its cause: the block
docs/reproduction.md#<paper>-gaps, rendered from the atlas's comparison (the committed evidence) and the paper's
cause file config/papers/gaps/<paper>.yaml.

A cause's label says how it was established (issue 48): `measured` (a rule fixed before the cell's final runs were
read, run on fresh runs, brings the score within 2 points of the paper's cell, not above it by more), `post_hoc` (its
diagnostic was designed after the final runs were read), `inconclusive` (the seeds spread too widely to tell) or
`unexplained` (every measured candidate ruled out, or the one left cannot be measured). `reason` is the label's one
plain sentence. The cause file assigns causes to cells by target, row labels and column groups ("*": every one),
of the catalog's evidence unless an assignment names another (`evidence: <study>`: the cells of that study's table).
A cause's `anchor` is the block that renders its evidence: `<id>` on docs/reproduction.md, or `<page>#<id>` on
another page under docs/.
tests/evidence/test_gaps.py fails when a gap in the committed evidence has no cause, so a new final run that opens a
gap cannot land unexplained."""
from __future__ import annotations

from dataclasses import dataclass

from .compare import ours_text, signed
from .legacy import label

STATUSES = ("measured", "post_hoc", "inconclusive", "unexplained")
LABEL = {"measured": "measured", "post_hoc": "post hoc", "inconclusive": "inconclusive", "unexplained": "unexplained"}
# a gap with no cause in the catalog's gaps file: no diagnostic was registered for it, said plainly (no cause hunted)
NO_CAUSE = "none registered"
VERB = {"measured": "Measured by", "post_hoc": "Shown after the fact by", "inconclusive": "See",
        "unexplained": "Candidates measured or named in"}
KEYS = ("status", "reason", "says", "anchor", "diagnostic")


@dataclass(frozen=True)
class Cause:
    name: str
    status: str  # measured | post_hoc | inconclusive | unexplained
    reason: str  # the label's one plain sentence
    says: str  # the longer account (its numbers live in the block the anchor points at)
    anchor: str  # where its measurement (or the plan to measure it) is rendered: <id> or <page under docs/>#<id>
    diagnostic: str  # the target that measures it


def load_causes(path) -> tuple[dict[str, Cause], list[dict]]:
    """(causes by name, assignments [{target, rows, columns, cause}]) from a cause file; one-line errors name the
    offending key."""
    import yaml

    from ..core.errors import ConfigError

    raw = yaml.safe_load(open(path)) or {}
    causes = {}
    for name, c in (raw.get("causes") or {}).items():
        missing = set(KEYS) - set(c)
        if missing:
            raise ConfigError(f"{path}: causes.{name}: missing {', '.join(sorted(missing))}")
        if c["status"] not in STATUSES:
            raise ConfigError(f"{path}: causes.{name}.status: {c['status']!r} is not one of {', '.join(STATUSES)}")
        causes[name] = Cause(name, c["status"], c["reason"], c["says"], c["anchor"], c["diagnostic"])
    gaps = raw.get("gaps") or []
    for i, g in enumerate(gaps):
        if g.get("cause") not in causes:
            raise ConfigError(f"{path}: gaps[{i}].cause: {g.get('cause')!r} is not a cause of this file")
    return causes, gaps


def cause_link(c: Cause) -> str:
    """The link to a cause's block from a page under docs/."""
    return c.anchor if "#" in c.anchor else f"#{c.anchor}"


def _matches(sel, value: str, prefix: bool = False) -> bool:
    if sel == "*":
        return True
    return any(value.startswith(s) if prefix else value == s for s in sel)


def cause_of(gaps: list[dict], target: str, row: str, column: str) -> str | None:
    """The first assignment that covers (target, row, column); None if none does. An assignment names one target or
    a list (targets that share cells); a column is named by its group (the atlas's column text starts with it)."""
    for g in gaps:
        targets = g["target"] if isinstance(g["target"], list) else [g["target"]]
        if target in targets and _matches(g.get("rows", "*"), row) and _matches(g.get("columns", "*"), column,
                                                                                    prefix=True):
            return g["cause"]
    return None


def gap_rows(atlas_rows: list[dict], gaps: list[dict]) -> list[dict]:
    """One dict per gap over 2 points in the evidence: target, row, column, paper, ours, cause (name or None)."""
    out = []
    for r in atlas_rows:
        for row, column, paper, ours in r.get("gaps", []):
            out.append({"target": r["target"], "row": row, "column": column, "paper": paper, "ours": ours,
                        "cause": cause_of(gaps, r["target"], row, column)})
    return out


def merge_shared(rows: list[dict]) -> list[dict]:
    """One row per gap cell: targets that share a cell (table2_A and table2_A_fmnist read the same runs) become
    one row whose `targets` lists them, so a gap is counted once."""
    merged: dict[tuple, dict] = {}
    for r in rows:
        key = (r["row"], r["column"], r["paper"], ours_text(r["ours"]), r["cause"])  # NaN != NaN: key by its text
        merged.setdefault(key, {**r, "targets": []})["targets"].append(r["target"])
    return list(merged.values())


def block_for(paper: str, legacy: str = "Legacy"):
    """The gaps block of a paper's catalog; `legacy` names its records where they cannot be regenerated."""
    def block(ctx) -> str:
        causes, gaps = load_causes(ctx.config(f"papers/gaps/{paper}.yaml"))
        gaps = [g for g in gaps if g.get("evidence", paper) == paper]  # the catalog's cells (the atlas's)
        rows = merge_shared(gap_rows(ctx.atlas(paper), gaps))
        head = label(ctx.evidence(paper).runs(), legacy)
        if not rows:
            return "No reproduced cell lies more than 2 points from the paper in the committed evidence."
        count = {s: sum(1 for r in rows if r["cause"] and causes[r["cause"]].status == s) for s in STATUSES}
        none = sum(1 for r in rows if r["cause"] is None)
        lines = [head, ""] if head else []
        lines += [f"Gaps over 2 points in the committed evidence: {len(rows)} cells (a cell that several targets "
                  f"share counts once). Causes, by how they were established: measured (a rule fixed before the "
                  f"finals, on fresh runs, lands within 2 points of the paper): {count['measured']}; post hoc (a "
                  f"diagnostic designed after the finals were read): {count['post_hoc']}; inconclusive (seed spread): "
                  f"{count['inconclusive']}; unexplained: {count['unexplained']}; none registered: {none}.", "",
                  "| targets | row | column | paper | ours | Δ | cause |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            c = causes.get(r["cause"]) if r["cause"] else None
            why = f"[{c.name}]({cause_link(c)}) ({LABEL[c.status]})" if c else NO_CAUSE
            lines.append(f"| {', '.join(f'`{t}`' for t in r['targets'])} | {r['row']} | {r['column']} | "
                         f"{r['paper']:.2f} | {ours_text(r['ours'])} | {signed(r['ours'] - r['paper'])} | {why} |")
        used = [causes[n] for n in dict.fromkeys(r["cause"] for r in rows if r["cause"])]
        lines += [""] + [f"- **{c.name}** ({LABEL[c.status]}): {c.reason} {c.says[0].upper() + c.says[1:]}. "
                         f"{VERB[c.status]} `{c.diagnostic}`; see [its block]({cause_link(c)})." for c in used]
        return "\n".join(lines)
    return block
