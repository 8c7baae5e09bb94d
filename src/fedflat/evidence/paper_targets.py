"""A paper's reproduction page, declared in its catalog (`paper: reproduction:` of config/papers/<paper>.yaml; for
FedSynSAM, docs/reproduction.md): the summary of its targets, one table per target (paper / ours / Δ / within 2 points
/ the cause of each larger gap), its figures, its deviations (evidence/deviations.py) and its gap causes
(evidence/gaps.py), from the committed evidence and the configs' published values.

A target is shown from the first of its `sources` whose exported table rests on regenerable records only (for
FedSynSAM: the v3 protocol's study, then the catalog's); while none does, from the first that has the table, under a
label saying its records cannot be regenerated (evidence/legacy.py)."""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError
from . import deviations, gaps
from .atlas import anchor
from .compare import signed, within
from .gaps import LABEL, NO_CAUSE, cause_link, cause_of, load_causes
from .legacy import label, reasons

KEYS = {"page", "targets", "figures", "sources", "pending"}


@dataclass(frozen=True)
class Reproduction:
    paper: str                           # the catalog: its gap causes (config/papers/gaps/<paper>.yaml), the atlas
    page: str                            # the page its blocks stand on
    targets: tuple[str, ...]
    figures: dict                        # a figure -> the table whose runs it draws
    sources: tuple[tuple[str, str, str], ...]  # (evidence study, its config under config/, its legacy records' label)
    pending: str                         # what a block says before any source has its table
    name: str = ""                       # the paper's name (`paper: name:`), as a figure's alt text gives it

    @property
    def legacy(self) -> str:
        """The label of the catalog's own records (its summary and figures rest on them)."""
        return next(name for study, _, name in self.sources if study == self.paper)


def declared(config_root: Path) -> list[Reproduction]:
    """Every catalog's `paper: reproduction:` (config/papers/*.yaml), checked: one line naming the file and key."""
    import yaml

    out = []
    for path in sorted(Path(config_root, "papers").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text()) or {}
        raw = (cfg.get("paper") or {}).get("reproduction")
        if raw is None:
            continue
        where = f"{path}: paper.reproduction"
        if not isinstance(raw, dict) or set(raw) != KEYS:
            raise ConfigError(f"{where}: {{{', '.join(sorted(KEYS))}}}")
        sources = tuple((s.get("evidence"), s.get("config"), s.get("legacy")) for s in raw["sources"]
                        if isinstance(s, dict))
        if len(sources) != len(raw["sources"]) or not all(all(x) for x in sources) \
                or cfg["study"] not in [s[0] for s in sources]:
            raise ConfigError(f"{where}.sources: [{{evidence, config, legacy}}, ...], the catalog's own study "
                              f"({cfg['study']!r}) among them")
        bad = sorted(set(raw["figures"].values()) - set(raw["targets"]))
        if bad:
            raise ConfigError(f"{where}.figures: {bad[0]!r} is none of the targets")
        out.append(Reproduction(cfg["study"], raw["page"], tuple(raw["targets"]), dict(raw["figures"]), sources,
                                raw["pending"], cfg["paper"].get("name", cfg["study"])))
    return out


def page_blocks(ctx) -> dict[str, dict]:
    """{page: {block: renderer}} of every declared reproduction: <paper>-summary, -<target>, -<figure>, -deviations,
    -gaps."""
    out: dict[str, dict] = {}
    for r in declared(ctx.live_config("")):
        p = r.paper
        out.setdefault(r.page, {}).update({
            f"{p}-summary": summary_linking(r, ""), f"{p}-deviations": deviations.block_for(p),
            **{f"{p}-{t}": target(r, t) for t in r.targets}, **{f"{p}-{f}": figure(r, f) for f in r.figures},
            f"{p}-gaps": gaps.block_for(p, legacy=r.legacy)})
    return out


def _row(ctx, paper: str, target: str) -> dict:
    return next(r for r in ctx.atlas(paper) if r["target"] == target)


def summary_linking(rep: Reproduction, page: str):
    """The catalog's summary table, its links relative to the page it stands on (`page`: the path to
    reproduction.md from there, "" on that page itself), under the label of its legacy records."""
    def summary(ctx) -> str:
        lines = ["| target | paper table | published cells | re-run at paper scale | within 2 points |",
                 "|---|---|---|---|---|"]
        for t in rep.targets:
            r = _row(ctx, rep.paper, t)
            share = f"{r['within']} of {r['compared']}" if r["compared"] else "-"
            lines.append(f"| [`{t}`]({page}#{anchor(rep.paper, t)}) | {r['ref']} | {r['published']} | "
                         f"{r['reproduced']} | {share} |")
        head = label(ctx.evidence(rep.paper).runs(), rep.legacy)
        return "\n\n".join(x for x in (head, "\n".join(lines)) if x)
    return summary


def _records(ctx, study: str, table: str):
    """The records behind an exported table (its cells.csv run ids)."""
    cells = ctx.evidence(study).cells()
    ids = set(cells[cells["table"] == table]["run_id"])
    runs = ctx.evidence(study).runs()
    return runs[runs["run_id"].isin(ids)]


def _source(ctx, rep: Reproduction, table: str) -> tuple | None:
    """(study, config, legacy label, its records) of the first source whose table rests on regenerable records only,
    else of the first that has the table at all; None while none does."""
    found = []
    for study, config, name in rep.sources:
        if ctx.evidence(study).table_text(table, "csv") is None:
            continue
        recs = _records(ctx, study, table)
        found.append((study, config, name, recs))
        if len(recs) and not any(w is not None for w in reasons(recs)):
            return found[-1]
    return found[0] if found else None


def _published(ctx, study: str, config: str, table: str) -> dict:
    """{(row, column group): the paper's mean} of one table of a config (as the evidence was made with it)."""
    import yaml

    from ..results.papers.published import parse_published

    cfg = yaml.safe_load(ctx.config(config, study).read_text()) or {}
    spec = {**(cfg.get("pending_tables") or {}), **(cfg.get("tables") or {})}.get(table) or {}
    groups = [c.get("group") for c in spec.get("columns") or []]
    return {(row, g): parse_published(v).mean for row, values in (spec.get("published") or {}).items()
            for g, v in zip(groups, values)}


def _cells(ctx, study: str, config: str, table: str) -> list[dict]:
    """Every cell of the exported table: row, column, paper (None where the paper publishes none: not compared),
    ours (text, mean), Δ, within."""
    import pandas as pd

    frame = pd.read_csv(io.StringIO(ctx.evidence(study).table_text(table, "csv")))
    paper = _published(ctx, study, config, table)
    out = []
    for r in frame.itertuples():
        p = paper.get((r.row, r.group))
        mean = float(r.ours_mean) if r.ours_mean == r.ours_mean else math.nan
        ok = within(mean, p)
        if ok is None and p is not None and int(r.diverged) and not int(r.n_seeds):
            ok = False  # every seed diverged: a gap, not a blank (atlas.paper_rows)
        ours = str(r.ours)
        if int(r.diverged) and int(r.n_seeds) and "diverged" not in ours:  # the table may say so already
            ours += f" ({int(r.diverged)} of {int(r.diverged) + int(r.n_seeds)} seeds diverged)"
        out.append({"row": r.row, "column": r.group, "paper": p, "ours": ours,
                    "delta": math.nan if p is None else mean - p, "within": ok})
    return out


def target(rep: Reproduction, name: str):
    def block(ctx) -> str:
        src = _source(ctx, rep, name)
        if src is None:
            return rep.pending
        study, config, legacy_name, recs = src
        causes, assigned = load_causes(ctx.config(f"papers/gaps/{rep.paper}.yaml"))
        mine = [g for g in assigned if g.get("evidence", rep.paper) == study]  # causes explain the cells of one study
        lines = ["| row | column | paper | ours | Δ | within 2 points | cause |", "|---|---|---|---|---|---|---|"]
        cells = _cells(ctx, study, config, name)
        for c in cells:
            why = ""
            if c["within"] is False:
                cause = cause_of(mine, name, c["row"], c["column"])
                why = (f"[{cause}]({cause_link(causes[cause])}) ({LABEL[causes[cause].status]})" if cause
                       else registered_cause(ctx, study, name, c["row"], c["column"]) or NO_CAUSE)
            yes = {True: "yes", False: "no", None: "-"}[c["within"]]
            paper = "-" if c["paper"] is None else f"{c['paper']:.2f}"
            lines.append(f"| {c['row']} | {c['column']} | {paper} | {c['ours']} | {signed(c['delta'])} | "
                         f"{yes} | {why} |")
        compared = [c for c in cells if c["within"] is not None]
        head = (f"From `{study}`: within 2 points of the paper in {sum(c['within'] for c in compared)} of "
                f"{len(compared)} compared cells (`python -m fedflat.evidence trace {study} {name} ROW COLUMN` lists "
                f"the runs behind a cell).")
        return "\n\n".join(x for x in (label(recs, legacy_name), head, "\n".join(lines)) if x)
    return block


# a registered rule's unit state -> the gap's cause label (gaps.STATUSES); a rule that closes the gap is labelled
# by when it was fixed (decide.label: measured or post hoc)
RULE_STATUS = {"inconclusive": "inconclusive", "not_closed": "unexplained", "no_gap": "unexplained"}


def registered_cause(ctx, study: str, table: str, row: str, column: str) -> str | None:
    """The causes of a gap from the `closes_shortfall` rules declared for the cell (a unit of a finding reading
    `study` whose paper cell is this table, row and column group), each labelled by its verdict: *measured* when the
    rule was fixed before the finals and closes the gap, *post hoc* when it closes one but was written after,
    *inconclusive* (seed spread), *unexplained* when it does not close it; while its runs are missing, so it says.
    Several rules for one cell are all named, in declaration order. None: no rule is declared for the cell."""
    from .findings.decide import evaluate, label
    from .findings.declared import findings
    from .findings.sources import paper_cell

    out = []
    for f in findings(ctx):
        if f.kind != "closes_shortfall" or f.get("evidence") != study:
            continue
        for r in evaluate(ctx, f)["units"]:
            p = paper_cell(f, r["unit"])
            if p.get("table") == table and p.get("row") == row and column.startswith(str(p.get("column"))):
                if r["state"] == "waits":
                    shown = "registered; waits for its runs"
                elif r["state"] == "closes":
                    shown = label(f)
                else:
                    shown = LABEL[RULE_STATUS[r["state"]]]
                out.append(f"[{f.id}](#{f.page[1]}) ({shown})")
    return "; ".join(out) or None


def figure(rep: Reproduction, name: str):
    def block(ctx) -> str:
        link = ctx.figure_link(rep.paper, name)
        if not link:
            return rep.pending
        head = label(_records(ctx, rep.paper, rep.figures[name]), rep.legacy)
        return "\n\n".join(x for x in (head, f"![{rep.name} {name}]({link})") if x)
    return block

