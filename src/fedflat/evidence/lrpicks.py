"""Stages L1 and L2 of FedSynSAM's second tuning protocol (issue 25): each Table II method's local lr per block
(A, B, C) and column family (Q4 stands for the Q columns, Top-k 0.25 for the Top-k ones), picked from the committed
evidence by the rule config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed before its runs: the best validation
score (last10_acc, mean over seeds 0-1); ties: the smaller lr; a cell with a diverged seed is never picked. The
rule is the one every grid search of the project uses (papers.kinds_tuning.cell_means / ranked_cells).

The catalog (config/papers/fedsynsam.yaml) then takes the picks: `catalog_lrs` reads what it runs, and a test
checks the two agree wherever a method's grid is complete in the evidence."""
from __future__ import annotations

import math
import re

STUDY = "fedsynsam_tuning_fmnist_v2"
SEEDS = (0, 1)
BLOCKS = {"A": "Path(1), 10 clients, full participation", "B": "Dir(0.01), 10 clients, full participation",
          "C": "Dir(0.01), 50 clients, 20 % participation"}
FAMILIES = {"q4": ("q4", "q8"), "k25": ("k10", "k25")}  # the tuned column -> the catalog columns it stands for
FAMILY_NAMES = {"q4": "Q (tuned on Q4)", "k25": "Top-k (tuned on Top-k 0.25)"}
_EXPERIMENT = re.compile(r"^lr2?_([ABC])_(q4|k25)$")


def lr_scores(runs):
    """One row per recorded stage-L run: block, family, method, value (lr), seed, acc (% or NaN if diverged)."""
    import pandas as pd

    rows = []
    for _, r in runs.iterrows():
        for exp in str(r["experiments"]).split(";"):
            m = _EXPERIMENT.match(exp)
            if m is None:
                continue
            done = r["status"] == "completed" and math.isfinite(float(r["last10_acc"]))
            rows.append({"block": m.group(1), "family": m.group(2), "method": r["label"], "row": "",
                         "value": float(r["lr"]), "seed": int(r["seed"]),
                         "acc": float(r["last10_acc"]) if done else math.nan})
    return pd.DataFrame(rows, columns=["block", "family", "method", "row", "value", "seed", "acc"])


def picks(runs, grid_size: int = 3) -> dict[tuple[str, str, str], dict]:
    """{(block, family, method): {means: {lr: mean or NaN}, complete, lr (the pick, None until complete or where
    every cell diverged)}}. Complete: `grid_size` lrs, each with every seed recorded."""
    from ..papers.kinds_tuning import grid_means, ranked_cells

    df = lr_scores(runs)
    out = {}
    for (block, family), g in df.groupby(["block", "family"], sort=True):
        means = grid_means(g)
        ranked = ranked_cells(means)
        for method, h in g.groupby("method", sort=False):
            seeds = h.groupby("value")["seed"].apply(lambda s: set(s) >= set(SEEDS))
            complete = len(seeds) >= grid_size and bool(seeds.all())
            best = ranked.get(method) or []
            out[(block, family, method)] = {
                "means": {v: float(means.loc[(method, ""), v]) for v in sorted(h["value"].unique())},
                "complete": complete, "lr": best[0][1] if complete and best else None}
    return out


def catalog_lrs(study) -> dict[tuple[str, str, str], set[float]]:
    """{(block, family, method label): the local lrs the catalog's Fashion-MNIST Table II runs use}."""
    column_family = {c: f for f, cols in FAMILIES.items() for c in cols}
    out: dict[tuple, set] = {}
    for ename, entries in study.experiments.items():
        m = re.match(r"^t2([ABC])_fmnist_(q4|q8|k10|k25)$", ename)
        if m is None:
            continue
        for rid, lab in entries:
            key = (m.group(1), column_family[m.group(2)], lab["algorithm"])
            out.setdefault(key, set()).add(float(study.runs[rid].training["lr"]))
    return out


def edge(lr: float, grid: list[float]) -> str:
    """' (grid top)' / ' (grid bottom)' for a pick on the edge of its grid: the grid does not bracket it."""
    return " (grid top)" if lr == max(grid) else (" (grid bottom)" if lr == min(grid) else "")


def _cell(v: float) -> str:
    return "diverged" if v != v else f"{v:.2f}"


def block(ctx) -> str:
    """Per block and family: every method's validation score per lr, its pick once complete, and the catalog's lr."""
    from ..study import load_config_file, load_study

    runs = ctx.evidence(STUDY).runs()
    p = picks(runs)
    catalog = catalog_lrs(load_study(load_config_file(ctx.config("papers/fedsynsam.yaml"))))
    if not p:
        return ("Not in the committed evidence yet: `snakemake --cores all --keep-going --configfile "
                "config/papers/tuning/fedsynsam_fmnist_v2.yaml` runs stages L1 and L2, then `python -m "
                "fedflat.evidence export config/papers/tuning/fedsynsam_fmnist_v2.yaml` records them.")
    done = sum(v["complete"] for v in p.values())
    lines = [f"Validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}) per local lr; "
             f"**bold**: the rule's pick, marked where it sits on the edge of its grid. Complete grids: {done} of {len(BLOCKS) * len(FAMILIES) * 9} (block, "
             f"family and method); {len(p)} have a record so far. `catalog`: the lr the catalog runs in those "
             f"columns.", "",
             "| block | columns | method | validation accuracy per lr | pick | catalog |", "|---|---|---|---|---|---|"]
    for (b, f, method), v in sorted(p.items()):
        cells = ", ".join((f"**{lr:g}: {_cell(a)}**" if lr == v["lr"] else f"{lr:g}: {_cell(a)}")
                          for lr, a in v["means"].items())
        pick = (f"{v['lr']:g}{edge(v['lr'], list(v['means']))}" if v["lr"] is not None
                else ("every cell diverged" if v["complete"] else "incomplete"))
        cat = ", ".join(f"{x:g}" for x in sorted(catalog.get((b, f, method), ()))) or "–"
        lines.append(f"| {b} | {FAMILY_NAMES[f]} | {method} | {cells} | {pick} | {cat} |")
    return "\n".join(lines)
