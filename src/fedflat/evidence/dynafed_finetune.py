"""Diagnostic dyna_{A,B,C}_q4 of FedSynSAM's second tuning protocol (issue 25): does DynaFed's unstated server
fine-tuning strength put it where the paper does? Decided from the committed evidence by the rule
config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed before the runs (no selection): the fine-tuning strength is a
measured cause for a block when some Adam lr of the grid brings DynaFed's validation score within 2 points of the
paper's Q4 cell while the catalog's value lies more than 2 points above it."""
from __future__ import annotations

import json

from .readings import (SEEDS, STUDY, TOLERANCE, cell_mean, complete, fmt_cell, published_cells, setting_cells,
                       within_paper)

GRID = (0.00025, 0.001, 0.003, 0.01)  # the catalog's value (DynaFed's scripts) first
BLOCKS = ("A", "B", "C")


def grid_cells(runs, block: str) -> dict[float, dict]:
    """{dyna_lr: cell} of DynaFed's runs in experiment dyna_<block>_q4."""
    return setting_cells(runs, f"dyna_{block}_q4", ("DynaFed",),
                         key=lambda r: float(json.loads(r["hparams"])["dyna_lr"]))


def verdict(cells: dict[float, dict], paper: float) -> str:
    if not complete(*(cells.get(v) for v in GRID)):
        return "waits for its runs"
    base = cell_mean(cells[GRID[0]])
    if base is not None and base <= paper + TOLERANCE:
        return "no gap to explain: the catalog's value lies within 2 points or below"
    close = [v for v in GRID[1:] if within_paper(cells[v], paper)]
    if close:
        return "measured: the fine-tuning strength (Adam lr " + ", ".join(f"{v:g}" for v in close) + " within 2 points)"
    return "measured: not the cause (no value of the grid within 2 points)"


def block(ctx) -> str:
    runs = ctx.evidence(STUDY).runs()
    lines = [f"DynaFed's validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}; "
             f"`{STUDY}`) per Adam lr of its server fine-tuning, Q4, beside the paper's test accuracy.", "",
             "| block | paper | " + " | ".join(f"lr {v:g}" + (" (catalog)" if i == 0 else "") for i, v in enumerate(GRID))
             + " | verdict |", "|---|---|" + "---|" * len(GRID) + "---|"]
    for blk in BLOCKS:
        paper = published_cells(ctx, ("DynaFed",), (0,), table=f"table2_{blk}_fmnist")["DynaFed"][0]
        cells = grid_cells(runs, blk)
        lines.append(f"| {blk} | {paper:.2f} | " + " | ".join(fmt_cell(cells.get(v)) for v in GRID)
                     + f" | {verdict(cells, paper)} |")
    return "\n".join(lines)
