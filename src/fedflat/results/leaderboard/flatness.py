"""Does a flatter global model generalise better? The rank correlations between curvature (λ_max, flatness
distance) and final test accuracy across methods, per partition: computed here once, drawn by the
flatness_vs_accuracy figure and stated in the leaderboard table."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .stats import bootstrap_ci, spearman

MEASURES = {"lambda_max": "λ_max of the final model", "flatness": "flatness distance (mean over rounds)"}


def common_lr(methods, chosen: dict):
    """The lr most methods chose (ties: the smaller) and which of `methods` chose it."""
    lr = pd.Series(list(methods)).map(lambda meth: (chosen.get(meth) or {}).get("lr"))
    modal = lr.mode().min() if lr.notna().any() else None
    return modal, (lr == modal).to_numpy()


def correlation(x, y, stat=spearman) -> dict:
    """stat(x, y) over the methods with both values, its 95 % bootstrap interval, how many methods it rests on
    and how many were left out for want of a mean accuracy (no completed seed)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    lo, hi = bootstrap_ci(x, y, stat)
    return {"r": stat(x, y), "lo": lo, "hi": hi, "n": int((~(np.isnan(x) | np.isnan(y))).sum()),
            "left_out": int(np.isnan(y).sum())}


def value_text(c: dict) -> str:
    """'-0.50 [-1.00, 1.00]' (the statistic and its interval), or 'undefined' (fewer than 3 methods, or a tie)."""
    return "undefined" if math.isnan(c["r"]) else f"{c['r']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]"


def correlation_text(c: dict, name: str = "Spearman ρ", n: bool = True) -> str:
    head = f"{name}: undefined" if math.isnan(c["r"]) else f"{name} = {value_text(c)}"
    if not n:
        return head
    return head + f" (n = {c['n']}" + (f"; {c['left_out']} without a completed seed, left out)" if c["left_out"] else ")")


def flatness_correlations(agg: pd.DataFrame, chosen: dict, partitions: list[str]) -> pd.DataFrame:
    """One row per (partition, measure, subset): all methods, and the methods at the most common lr alone (the
    flatness distance grows with the lr, so that subset is the fair one). The subset row is left out where it
    would be all methods or fewer than three."""
    rows = []
    for p in partitions:
        d = agg[agg["partition"] == p]
        modal, same = common_lr(d["method"], chosen.get(p, {}))
        y = d["final_acc"].to_numpy(dtype=float)
        for col in MEASURES:
            x = d[col].to_numpy(dtype=float)
            rows.append({"partition": p, "measure": col, "subset": "all", **correlation(x, y)})
            if same.sum() >= 3 and not same.all():
                rows.append({"partition": p, "measure": col, "subset": f"lr = {modal:g}", **correlation(x[same], y[same])})
    return pd.DataFrame(rows)
