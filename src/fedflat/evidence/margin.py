"""Does FedSynSAM's published margin over FedSAM appear in our runs, block by block (FedSynSAM Table II, the
Fashion-MNIST columns)? Computed from the catalog (which runs make each cell, the published values) and the
committed evidence; the rule was fixed here before any final run of blocks A, B and C under the stage-L lr picks
was read:

  margin    per column, the mean over completed seeds of FedSynSAM minus that of FedSAM (points)
  appears   the margin exceeds the two rows' pooled seed std, sqrt((sd_a^2 + sd_b^2) / 2) (ddof 1, as the tables)
  reversed  the margin is below minus that std
  within the seed spread   otherwise
A column whose runs are not all in the evidence, or with a diverged seed in either row, gets no verdict.

Do the lr picks explain the margin? The same test on the stage-L validation grids (seeds 0-1), per block and
column family, once both methods' grids are complete: the margin at the lr both methods ran at before stage L
(SHARED_LR, FedAvg's searched lr) against the margin at each method's own pick. The picks explain a margin where
it appears at the picks and not at the shared lr."""
from __future__ import annotations

import math

from .compare import beyond_spread, compare_cells, signed

TABLES = {"A": "table2_A_fmnist", "B": "table2_B_fmnist", "C": "table2_C_fmnist"}
ROWS = ("FedSynSAM", "FedSAM")  # (method, baseline): the paper's claim is the first beats the second
PENDING = "No block has both rows in the committed evidence yet."
SHARED_LR = 0.1  # the local lr FedSAM and FedSynSAM ran at before stage L (FedAvg's searched lr)


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
        out.append({"column": c["group"], "paper": None if None in paper else paper[0] - paper[1],
                    **compare_cells(runs, *rids, c["metric"])})
    return out


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
            lines.append(f"| {b} | {r['column']} | {signed(r['paper'])} | {signed(r['ours'])} | {pooled} | {why} |")
    return "\n".join(lines)


def block(ctx) -> str:
    study = ctx.study("fedsynsam")
    runs = ctx.evidence("fedsynsam").runs()
    return render({b: block_rows(study, runs, t) for b, t in TABLES.items()})


def lr_rows(tuning_runs, catalog_rho: dict) -> list[dict]:
    """Per (block, family) whose FedSynSAM and FedSAM grids at the catalog's radii are complete: the two picks, and
    the validation margin at SHARED_LR (`at_shared`) and at the picks (`at_picks`), each (margin, pooled std,
    verdict) or None where a seed diverged. `catalog_rho`: lrpicks.catalog_values(study, "rho")."""
    from .lrpicks import current, lr_scores, picks

    p = current(picks(tuning_runs), catalog_rho)
    scores = lr_scores(tuning_runs)
    out = []
    for block, family in sorted({(b, f) for b, f, _ in p}):
        got = [p.get((block, family, m)) for m in ROWS]
        if any(g is None or not g["complete"] for g in got):
            continue
        here = scores[(scores["block"] == block) & (scores["family"] == family)]

        def seeds(method, lr):
            (rho,) = catalog_rho[(block, family, method)]
            s = here[(here["method"] == method) & (here["at"] == rho) & (here["value"] == lr)]["acc"]
            return None if lr is None or s.empty or s.isna().any() else s.tolist()

        def at(lrs):
            vals = [seeds(m, lr) for m, lr in zip(ROWS, lrs)]
            return None if None in vals else beyond_spread(*vals)
        lrs = [g["pick"] for g in got]
        out.append({"block": block, "family": family, "picks": lrs, "at_shared": at((SHARED_LR, SHARED_LR)),
                    "at_picks": at(lrs)})
    return out


def explained(r: dict) -> bool:
    """The picks explain the margin: it appears at the picks and not at the shared lr."""
    return (r["at_picks"] is not None and r["at_picks"][2] == "appears"
            and (r["at_shared"] is None or r["at_shared"][2] != "appears"))


def render_lr(found: list[dict]) -> str:
    from .lrpicks import FAMILY_NAMES

    if not found:
        return ("No block and column family has both FedSynSAM's and FedSAM's stage-L grids complete in the committed "
                "evidence yet.")

    def cell(c):
        return "a seed diverged" if c is None else f"{c[0]:+.2f} (pooled std {c[1]:.2f}): {c[2]}"
    n = sum(map(explained, found))
    lines = [f"FedSynSAM minus FedSAM, validation accuracy (points, last 10 % of rounds, seeds 0-1): the lr picks "
             f"explain a margin in {n} of {len(found)} (block, column family) pairs with both grids complete.", "",
             f"| block | columns | picks (FedSynSAM, FedSAM) | margin at lr {SHARED_LR:g} (both) | margin at the picks | "
             f"the picks explain it |", "|---|---|---|---|---|---|"]
    for r in found:
        picks = ", ".join("none" if lr is None else f"{lr:g}" for lr in r["picks"])
        lines.append(f"| {r['block']} | {FAMILY_NAMES[r['family']]} | {picks} | {cell(r['at_shared'])} | "
                     f"{cell(r['at_picks'])} | {'yes' if explained(r) else 'no'} |")
    return "\n".join(lines)


def lr_block(ctx) -> str:
    from .lrpicks import STUDY, catalog_values

    return render_lr(lr_rows(ctx.evidence(STUDY).runs(), catalog_values(ctx.study("fedsynsam"), "rho")))
