"""Our value of a table cell from the evidence, beside the paper's: the comparison the atlas and the result
pages share (one definition of "within 2 points")."""
from __future__ import annotations

import math

import numpy as np

from ..core.recorded import FILE_COLUMNS

TOLERANCE = 2.0  # points: a reproduced cell within this of the published mean counts as matching

# paper_table metrics -> runs.csv columns (others are shown in the rendered table, not compared here)
METRIC_COLUMN = {"acc": "final_acc", "last10_acc": "last10_acc", "best_acc": "best_acc",
                 **{f"file:{fname}:{key}": col for (fname, key), col in FILE_COLUMNS.items()}}


def cell_value(runs, run_ids: list[str], metric: str) -> tuple[float, int, int]:
    """(mean over the cell's completed runs, completed runs, runs in the evidence whose value is settled) for one
    cell; NaN mean where the metric has no runs.csv column or no run completed. A completed run whose recorded
    value is missing (its Hessian not measured yet) is not settled, so the cell does not count as reproduced."""
    col = METRIC_COLUMN.get(metric)
    sub = runs[runs["run_id"].isin(run_ids)]
    done = sub[sub["status"] == "completed"]
    if col is None or col not in runs.columns or done.empty:  # a runs.csv exported before the column existed
        return float("nan"), len(done), len(sub)
    vals = done[col].to_numpy(dtype=float)
    measured = np.isfinite(vals)
    vals = vals[measured]
    settled = len(sub) - int((~measured).sum())
    return (float(vals.mean()) if len(vals) else float("nan")), len(done), settled


def within(ours: float, published: float | None, tol: float = TOLERANCE) -> bool | None:
    """|ours - published| <= tol; None where either is missing (not compared)."""
    if published is None or ours is None or math.isnan(ours):
        return None
    return abs(ours - published) <= tol


def signed(x) -> str:
    """A difference as the result pages print it: +1.23, or - where there is none."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.2f}"


def ours_text(ours: float) -> str:
    """Our value of a compared cell: NaN is a cell whose every seed diverged."""
    return "diverged" if math.isnan(ours) else f"{ours:.2f}"
