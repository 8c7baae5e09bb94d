"""Accuracy tables: final-round accuracy, mean ± std over seeds, and the mean over the last 10%
of evaluated rounds. Never max-over-rounds (a test-set selection the papers' code often does)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...core.recorded import FAILED
from ...core.util.io import write_text
from ...core.util.markdown import md_table
from .collect import load_runs

GROUP_COLS = ["dataset", "model", "partition"]


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (algorithm, dataset, model, partition) with seed statistics."""
    out = []
    for keys, g in runs.groupby(["algorithm"] + GROUP_COLS, sort=False):
        ok = g[g["status"] == "completed"]
        final = 100 * ok["final_acc"].astype(float)
        last = 100 * ok["last10_acc"].astype(float)
        out.append({
            **dict(zip(["algorithm"] + GROUP_COLS, keys)),
            "seeds": len(g), "completed": len(ok), "diverged": int(g["status"].isin(FAILED).sum()),
            "final_mean": final.mean() if len(ok) else np.nan,
            "final_std": final.std(ddof=1) if len(ok) > 1 else (0.0 if len(ok) else np.nan),
            "last10_mean": last.mean() if len(ok) else np.nan,
            "last10_std": last.std(ddof=1) if len(ok) > 1 else (0.0 if len(ok) else np.nan),
        })
    return pd.DataFrame(out)


def cell(r) -> str:
    if r["completed"] == 0:
        return "diverged" if r["diverged"] else "n/a"
    s = f"{r['final_mean']:.2f} ± {r['final_std']:.2f} ({r['last10_mean']:.2f})"
    if r["diverged"]:
        s += f" [{r['diverged']} diverged]"
    return s


def pivot(summary: pd.DataFrame) -> pd.DataFrame:
    summary = summary.copy()
    summary["cell"] = summary.apply(cell, axis=1)
    cols = [c for c in GROUP_COLS if summary[c].nunique() > 1] or ["partition"]
    summary["column"] = summary[cols].astype(str).agg(" / ".join, axis=1)
    order_rows = list(dict.fromkeys(summary["algorithm"]))
    order_cols = list(dict.fromkeys(summary["column"]))
    t = summary.pivot(index="algorithm", columns="column", values="cell").reindex(index=order_rows, columns=order_cols)
    t.index.name = "Algorithm"
    t.columns.name = None
    return t


def render_accuracy_table(entries: list[dict], out_base: str | Path, title: str = "", note: str = "") -> pd.DataFrame:
    runs = load_runs(entries)
    summary = summarise(runs)
    table = pivot(summary)
    seeds = sorted(runs["seed"].unique().tolist())
    caption = (f"Test accuracy (%) of the global model: final round, mean ± std over seeds {seeds}; "
               f"in parentheses the mean over the last 10% of evaluated rounds.")
    if note:
        caption += " " + note
    out_base = Path(out_base)
    md = (f"# {title}\n\n" if title else "") + md_table(table) + f"\n\n{caption}\n"
    write_text(out_base.with_suffix(".md"), md)
    write_text(out_base.with_suffix(".csv"), summary.to_csv(index=False))
    tex = table.to_latex(escape=True, caption=caption, label=f"tab:{out_base.name}")
    write_text(out_base.with_suffix(".tex"), tex.replace("±", r"$\pm$"))
    return summary
