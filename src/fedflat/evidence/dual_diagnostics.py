"""Diagnostics of the two methods that keep FedDyn's server dual, FedSMOO and FedLESAM-D, in FedSynSAM's second
tuning protocol (issue 25), decided from the committed evidence by the rules that
config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed before their runs. They select nothing.

colgrid_A_q8_duals (hypothesis dual_lr_below_grid, Q8): the lr below VI-A's grid explains a Q8 cell above the paper's
when the method's Q8 validation score at lr 0.01 (the grid's bottom) lies within 2 points of the paper's cell and at
lr 0.001 (stage E's pick) more than 2 above (v2's rule said "at most 2 points above", which a score far below the
paper also met: a gap that changes side does not close, issue 48).
rhogrid_{A,B,C}_k10 (candidate: the radius tuned on Top-k 0.25): measured when some radius of VI-A's grid brings the Top-k
0.1 validation score within 2 points of the paper's cell while the catalog's radius does not.
The error-feedback diagnostic, which also covers FedGAMMA, is fedflat.evidence.error_feedback."""
from __future__ import annotations

from .readings import SEEDS, STUDY, TOLERANCE, cell_mean, complete, fmt_cell, published_cells, setting_cells

METHODS = ("FedSMOO", "FedLESAM-D")
Q8, TOPK10 = 1, 2  # column indices in table2_<block>_fmnist
LR_GRID = (0.001, 0.003, 0.01)  # colgrid_A_q8_duals: stage E's pick first, VI-A's bottom last
RHO_GRID = (0.001, 0.01, 0.05, 0.1, 0.5)
# radius grids: (block, method) -> the catalog's Top-k radius
RHO_GRIDS = {("A", "FedSMOO"): 0.5, ("A", "FedLESAM-D"): 0.01, ("B", "FedSMOO"): 0.5, ("C", "FedSMOO"): 0.5}
BLOCKS = ("A", "B", "C")


def experiment_cells(runs, experiment: str) -> dict[tuple[str, float, float], dict]:
    """{(method, rho, lr): cell} of one experiment's runs of FedSMOO and FedLESAM-D."""
    return setting_cells(runs, experiment, METHODS)


def _mean(cell) -> float:
    """A complete cell's mean, a diverged one as -inf (below any paper cell)."""
    m = cell_mean(cell)
    return float("-inf") if m is None else m


def lr_verdict(by_lr: dict[float, dict], paper: float) -> str:
    """dual_lr_below_grid's rule on one method's Q8 grid ({lr: cell})."""
    if not complete(*(by_lr.get(v) for v in LR_GRID)):
        return "waits for its runs"
    pick, bottom = _mean(by_lr[LR_GRID[0]]), _mean(by_lr[LR_GRID[-1]])
    if pick <= paper + TOLERANCE:
        return "no gap to explain: stage E's lr lies at most 2 points above the paper"
    if abs(bottom - paper) <= TOLERANCE:
        return "measured: the lr below VI-A's grid (at lr 0.01 within 2 points of the paper)"
    if bottom < paper - TOLERANCE:
        return "not closing: at lr 0.01 more than 2 points below the paper (the gap changes side, it does not close)"
    return "measured: not the cause (at lr 0.01, the bottom of VI-A's grid, still more than 2 points above)"


def rho_verdict(by_rho: dict[float, dict], catalog: float, paper: float) -> str:
    """The radius candidate's rule on one method's Top-k 0.1 radius grid ({rho: cell})."""
    if not complete(*(by_rho.get(v) for v in RHO_GRID)):
        return "waits for its runs"
    if abs(_mean(by_rho[catalog]) - paper) <= TOLERANCE:
        return "no gap to explain: the catalog's radius lies within 2 points"
    close = [v for v in RHO_GRID if abs(_mean(by_rho[v]) - paper) <= TOLERANCE]
    if close:
        return "measured: the radius (ρ " + ", ".join(f"{v:g}" for v in close) + " within 2 points)"
    return "measured: not the cause (no radius within 2 points)"


def block(ctx) -> str:
    """The two diagnostics' scores beside the paper's cells, with each rule's verdict."""
    runs = ctx.evidence(STUDY).runs()
    pub = {b: published_cells(ctx, METHODS, range(4), table=f"table2_{b}_fmnist") for b in BLOCKS}
    head = (f"Validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}; `{STUDY}`), beside "
            "the paper's test accuracy. Each verdict is the rule of the tuning config's header.")
    lines = [head, "", "Block A, Q8, lr grid (`colgrid_A_q8_duals`):", "",
             "| method | paper | " + " | ".join(f"lr {v:g}" for v in LR_GRID) + " | verdict |",
             "|---|---|" + "---|" * len(LR_GRID) + "---|"]
    q8 = experiment_cells(runs, "colgrid_A_q8_duals")
    for method in METHODS:
        by_lr = {lr: c for (m, _, lr), c in q8.items() if m == method}
        paper = pub["A"][method][Q8]
        lines.append(f"| {method} | {paper:.2f} | " + " | ".join(fmt_cell(by_lr.get(v)) for v in LR_GRID)
                     + f" | {lr_verdict(by_lr, paper)} |")
    lines += ["", "Top-k 0.1, radius grid at the catalog's Top-k lr and reading (`rhogrid_A_k10`, `rhogrid_B_k10`, `rhogrid_C_k10`):", "",
              "| block | method | paper | " + " | ".join(f"ρ {v:g}" for v in RHO_GRID) + " | catalog's ρ | verdict |",
              "|---|---|---|" + "---|" * len(RHO_GRID) + "---|---|"]
    for (blk, method), catalog in RHO_GRIDS.items():
        grid = experiment_cells(runs, f"rhogrid_{blk}_k10")
        by_rho = {rho: c for (m, rho, _), c in grid.items() if m == method}
        paper = pub[blk][method][TOPK10]
        lines.append(f"| {blk} | {method} | {paper:.2f} | " + " | ".join(fmt_cell(by_rho.get(v)) for v in RHO_GRID)
                     + f" | {catalog:g} | {rho_verdict(by_rho, catalog, paper)} |")
    return "\n".join(lines)
