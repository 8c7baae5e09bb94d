"""Generated blocks of docs/reproduction.md: FedSynSAM's Fashion-MNIST targets, one table per target (paper / ours /
Δ / within 2 points / the cause of each larger gap), from the committed evidence and the configs' published values.

A target is shown from the first of its sources whose exported table rests on regenerable records only (the v3
protocol's study, then the catalog's); while none does, from the first that has the table, under a label saying its
records cannot be regenerated (evidence/legacy.py). So the v2 tables stand, labelled, until v3's are exported."""
from __future__ import annotations

import io
import math

from .atlas import anchor
from .compare import signed, within
from .gaps import LABEL, cause_link, cause_of, load_causes
from .legacy import label, reasons

TARGETS = ("table2_A_fmnist", "table2_B_fmnist", "table2_C_fmnist", "table1_hessian")
FIGURES = {"fig1_landscape": "table1_hessian"}  # a figure, and the table whose runs it draws (seed 0 of Table I's)
# (evidence study, the config its tables are declared in, under config/; the label of its legacy records)
SOURCES = (("fedsynsam_v3", "papers/tuning/fedsynsam_fmnist_v3.yaml", "Legacy v3"),
           ("fedsynsam", "papers/fedsynsam.yaml", "Legacy v2"))
PAPER = "fedsynsam"  # the catalog: gap causes (config/papers/gaps/<paper>.yaml) and the atlas
PENDING = ("Not in the committed evidence yet. (The runs of 25 Nov 2026 behind the earlier text were lost with "
           "their machine before per-run evidence was kept; they are regenerated under the protocol of issue 25.)")


def _row(ctx, target: str) -> dict:
    return next(r for r in ctx.atlas(PAPER) if r["target"] == target)


def summary_linking(page: str):
    """The catalog's summary table, its links relative to the page it stands on (`page`: the path to
    reproduction.md from there, "" on that page itself), under the label of its legacy records."""
    def summary(ctx) -> str:
        lines = ["| target | paper table | published cells | re-run at paper scale | within 2 points |",
                 "|---|---|---|---|---|"]
        for t in TARGETS:
            r = _row(ctx, t)
            share = f"{r['within']} of {r['compared']}" if r["compared"] else "-"
            lines.append(f"| [`{t}`]({page}#{anchor(PAPER, t)}) | {r['ref']} | {r['published']} | "
                         f"{r['reproduced']} | {share} |")
        runs = ctx.evidence(PAPER).runs()
        head = label(runs, "Legacy v2")
        return "\n\n".join(x for x in (head, "\n".join(lines)) if x)
    return summary


def _records(ctx, study: str, table: str):
    """The records behind an exported table (its cells.csv run ids)."""
    cells = ctx.evidence(study).cells()
    ids = set(cells[cells["table"] == table]["run_id"])
    runs = ctx.evidence(study).runs()
    return runs[runs["run_id"].isin(ids)]


def _source(ctx, table: str) -> tuple | None:
    """(study, config, legacy label, its records) of the first source whose table rests on regenerable records only,
    else of the first that has the table at all; None while none does."""
    found = []
    for study, config, name in SOURCES:
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
        if int(r.diverged) and int(r.n_seeds):
            ours += f" ({int(r.diverged)} of {int(r.diverged) + int(r.n_seeds)} seeds diverged)"
        out.append({"row": r.row, "column": r.group, "paper": p, "ours": ours,
                    "delta": math.nan if p is None else mean - p, "within": ok})
    return out


def target(name: str):
    def block(ctx) -> str:
        src = _source(ctx, name)
        if src is None:
            return PENDING
        study, config, legacy_name, recs = src
        causes, gaps = load_causes(ctx.config(f"papers/gaps/{PAPER}.yaml"))
        mine = [g for g in gaps if g.get("evidence", PAPER) == study]  # causes explain the cells of one study
        lines = ["| row | column | paper | ours | Δ | within 2 points | cause |", "|---|---|---|---|---|---|---|"]
        cells = _cells(ctx, study, config, name)
        for c in cells:
            why = ""
            if c["within"] is False:
                cause = cause_of(mine, name, c["row"], c["column"])
                why = (f"[{cause}]({cause_link(causes[cause])}) ({LABEL[causes[cause].status]})" if cause
                       else "**none assigned**")
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


def figure(name: str):
    def block(ctx) -> str:
        link = ctx.figure_link(PAPER, name)
        if not link:
            return PENDING
        head = label(_records(ctx, PAPER, FIGURES[name]), "Legacy v2")
        return "\n\n".join(x for x in (head, f"![FedSynSAM {name}]({link})") if x)
    return block

