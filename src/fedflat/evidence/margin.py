"""Does FedSynSAM's published margin over FedSAM appear in our runs, block by block (FedSynSAM Table II, the
Fashion-MNIST columns)? Computed from the catalog (which runs make each cell, the published values) and the
committed evidence; the rule was fixed here before any final run of blocks A, B and C under the stage-L lr picks
was read:

  margin    per column, the mean over completed seeds of FedSynSAM minus that of FedSAM (points)
  appears   the margin exceeds the two rows' pooled seed std, sqrt((sd_a^2 + sd_b^2) / 2) (ddof 1, as the tables)
  reversed  the margin is below minus that std
  within the seed spread   otherwise
A column whose runs are not all in the evidence, or with a diverged seed in either row, gets no verdict."""
from __future__ import annotations

import math

from .compare import beyond_spread, cell_value, seed_values

TABLES = {"A": "table2_A_fmnist", "B": "table2_B_fmnist", "C": "table2_C_fmnist"}
ROWS = ("FedSynSAM", "FedSAM")  # (method, baseline): the paper's claim is the first beats the second
PENDING = "No block has both rows in the committed evidence yet."


def block_rows(study, runs, name: str) -> list[dict]:
    """One row per column of table `name`: the paper's margin, ours, the pooled std and the verdict (None while the
    column is not settled)."""
    from ..papers.kinds import table_cells
    from ..papers.published import parse_published

    spec = study.tables[name]
    rows, cols, grid = table_cells(study, name, spec)
    by_label = {r["label"]: line for r, line in zip(rows, grid)}
    pub = spec.get("published") or {}
    out = []
    for j, c in enumerate(cols):
        paper = [parse_published((pub.get(r) or [None] * len(cols))[j]).mean for r in ROWS]
        rids = [[rid for rid, _ in by_label[r][j]] for r in ROWS]
        settled = all(cell_value(runs, ids, c["metric"])[2] == len(ids) for ids in rids)
        row = {"column": c["group"], "paper": None if None in paper else paper[0] - paper[1],
               "ours": math.nan, "pooled": math.nan, "verdict": None, "diverged": 0}
        if settled:
            (a, da), (b, db) = (seed_values(runs, ids, c["metric"]) for ids in rids)
            row["diverged"] = da + db
            if a and b and not row["diverged"]:
                row["ours"], row["pooled"], row["verdict"] = beyond_spread(a, b)
        out.append(row)
    return out


def _num(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.2f}"


def render(blocks: dict[str, list[dict]]) -> str:
    """The summary line and one table over the blocks that have a verdict."""
    done = {b: rows for b, rows in blocks.items() if any(r["verdict"] for r in rows)}
    if not done:
        return PENDING
    head = "; ".join(f"block {b}: appears in {sum(r['verdict'] == 'appears' for r in rows)} of "
                     f"{sum(r['verdict'] is not None for r in rows)} columns" for b, rows in done.items())
    pending = [b for b in blocks if b not in done]
    lines = [f"FedSynSAM minus FedSAM, final test accuracy (points): {head}"
             + (f"; block{'s' if len(pending) > 1 else ''} {', '.join(pending)} not settled yet" if pending else "")
             + ".", "", "| block | column | paper | ours | pooled seed std | verdict |", "|---|---|---|---|---|---|"]
    for b, rows in done.items():
        for r in rows:
            why = r["verdict"] or (f"{r['diverged']} seed(s) diverged" if r["diverged"] else "not settled")
            pooled = "-" if math.isnan(r["pooled"]) else f"{r['pooled']:.2f}"
            lines.append(f"| {b} | {r['column']} | {_num(r['paper'])} | {_num(r['ours'])} | {pooled} | {why} |")
    return "\n".join(lines)


def block(ctx) -> str:
    study = ctx.study("fedsynsam")
    runs = ctx.evidence("fedsynsam").runs()
    return render({b: block_rows(study, runs, t) for b, t in TABLES.items()})
