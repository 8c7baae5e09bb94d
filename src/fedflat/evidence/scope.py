"""Stage S of FedSynSAM's second tuning protocol (issue 25): which norm scope of the stochastic quantizer the
paper's numbers support, decided from the committed evidence by the rule that
config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed before its runs.

Eq. 3 takes one l2 norm over the whole update (scope `global`, the literal reading); the paper's Q4 and Q8 cells
agree closely, which the whole-vector norm's variance (sqrt(d)/a: 26 at 4 bits for the MLP) makes unlikely.
Candidates: global, per_tensor (one norm per parameter tensor), bucket512 (one norm per 512 consecutive values).
Rule: the quantizer is one operator for every method (Sec. III-A), so adopt the one scope under which the most
(method, column) cells of block A's Q4 and Q8 columns lie within 2 points of the paper's cell (validation,
last10_acc, mean over seeds 0-1); ties: global, then per_tensor. A cell with a diverged or missing seed is never
within. The adoption waits until every run of the stage is recorded."""
from __future__ import annotations

import re

from .readings import STUDY, fmt_cell, published_cells, stage_cells, within_paper

SCOPES = ("global", "per_tensor", "bucket512")  # also the tie order
COLUMNS = {"q4": "FMNIST Q4", "q8": "FMNIST Q8"}  # the catalog's first two Table II (A) columns
METHODS = ("FedAvg", "DynaFed", "FedSAM", "FedLESAM", "FedSMOO", "FedGAMMA", "FedLESAM-D", "FedLESAM-S",
           "FedSynSAM")
SEEDS = (0, 1)
_EXPERIMENT = re.compile(r"^scope_A_(q4|q8)_(global|per_tensor|bucket512)$")


def scope_cells(runs) -> dict[tuple[str, str, str], dict]:
    """{(method, column key, scope): {acc, diverged, seeds}} from the stage's experiments scope_A_<column>_<scope>."""
    return stage_cells(runs, _EXPERIMENT, METHODS)


def within_counts(cells: dict, published: dict[str, list[float | None]]) -> dict[str, dict[str, list[str]]]:
    """{scope: {method: [column keys within TOLERANCE of the paper]}}; `published`: {method: [paper's mean per
    column, in COLUMNS order]}."""
    out: dict[str, dict[str, list[str]]] = {}
    for scope in SCOPES:
        out[scope] = {}
        for method in METHODS:
            hits = []
            for j, col in enumerate(COLUMNS):
                if within_paper(cells.get((method, col, scope)), published[method][j]):
                    hits.append(col)
            out[scope][method] = hits
    return out


def adopt(cells: dict, published: dict[str, list[float | None]], per: dict | None = None) -> dict:
    """{scope, within: {scope: n (method, column) cells within TOLERANCE}} by the stage's rule (`per`: within_counts
    already computed for these cells)."""
    per = per or within_counts(cells, published)
    within = {s: sum(len(h) for h in per[s].values()) for s in SCOPES}
    best = max(SCOPES, key=lambda s: (within[s], -SCOPES.index(s)))
    return {"scope": best, "within": within}


def block(ctx) -> str:
    """The stage's scores beside the paper's cells and, once complete, the scope adopted."""
    cells = scope_cells(ctx.evidence(STUDY).runs())
    pub = published_cells(ctx, METHODS, range(len(COLUMNS)))
    expected = len(METHODS) * len(COLUMNS) * len(SCOPES) * len(SEEDS)
    recorded = sum(c["seeds"] for c in cells.values())
    complete = recorded >= expected
    per = within_counts(cells, pub)
    rule = adopt(cells, pub, per)
    heads = [f"{COLUMNS[c]}, {s}" for c in COLUMNS for s in SCOPES]
    lines = [f"Validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}) of every Table II "
             f"method at the lr, radius and reading the catalog ran when stage S was fixed, under each norm scope "
             f"of the quantizer, block A; `paper`: the "
             f"paper's test accuracy; `*`: within 2 points of it. Recorded runs: {recorded} of {expected} "
             f"(`{STUDY}`).", "",
             "| method | " + " | ".join(f"{COLUMNS[c]}, paper" for c in COLUMNS) + " | " + " | ".join(heads) + " |",
             "|---|" + "---|" * (len(COLUMNS) + len(heads))]
    for method in METHODS:
        row = [f"{v:.2f}" if v is not None else "-" for v in pub[method]]
        for c in COLUMNS:
            for s in SCOPES:
                cell = cells.get((method, c, s))
                row.append(fmt_cell(cell) + (" *" if c in per[s][method] else ""))
        lines.append(f"| {method} | " + " | ".join(row) + " |")
    lines.append("")
    counts = ", ".join(f"{s}: {rule['within'][s]}" for s in SCOPES)
    total = len(METHODS) * len(COLUMNS)
    if complete:
        lines.append(f"(method, column) cells within 2 points of the paper, of {total}: {counts}. Adopted by the "
                     f"rule: `{rule['scope']}`.")
    else:
        lines.append(f"(method, column) cells within 2 points of the paper so far, of {total}: {counts}. The adoption "
                     f"waits until all {expected} runs are recorded.")
    return "\n".join(lines)
