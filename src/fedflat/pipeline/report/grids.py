"""Grid selection, shared by the paper catalogs' grid_search tables and the leaderboard's tuning checkpoints
(both above this layer): a grid's runs laid out as rows of (method, other settings, value, seed, criterion), the
mean per cell, the rule that picks the best cell (a cell with a diverged seed is never picked; ties: the earlier
row, then the smaller value) and the edge marks of a pick. Settings are read from the runs' specs and outcomes,
never from their labels; `setting_text` only prints them."""
from __future__ import annotations

import json

from ...core.errors import ConfigError
from ...core.recorded import read_outcome

METRICS = ("final_acc", "last10_acc")
SYMBOLS = {"rho": "ρ", "lam": "λ", "alpha": "α", "beta": "β", "kappa": "κ", "mu": "μ", "lr": "lr"}


def setting_text(setting: dict) -> str:
    """{'rho': 0.05, 'lam': 0.9} -> 'ρ=0.05, λ=0.9' (the grid's own numbers, plainly formatted)."""
    return ", ".join(f"{SYMBOLS.get(k, k)}={v:g}" if isinstance(v, (int, float)) else f"{SYMBOLS.get(k, k)}={v}"
                     for k, v in setting.items())


def grid_scores(m: dict):
    """One row per run: method, its other varying hyperparameters (row), the value of `param`, the criterion."""
    import pandas as pd

    rows = []
    for e in m["entries"]:
        s = read_outcome(e["dir"], e.get("run"))
        if s.get("eval_split") != "validation":
            raise ConfigError(f"{e['dir']}: evaluated on {s.get('eval_split', 'test')!r}, not on a validation split")
        acc = s.get(m["metric"])
        row = e.get("row") or {}
        rows.append({"method": e["method"], "preset": e.get("preset", ""), "row": setting_text(row),
                     "row_params": json.dumps(row, sort_keys=True), "value": e["value"], "seed": e["seed"],
                     "acc": float("nan") if acc is None else 100 * acc, "status": s["status"]})
    return pd.DataFrame(rows)


def cell_means(df):
    """(method, row, value) -> the criterion's mean over the cell's seeds; NaN where any seed diverged, so a
    setting that diverged during tuning is never picked (not the mean of the seeds that survived)."""
    return df.groupby(["method", "row", "value"], sort=False)["acc"].agg(
        lambda s: float(s.mean()) if s.notna().all() else float("nan"))


def grid_means(df):
    """(method, row) x value: cell_means, columns in increasing value, rows in grid order."""
    table = cell_means(df).unstack("value")
    return table[sorted(table.columns)]


def ranked_cells(mean) -> dict[str, list[tuple]]:
    """Per method, its completed (row, value, mean) cells, best first; ties: the earlier row, then the smaller
    value. A diverged cell (NaN) is never listed."""
    out: dict[str, list] = {}
    for i, ((method, row), r) in enumerate(mean.iterrows()):
        cells = out.setdefault(method, [])
        for value, acc in r.items():
            if acc == acc:
                cells.append((i, row, value, acc))
    return {m: [(row, value, acc) for _, row, value, acc in sorted(c, key=lambda c: (-c[3], c[0], c[2]))]
            for m, c in out.items()}


def choose(mean) -> dict:
    """Per method, the best (row, value, mean) cell (ranked_cells' first), None where every cell diverged."""
    return {m: (cells[0] if cells else None) for m, cells in ranked_cells(mean).items()}


def grid_choice(m: dict) -> dict:
    """{method: {value, row (the other hyperparameters), preset, score (%)} or None where every cell diverged}."""
    df = grid_scores(m)
    out = {}
    for method, best in choose(grid_means(df)).items():
        if best is None:
            out[method] = None
            continue
        row, value, acc = best
        first = df[(df["method"] == method) & (df["row"] == row)].iloc[0]
        out[method] = {"value": value, "row": json.loads(first["row_params"]), "preset": first["preset"],
                       "score": float(acc)}
    return out


def grid_edges(df, method: str, param: str, value, row: str) -> list[str]:
    """The keys whose chosen value lies on the edge of a grid of 3 or more values ("lr at the top"): the
    best setting may lie outside the grid. Two-point grids are not flagged (every choice is an edge)."""
    own = df[df["method"] == method]
    grids = {param: sorted(own["value"].unique())}
    for params in own["row_params"].unique():
        for k, v in json.loads(params).items():
            grids.setdefault(k, set()).add(v)
    picked = {param: value, **json.loads(own[own["row"] == row].iloc[0]["row_params"])}
    out = []
    for key, vals in grids.items():
        vals = sorted(vals)
        if len(vals) >= 3 and picked[key] in (vals[0], vals[-1]):
            out.append(f"{key} at the {'top' if picked[key] == vals[-1] else 'bottom'}")
    return out
