"""The coordinate searches of FedSynSAM's second tuning protocol (issue 25), read from the committed evidence by the
rule config/papers/tuning/fedsynsam_fmnist_v2.yaml fixed before their runs:

  stage L1/L2  each Table II method's local lr per block (A, B, C) and column family (Q4 stands for the Q columns,
               Top-k 0.25 for the Top-k ones), at a fixed radius (grid of 3 lrs); stage L3 runs a grid again at a
               radius stage P moved, and stage E adds one lr past a grid's edge pick (experiments lr3_*, lr4_*:
               the same grid, keyed by its radius, so the rule picks over the extended grid);
  stage P      each SAM-type method's radius per column family on block A, at its stage-L lr (VI-A's 5 radii).

Rule, for both: the best validation score (last10_acc, mean over seeds 0-1); ties: the smaller value; a cell with a
diverged seed is never picked; no pick until the grid is complete. It is the rule every grid search of the project
uses (report.grids.grid_means / ranked_cells). A grid is keyed by the other coordinate too (`at`: the radius
of an lr grid, the lr of a radius grid), so an lr grid that runs again at a new radius stays apart from the old one.

The catalog (config/papers/fedsynsam.yaml) then takes the picks: `catalog_values` reads what it runs, and a test
checks the two agree wherever a grid at the catalog's other coordinate is complete."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass


STUDY = "fedsynsam_tuning_fmnist_v2"
SEEDS = (0, 1)
BLOCKS = {"A": "Path(1), 10 clients, full participation", "B": "Dir(0.01), 10 clients, full participation",
          "C": "Dir(0.01), 50 clients, 20 % participation"}
FAMILIES = {"q4": ("q4", "q8"), "k25": ("k10", "k25")}  # the tuned column -> the catalog columns it stands for
FAMILY_NAMES = {"q4": "Q (tuned on Q4)", "k25": "Top-k (tuned on Top-k 0.25)"}
METHODS = 9  # Table II's rows


@dataclass(frozen=True)
class Stage:
    param: str  # the searched coordinate: "lr" or "rho"
    other: str  # the fixed one
    experiment: re.Pattern  # experiment name -> (block, family)
    grid_size: int
    methods: int  # how many of Table II's methods it searches


LR = Stage("lr", "rho", re.compile(r"^lr\d?_([ABC])_(q4|k25)$"), 3, METHODS)
RHO = Stage("rho", "lr", re.compile(r"^rho_([ABC])_(q4|k25)$"), 5, 7)


def value_of(run, param: str) -> str:
    """A run's value of `param` as a key: '%g' of the local lr or of the radius; '' for a method without one."""
    if param == "lr":
        return f"{float(run['lr']):g}"
    hp = run.get("hparams")
    hp = hp if isinstance(hp, dict) else json.loads(hp if isinstance(hp, str) and hp else "{}")
    return "" if hp.get(param) is None else f"{float(hp[param]):g}"


def stage_scores(runs, stage: Stage = LR):
    """One row per recorded run of the stage: block, family, method, at (the other coordinate), value, seed, acc (%
    or NaN if diverged)."""
    import pandas as pd

    rows = []
    for _, r in runs.iterrows():
        for m in [m for m in map(stage.experiment.match, str(r["experiments"]).split(";")) if m]:
            done = r["status"] == "completed" and math.isfinite(float(r["last10_acc"]))
            rows.append({"block": m.group(1), "family": m.group(2), "method": r["label"],
                         "at": value_of(r, stage.other), "row": "", "value": float(value_of(r, stage.param)),
                         "seed": int(r["seed"]), "acc": float(r["last10_acc"]) if done else math.nan})
    cols = ["block", "family", "method", "at", "row", "value", "seed", "acc"]
    return pd.DataFrame(rows, columns=cols).drop_duplicates(["block", "family", "method", "at", "value", "seed"])


def lr_scores(runs):
    return stage_scores(runs, LR)


def picks(runs, stage: Stage = LR) -> dict[tuple[str, str, str, str], dict]:
    """{(block, family, method, at): {means: {value: mean or NaN}, complete, pick (None until complete or where
    every cell diverged)}}. Complete: `stage.grid_size` values, each with every seed recorded."""
    from ..report.grids import grid_means, ranked_cells

    df = stage_scores(runs, stage)
    out = {}
    for (block, family, method, at), h in df.groupby(["block", "family", "method", "at"], sort=True):
        means = grid_means(h)
        best = ranked_cells(means).get(method) or []
        seeds = h.groupby("value")["seed"].apply(lambda s: set(s) >= set(SEEDS))
        complete = len(seeds) >= stage.grid_size and bool(seeds.all())
        out[(block, family, method, at)] = {
            "means": {v: float(means.loc[(method, ""), v]) for v in sorted(h["value"].unique())},
            "complete": complete, "pick": best[0][1] if complete and best else None}
    return out


def current(p: dict, catalog_at: dict) -> dict[tuple[str, str, str], dict]:
    """The grids run at the catalog's other coordinate, keyed (block, family, method): the ones whose pick the
    catalog must take. `catalog_at`: {(block, family, method): set of the catalog's values of `stage.other`}."""
    return {k[:3]: v for k, v in p.items() if catalog_at.get(k[:3]) == {k[3]}}


def catalog_values(study, param: str) -> dict[tuple[str, str, str], set[str]]:
    """{(block, family, method label): the values of `param` ('%g', '' if none) the catalog's Fashion-MNIST
    Table II runs use}."""
    column_family = {c: f for f, cols in FAMILIES.items() for c in cols}
    out: dict[tuple, set] = {}
    for ename, entries in study.experiments.items():
        m = re.match(r"^t2([ABC])_fmnist_(q4|q8|k10|k25)$", ename)
        if m is None:
            continue
        for rid, lab in entries:
            spec = study.runs[rid]
            run = {"lr": spec.training["lr"], "hparams": spec.hparams}
            out.setdefault((m.group(1), column_family[m.group(2)], lab["algorithm"]), set()).add(value_of(run, param))
    return out


LADDER = (0.001, 0.003, 0.01, 0.05, 0.1, 0.5)  # stage E: an lr grid's edge pick gets the next value on it


def edge(value: float, grid: list[float], ladder: tuple[float, ...] | None = None) -> str:
    """' (grid top)' / ' (grid bottom)' for a pick on the edge of its grid: the grid does not bracket it. With
    stage E's `ladder`, also whether the grid is to be extended past it or has reached the ladder's end."""
    if value not in (min(grid), max(grid)):
        return ""
    side = "grid top" if value == max(grid) else "grid bottom"
    if ladder is None:
        return f" ({side})"
    beyond = next_lr(value, grid, ladder) is not None
    return f" ({side}; stage E extends it)" if beyond else f" ({side}: the end of stage E's ladder)"


def next_lr(pick: float, grid: list[float], ladder: tuple[float, ...] = LADDER) -> float | None:
    """Stage E's next lr for a grid whose pick is `pick`: the ladder value past the edge it sits on, None when the
    pick is interior or the ladder ends there (the one place that decides whether stage E extends a grid)."""
    if pick == max(grid) and pick < ladder[-1]:
        return min(v for v in ladder if v > pick)
    if pick == min(grid) and pick > ladder[0]:
        return max(v for v in ladder if v < pick)
    return None


def stage_e_due(p: dict, catalog_at: dict, block: str) -> list[dict]:
    """Every lr grid of `block` that the catalog follows (at its radius), in order: method, family, complete, pick,
    and `add`, the lr stage E must run next (None: settled, or not complete yet)."""
    out = []
    for (b, family, method), v in sorted(current(p, catalog_at).items()):
        if b != block:
            continue
        pick = v["pick"]
        add = next_lr(pick, sorted(v["means"])) if pick is not None else None
        out.append({"family": family, "method": method, "complete": v["complete"], "pick": pick, "add": add})
    return out


def stage_e_report(block: str, root=None) -> str:
    """`python -m fedflat.evidence stage-e BLOCK`: stage_e_due from the committed evidence and today's catalog."""
    from pathlib import Path

    from ..study import load_config_file, load_study
    from .store import load

    root = Path(root or ".")
    catalog = load_study(load_config_file(root / "config/papers/fedsynsam.yaml"))
    lrs = catalog_values(catalog, "lr")
    due = stage_e_due(picks(load(STUDY, root / "results/evidence").runs()), catalog_values(catalog, "rho"), block)
    lines = [f"Block {block}: the lr grids the catalog follows (validation, seeds 0-1; {STUDY})", "",
             "| columns | method | grid complete | pick | catalog lr | stage E runs next |", "|---|---|---|---|---|---|"]
    for d in due:
        pick = "-" if d["pick"] is None else f"{d['pick']:g}"
        nxt = f"lr {d['add']:g}" if d["add"] is not None else ("nothing: settled" if d["complete"] else "-")
        lines.append(f"| {FAMILY_NAMES[d['family']]} | {d['method']} | {'yes' if d['complete'] else 'no'} | {pick} | "
                     f"{', '.join(sorted(lrs.get((block, d['family'], d['method']), set()))) or '-'} | {nxt} |")
    return "\n".join(lines)


def _cell(v: float) -> str:
    return "diverged" if v != v else f"{v:.2f}"


def render(p: dict, stage: Stage, catalog: dict, catalog_at: dict, blocks: int) -> str:
    """Per grid: every method's validation score per value, its pick once complete, and the catalog's value."""
    done = sum(v["complete"] for v in current(p, catalog_at).values())
    name = {"lr": "local lr", "rho": "radius"}
    at_name = {"lr": "at lr", "rho": "at radius"}[stage.other]
    lines = [f"Validation accuracy (%, last 10 % of rounds, mean over seeds {SEEDS[0]}-{SEEDS[-1]}) per "
             f"{name[stage.param]}; **bold**: the rule's pick, marked where it sits on the edge of its grid. Complete "
             f"grids: {done} of {blocks * len(FAMILIES) * stage.methods} (block, family and method) at the catalog's "
             f"{name[stage.other]}; {len(p)} grids have a record so far. `{at_name}`: the fixed "
             f"{name[stage.other]} of the grid ('–': the method has none; *catalog*: the catalog runs it). "
             f"`catalog`: the {name[stage.param]} the catalog runs in those columns.", "",
             f"| block | columns | method | {at_name} | validation accuracy per {name[stage.param]} | pick | catalog |",
             "|---|---|---|---|---|---|---|"]
    for (b, f, method, at), v in sorted(p.items()):
        cells = ", ".join((f"**{x:g}: {_cell(a)}**" if x == v["pick"] else f"{x:g}: {_cell(a)}")
                          for x, a in v["means"].items())
        here_now = catalog_at.get((b, f, method)) == {at}  # stage E extends only the grids the catalog follows
        ladder = LADDER if stage.param == "lr" and here_now else None
        pick = (f"{v['pick']:g}{edge(v['pick'], list(v['means']), ladder)}" if v["pick"] is not None
                else ("every cell diverged" if v["complete"] else "incomplete"))
        cat = ", ".join(sorted(catalog.get((b, f, method), ()), key=lambda s: float(s or 0))) or "–"
        here = (at or "–") + (" (*catalog*)" if here_now else "")
        lines.append(f"| {b} | {FAMILY_NAMES[f]} | {method} | {here} | {cells} | {pick} | {cat} |")
    return "\n".join(lines)


def _block(ctx, stage: Stage, blocks: int) -> str:
    p = picks(ctx.evidence(STUDY).runs(), stage)
    if not p:
        return ("Not in the committed evidence yet: `snakemake --cores all --keep-going --configfile "
                "config/papers/tuning/fedsynsam_fmnist_v2.yaml` runs the stage, then `python -m "
                "fedflat.evidence export config/papers/tuning/fedsynsam_fmnist_v2.yaml` records it.")
    study = ctx.study("fedsynsam")
    return render(p, stage, catalog_values(study, stage.param), catalog_values(study, stage.other), blocks)


def block(ctx) -> str:
    """Stages L1/L2: the lr picks."""
    return _block(ctx, LR, len(BLOCKS))


def rho_block(ctx) -> str:
    """Stage P: the radius picks (block A; each applies to its family's columns in every block)."""
    return _block(ctx, RHO, 1)
