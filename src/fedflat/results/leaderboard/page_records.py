"""The leaderboard's committed evidence (runs.csv) read by stage for its pages (page_blocks, page_verdicts): the screen's choices and edge-of-grid counts, the
continuation's picks (and those at rho = 0), the final runs and the rho = 0 twins as leaderboard.ranking reads
them (the v3 statistics are computed there, once, for the pages and the results table alike), the curvature
correlations, and the pairs of runs an exact reduction says compute the same thing. Each has a test."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ...pipeline.report.grids import cell_means, ranked_cells
from ...training.algorithms import PRESETS
from ...training.algorithms.reductions import rho0_base
from .flatness import flatness_correlations
from .ranking import seed_accuracies, summarise
from .table import edges as table_edges

STAGES = {"tune_": "screen", "cont_": "continuation", "final_": "final", "ablation_": "ablation"}


def method_label(preset: str) -> str:
    """A preset's name as the pages print it: its registry label (a record's `label` also names its setting)."""
    return PRESETS.get(preset).label


def stages_of(experiments: str) -> list[str]:
    """Every stage a run serves, from the experiments it belongs to: a continued rho = 0 cell that is also a pick's
    ablation twin (the same settings, so the same run id) serves both the continuation and the ablation."""
    out = []
    for e in str(experiments).split(";"):
        out += [stage for prefix, stage in STAGES.items() if e.startswith(prefix) and stage not in out]
    return out


def stage_runs(runs: pd.DataFrame, stage: str) -> pd.DataFrame:
    """The records of the runs that serve `stage`, with their settings parsed (`params`)."""
    r = runs[runs["experiments"].map(lambda e: stage in stages_of(e))] if len(runs) else runs
    return r.assign(params=r["hparams"].map(json.loads))


def stage_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """stage x (runs, completed, diverged, collapsed), in the protocol's order; a run serving two stages counts in
    both. Collapsed: finished at chance accuracy with an exploding loss (fl/engine.py), a failed run like a diverged
    one."""
    rows = {}
    for stage in STAGES.values():
        status = stage_runs(runs, stage)["status"]
        if len(status):
            rows[stage] = {"runs": len(status), "completed": int((status == "completed").sum()),
                           "diverged": int((status == "diverged").sum()), "collapsed": int((status == "collapsed").sum())}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["runs", "completed", "diverged", "collapsed"])


def screen_choices(runs: pd.DataFrame, grids: dict[str, dict], lr: list, lr_only: list,
                   metric: str = "last10_acc") -> pd.DataFrame:
    """Per method (preset): its best screen cell (highest `metric` among completed runs; ties: the smaller lr,
    then the earlier grid value) and whether the choice sits on an edge of its grid: the lr at the lowest or
    highest grid value, or an own key with 3 or more values at its lowest or highest. `rho0` marks a choice
    with rho = 0 (the method's ascent switched off)."""
    r = stage_runs(runs, "screen")
    r = r[r["status"] == "completed"]
    out = []
    for preset, sub in r.groupby("preset", sort=True):
        grid = grids.get(preset, {})
        sub = sub.assign(_lr=sub["lr"].astype(float)).sort_values(["_lr"], kind="stable")
        best = sub.loc[sub[metric].astype(float).idxmax()] if sub[metric].notna().any() else None
        if best is None:
            continue
        edges = table_edges({"lr": float(best["lr"]), "params": best["params"]},
                            {"lr": lr if grid else lr_only, **grid})
        out.append({"preset": preset, "label": best["label"], "lr": float(best["lr"]),
                    "params": {k: best["params"].get(k) for k in grid}, "score": float(best[metric]),
                    "edges": edges, "rho0": "rho" in grid and best["params"].get("rho") == 0.0,
                    "cells": int(len(sub))})
    return pd.DataFrame(out)


def stage_frame(runs: pd.DataFrame, stage: str = "final") -> pd.DataFrame:
    """The runs of `stage` (the final runs or their rho = 0 twins) as leaderboard.ranking reads them: partition (the
    config's name), preset, seed, status, final_acc (%)."""
    r = stage_runs(runs, stage)
    return pd.DataFrame({"partition": r["partition"].map(config_partition), "preset": r["preset"],
                         "seed": r["seed"].astype(int), "status": r["status"], "final_acc": r["final_acc"].astype(float)})


def config_partition(partition: str) -> str:
    """dir0.3-norep (a run's partition, with the sampler) -> dir0.3 (the config's, as the results table names it)."""
    return str(partition).split("-")[0]


def unstable(runs: pd.DataFrame) -> dict[str, list[str]]:
    """{partition: [preset]} of the methods with no pick there (every continued cell diverged), so no final run."""
    picks = continuation_choices(runs)
    return {config_partition(p): sorted(g["preset"]) for p, g in picks[picks["lr"].isna()].groupby("partition")}


def summary(runs: pd.DataFrame, lb: dict) -> pd.DataFrame:
    """leaderboard.ranking.summarise of the final runs under the config's declared statistics (`lb`: the
    leaderboard section), the methods with no pick included, with each preset's `label`, in the config's
    partition order."""
    s = summarise(stage_frame(runs), unstable(runs), lb.get("statistics"), list(lb["partitions"]))
    return s.assign(label=s["preset"].map(method_label))


def twins(runs: pd.DataFrame) -> list[dict]:
    """Per (partition, SAM-type preset) with rho = 0 twin runs: {partition, preset, label, pick, twin: {seed:
    accuracy}, same_as}: the pick's final seeds and the twin's (the same seeds, test split), as
    leaderboard.ranking.ablation pairs them; `same_as`: the preset the twin is by an exact reduction, or ""."""
    abl = stage_runs(runs, "ablation")
    if abl.empty:
        return []
    fin = seed_accuracies(stage_frame(runs))
    params = {(config_partition(r.partition), r.preset): r.params for r in abl.itertuples()}
    return [{"partition": part, "preset": preset, "label": method_label(preset), "pick": fin.get((part, preset), {}),
             "twin": twin, "same_as": (rho0_base(preset, params[(part, preset)]) or ("",))[0]}
            for (part, preset), twin in sorted(seed_accuracies(stage_frame(runs, "ablation")).items())]


def _grid_frame(sub: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Records as report.grids.grid_scores lays out a grid (method = preset, row = the settings as JSON,
    value = lr, acc NaN unless the run completed), so the pages apply the checkpoints' own selection rule."""
    return pd.DataFrame({"method": sub["preset"].to_numpy(),
                         "row": sub["hparams"].map(lambda h: json.dumps(json.loads(h), sort_keys=True)).to_numpy(),
                         "value": sub["lr"].astype(float).to_numpy(), "seed": sub["seed"].to_numpy(),
                         "acc": sub[metric].astype(float).where(sub["status"] == "completed").to_numpy()})


def continuation_choices(runs: pd.DataFrame, metric: str = "last10_acc") -> pd.DataFrame:
    """Per (partition, preset): the pick of the v2 choice, its best full-horizon validation cell among the
    continued ones by the choice checkpoint's own rule (report.grids.cell_means and ranked_cells: the mean over
    the continuation seeds, a cell with a diverged seed never picked; ties: the earlier cell, then the smaller
    lr), with `continued` (cells run) and `diverged` (cells with a diverged seed). A method whose every
    continued cell diverged has lr NaN: it is left out of the final runs."""
    out = []
    for (part, preset), sub in stage_runs(runs, "continuation").groupby(["partition", "preset"], sort=True):
        means = cell_means(_grid_frame(sub, metric))
        best = next(iter(ranked_cells(means.unstack("value")).get(preset, [])), None)
        out.append({"partition": part, "preset": preset, "label": method_label(preset),
                    "lr": float(best[1]) if best else float("nan"), "params": json.loads(best[0]) if best else {},
                    "score": float(best[2]) if best else float("nan"),
                    "continued": len(means), "diverged": int(means.isna().sum())})
    return pd.DataFrame(out, columns=["partition", "preset", "label", "lr", "params", "score", "continued", "diverged"])


def rho0_picks(runs: pd.DataFrame, metric: str = "last10_acc") -> pd.DataFrame:
    """The picks (continuation_choices) of a radius grid at rho = 0: the validation choice switched the ascent off,
    so the method has no twin to run, and `same_as` names the preset it then computes exactly (RHO0), or ""."""
    picks = continuation_choices(runs, metric)
    at0 = picks[picks["params"].map(lambda p: "rho" in p and float(p["rho"]) == 0.0)].copy()
    at0["same_as"] = [(rho0_base(r.preset, r.params) or ("",))[0] for r in at0.itertuples()]
    return at0.reset_index(drop=True)


def flatness_accuracy(runs: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard table's flatness-vs-accuracy correlations (leaderboard.flatness.flatness_correlations, the
    same function) from the evidence: per partition, Spearman's rho of lambda_max and of the flatness distance
    against final accuracy (all three means over the completed seeds), over all methods and over the methods at
    the most common picked lr, each with its bootstrap interval over methods."""
    r = stage_runs(runs, "final")
    rows, chosen = [], {}
    for (part, preset), g in r.groupby(["partition", "preset"], sort=True):
        ok = g[g["status"] == "completed"]  # no completed seed: the mean of none is NaN
        rows.append({"partition": config_partition(part), "method": preset,
                     **{k: float(ok[c].astype(float).mean()) for k, c in
                        (("final_acc", "final_acc"), ("lambda_max", "lambda_max"), ("flatness", "flatness_mean"))}})
        chosen.setdefault(config_partition(part), {})[preset] = {"lr": float(g["lr"].iloc[0])}
    agg = pd.DataFrame(rows, columns=["partition", "method", "final_acc", "lambda_max", "flatness"])
    return flatness_correlations(agg, chosen, sorted(chosen))


def picks_against_screen(runs: pd.DataFrame, lb: dict) -> pd.DataFrame:
    """Per (partition, preset) pick of the continuation: `screen_pick`, whether it is the 50-round screen's best
    cell (the same lr and tuned keys), i.e. the cell a short-horizon, one-partition rule would have chosen from
    the same grid. A method with no stable setting there has screen_pick False. `lb`: the leaderboard config."""
    grids = lb["methods"]

    def key(lr, params, preset):
        return lr, json.dumps({k: params.get(k) for k in sorted(grids.get(preset, {}))})

    screen = {r.preset: key(r.lr, r.params, r.preset) for r in screen_choices(
        runs, grids, lb["tuning"]["lr"], lb["tuning"]["lr_only"], lb["tuning"].get("metric", "last10_acc")).itertuples()}
    picks = continuation_choices(runs, lb["tuning"].get("metric", "last10_acc"))
    kept = [not np.isnan(r.lr) and screen.get(r.preset) == key(r.lr, r.params, r.preset) for r in picks.itertuples()]
    return picks.assign(screen_pick=kept)


def reduction_pairs(runs: pd.DataFrame, stage: str = "screen", base_stage: str | None = None,
                    metric: str = "last10_acc") -> pd.DataFrame:
    """Every pair of runs that an exact rho = 0 reduction (algorithms.reductions.RHO0) says compute the same thing:
    a SAM-type preset's rho = 0 run of `stage` and its base preset's run of `base_stage` (default: the same stage)
    on the same partition and seed, at the same lr and shared keys. Per pair: both statuses, the difference of
    their `metric` (NaN unless both completed), and whether the same code ran both (commit and backend)."""
    r = stage_runs(runs, base_stage or stage)
    out = []
    for a in stage_runs(runs, stage).itertuples():
        rb = rho0_base(a.preset, a.params)
        if rb is None:
            continue
        base, shared = rb
        m = r[(r["preset"] == base) & (r["partition"] == a.partition) & (r["lr"].astype(float) == float(a.lr))
              & (r["seed"].astype(int) == int(a.seed))]
        for b in m[m["params"].map(lambda p: all(p.get(k) == v for k, v in shared.items()))].itertuples():
            both = a.status == b.status == "completed"
            out.append({"preset": a.preset, "base": base, "partition": a.partition, "lr": float(a.lr),
                        "status": a.status, "base_status": b.status,
                        "delta": float(getattr(a, metric)) - float(getattr(b, metric)) if both else float("nan"),
                        # the same code: the commit that ran each, and the local step (fused compiled or eager)
                        "same_code": getattr(a, "git_commit", None) == getattr(b, "git_commit", None)
                        and getattr(a, "backend", None) == getattr(b, "backend", None)})
    return pd.DataFrame(out, columns=["preset", "base", "partition", "lr", "status", "base_status", "delta",
                                      "same_code"])


def all_reduction_pairs(runs: pd.DataFrame) -> pd.DataFrame:
    """Every pair of runs an exact reduction says compute the same thing, with `stage`: the screen's pairs (on
    validation), the rho = 0 twins against their base method's final runs and the finals seed by seed (both on
    the test split, final_acc)."""
    out = [reduction_pairs(runs).assign(stage="screen"),
           reduction_pairs(runs, "ablation", "final", metric="final_acc").assign(stage="ablation"),
           reduction_pairs(runs, "final", metric="final_acc").assign(stage="final")]
    return pd.concat([o for o in out if len(o)] or out[:1], ignore_index=True)

